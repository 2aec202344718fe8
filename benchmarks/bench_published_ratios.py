"""Published per-chip throughput ratios against the no-probe model (issue 27), held out.

For ResNet-50 (ImageNet, the built-in example at bf16, batch 256), BERT-large (the BERT-base
example made large: hidden 1024, 24 layers, 16 heads, sequence 512, batch 32), BERT-base
pre-training under a plain Hugging Face loop (the BERT-base example at sequence 512, batch 32)
and GPT-3 175B (against the GPT-2 example, the transformer the catalog's users train), every
accelerator with a published figure (``advisor/data/published_training.csv``) gets its
published per-chip ratio to an anchor measured in the same suite, stack and precision class
(chained through shared accelerators where no suite holds both; see
``advisor.throughput.published``) next to the ratio the model ``recommend`` uses predicts
with no probe (``cached_transfer_model``: the transfer model with the roofline prior,
anchored to the published figures):

- in-sample: the model as shipped, anchored to every published row (an accelerator with rows
  of its own mostly reproduces them: this checks the anchoring, not the model);
- held-out: leave one accelerator out: the same model anchored to every published row except
  the judged accelerator's (``TransferModel.anchor_to``), so its figure comes from its
  datasheet roofline corrected by its vendor peers' published runs. Parts with reference rows
  do not use published rows: both columns are the same for them.

Per accelerator, a part counts when it is within 25% in every table it appears in: over the
whole bench, and over issue 27's own scope (the ResNet-50 and BERT-large tables; the BERT-base
Hugging Face, GPT-3 and 2017 TensorFlow tables are the bench's own, stricter). The system-size
section counts again with each published system's N-chip scaling efficiency taken out
(``_system_size``). The family-order check lists, within each vendor, the pairs whose
published order the held-out model gets backwards. Published figures ran tuned stacks
(MLPerf, NVIDIA DLE); the model predicts the harness's PyTorch step; only ratios are compared.
Last, the H200/H100 ratio on the three built-in examples against the probe harness's
measurements on real H200 and H100 (issue 27: ResNet-50 1.10, GPT-2 small 1.08, BERT-base MLM
1.12; target within 10%).

Run: python benchmarks/bench_published_ratios.py   (writes benchmarks/results/published_ratios.md)
"""

from __future__ import annotations

import copy
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).parent))
from _published_notes import NOTES  # noqa: E402
from _system_size import system_size_lines  # noqa: E402
from _table import write_result  # noqa: E402

from advisor.profiling import op_mix_for_spec, profile_workload  # noqa: E402
from advisor.ranking import workload_features  # noqa: E402
from advisor.spec import Precision, WorkloadSpec, load_workload_spec  # noqa: E402
from advisor.throughput import TransferModel, WorkloadFeatures, cached_transfer_model  # noqa: E402
from advisor.throughput.estimate import as_fp16, precision_key  # noqa: E402
from advisor.throughput.published import (  # noqa: E402
    PublishedRatio,
    PublishedRow,
    Stack,
    load_published,
    relative_throughput,
)
from pricing import AcceleratorSpec, load_accelerators  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.25  # issue 27: within 25% for at least 80% of accelerators with a published figure
HALF = ("bf16", "fp16", "mixed")  # bf16/fp16 submissions: the precision of the predicted step
EIGHT_BIT = ("fp8", "int8")  # Transformer Engine fp8 (H100, H200, B200, Gaudi2), int8 AQT (TPUs)
# issue 27: probe harness, real H200 vs real H100, same steps (builtins-h100-h200.md)
H200_MEASURED = {"resnet50": 2423 / 2205, "gpt2": 245 / 227, "bert": 2979 / 2654}


class Table(NamedTuple):
    """One comparison: a model workload against one published workload, stack, anchor and
    precision class (ratios only between submissions of the same class: like with like)."""

    label: str
    spec: str
    published: str
    stack: Stack
    anchor: str
    precisions: tuple[str, ...] = HALF
    issue: bool = True  # in issue 27's own scope (ResNet-50 and BERT-large tables)


TABLES = [
    Table("ResNet-50, MLPerf (fp16/bf16)", "resnet50", "resnet50", Stack.MLPERF_TUNED,
          "H100-SXM"),
    Table("ResNet-50, vendor references (NVIDIA DLE, Habana, RiseML; fp16/bf16)", "resnet50",
          "resnet50", Stack.VENDOR_TUNED, "A100-80GB-SXM"),
    Table("BERT-large, MLPerf (seq 512), fp16/bf16 submissions", "bert_large",
          "bert_large_mlperf", Stack.MLPERF_TUNED, "A100-80GB-SXM"),
    Table("BERT-large, MLPerf (seq 512), fp8 submissions (Transformer Engine)", "bert_large",
          "bert_large_mlperf", Stack.MLPERF_TUNED, "H100-SXM", EIGHT_BIT),
    Table("BERT-large phase 2, NVIDIA DLE (seq 512; fp16)", "bert_large",
          "bert_large_pretrain_phase2", Stack.VENDOR_TUNED, "A100-80GB-SXM"),
    Table("BERT-base pre-training, Hugging Face Trainer / Optimum Habana (seq 512; bf16 HPUs, "
          "fp16 A100)", "bert_base_512", "bert_base_pretrain_hf", Stack.PYTORCH_EAGER,
          "A100-80GB-SXM", issue=False),
    Table("GPT-3 175B, MLPerf (vs the GPT-2 example), 8-bit submissions (fp8 GPUs and Gaudi2, "
          "int8 TPUs)", "gpt2", "gpt3_175b_mlperf", Stack.MLPERF_TUNED, "H100-SXM", EIGHT_BIT,
          issue=False),
    Table("RetinaNet, MLPerf (vs the ResNet-50 example; fp16)", "resnet50", "retinanet_mlperf",
          Stack.MLPERF_TUNED, "H100-SXM", issue=False),
    Table("ResNet-50, 2017 TensorFlow benchmarks (tf_cnn_benchmarks, fp32; no part with "
          "reference rows: both sides cross-suite anchored)", "resnet50_fp32", "resnet50",
          Stack.VENDOR_TUNED, "P100", ("fp32",), issue=False),
]


def _spec(name: str) -> WorkloadSpec:
    if name in ("resnet50", "gpt2", "bert"):
        return load_workload_spec(ROOT / "examples" / f"{name}.yaml")
    if name == "resnet50_fp32":  # the ResNet-50 example as the 2017 TensorFlow rows ran it
        return replace(load_workload_spec(ROOT / "examples" / "resnet50.yaml"),
                       precision=Precision.FP32)
    base = load_workload_spec(ROOT / "examples" / "bert.yaml")
    if name == "bert_base_512":  # the BERT-base example at the published run's sequence 512
        options = {**base.model.options, "seq_len": 512}
        return replace(base, name="bert-base-mlm-512", model=replace(base.model, options=options),
                       batch_size=32)
    options = {**base.model.options, "hidden": 1024, "layers": 24, "heads": 16, "seq_len": 512}
    return replace(base, name="bert-large-mlm", model=replace(base.model, options=options),
                   batch_size=32)


def _features(name: str) -> WorkloadFeatures:
    spec = _spec(name)
    return workload_features(spec, profile_workload(spec), op_mix_for_spec(spec))


def _order_misses(published: dict[str, PublishedRatio], predicted: dict[str, float],
                  specs: dict[str, AcceleratorSpec]) -> list[str]:
    misses = []
    for a, b in combinations(sorted(published), 2):
        if specs[a].vendor != specs[b].vendor:
            continue
        said = published[a].ratio > published[b].ratio
        if said != (predicted[a] > predicted[b]):
            fast, slow = (a, b) if said else (b, a)
            misses.append(f"{fast} > {slow}")
    return misses


class Models(NamedTuple):
    """The shipped model and its leave-one-accelerator-out copies."""

    shipped: TransferModel
    rows: tuple[PublishedRow, ...]
    held: dict[str, TransferModel]

    def without(self, name: str) -> TransferModel:
        """The shipped model anchored to every published row but ``name``'s."""
        if name not in self.held:
            self.held[name] = copy.copy(self.shipped).anchor_to(
                [r for r in self.rows if r.accelerator != name])
        return self.held[name]

    def measured(self, name: str) -> bool:
        """Whether ``name`` has reference rows (its prediction rests on them, not on published
        figures: the model has no evidence note for it)."""
        return self.shipped.evidence_note(name) is None


def _as_published(features: WorkloadFeatures, spec: AcceleratorSpec) -> WorkloadFeatures:
    """The step at the precision the part's half-precision submissions ran: fp16 on a part
    with no bf16 (V100, T4), which would run a bf16 step at fp32; else unchanged (bf16 and
    fp16 are the same half-width step on the others). 8-bit submissions are compared as bf16
    steps: their ratio stands in for the half-precision one (8-bit matmuls run at twice the
    bf16 rate on H100, H200, B200, Gaudi2 and the TPUs alike). An fp32 step stays fp32."""
    if features.precision is Precision.FP32 or precision_key(features.precision, spec) == "mixed":
        return features
    return as_fp16(features)


def _ratio(model: TransferModel, features: WorkloadFeatures, specs: dict[str, AcceleratorSpec],
           name: str, anchor: str) -> float:
    return (model.estimate(_as_published(features, specs[name]), specs[name]).samples_per_second
            / model.estimate(_as_published(features, specs[anchor]),
                             specs[anchor]).samples_per_second)


def _group(rows: tuple[PublishedRow, ...], table: Table, name: str) -> str:
    """The precision most of ``name``'s rows in the table ran at (fp8, int8, or half)."""
    found = [r.precision for r in rows if r.accelerator == name and r.workload == table.published
             and r.stack is table.stack and r.precision in table.precisions]
    return statistics.mode(sorted(found)) if found else "bf16"


def _half_width(table: Table, features: WorkloadFeatures, model: TransferModel,
                rows: tuple[PublishedRow, ...], name: str, ratio: float) -> float:
    """The published 8-bit ratio with each side's 8-bit gain over bf16/fp16 taken out, the
    gains as ``model`` measures them (``precision_gain``) from the rows it was anchored to
    (the held-out model's lack the judged part's): a half-width step's ratio (an int8 TPU
    beside an fp8 H100)."""
    ours, theirs = _group(rows, table, name), _group(rows, table, table.anchor)
    return ratio * (model.precision_gain(features, table.stack, theirs)
                    / model.precision_gain(features, table.stack, ours))


def run_table(table: Table, features: WorkloadFeatures, models: Models,
              errors: dict[str, list[tuple[float, float]]],
              half_errors: dict[str, list[tuple[float, float]]], *,
              judged: Sequence[PublishedRow] | None = None
              ) -> tuple[list[str], int, int, int]:
    """Markdown lines for one table; the counts within ``TARGET`` (in-sample, held-out) and
    compared. ``errors`` collects each accelerator's (in-sample, held-out) errors against the
    published ratio, ``half_errors`` against the ratio at half width (8-bit tables: each
    side's 8-bit gain taken out; else the published ratio). The published ratios are of
    ``judged`` (default: the rows the models were anchored to)."""
    specs = load_accelerators()
    published = relative_throughput(models.rows if judged is None else judged,
                                    workload=table.published, stack=table.stack,
                                    anchor=table.anchor, precisions=table.precisions)
    inside = {n: _ratio(models.shipped, features, specs, n, table.anchor) for n in published}
    held = {n: _ratio(models.without(n), features, specs, n, table.anchor) for n in published}
    eight = table.precisions == EIGHT_BIT
    head = ("| accelerator | published ratio | suites (path) | in-sample | error | held-out | "
            "error | held-out within 25% |")
    if eight:
        head += (" at half width (in-sample model / held-out model) | in-sample error | "
                 "held-out error |")
    lines = [f"### {table.label}: anchor {table.anchor}", "", head,
             "|---" * (head.count("|") - 1) + "|"]
    within = within_held = compared = 0
    for name in sorted(published, key=lambda n: -published[n].ratio):
        ratio = published[name]
        if name == table.anchor:
            continue
        error, error_held = inside[name] / ratio.ratio - 1, held[name] / ratio.ratio - 1
        errors.setdefault(name, []).append((error, error_held))
        compared += 1
        within += abs(error) <= TARGET
        within_held += abs(error_held) <= TARGET
        path = " via " + " > ".join(ratio.via) if ratio.via else ""
        suites = ", ".join(s.removeprefix("mlperf_training_") for s in ratio.suites)
        line = (f"| {name} | {ratio.ratio:.2f} | {suites}{path} | {inside[name]:.2f} "
                f"| {error:+.0%} | {held[name]:.2f} | {error_held:+.0%} "
                f"| {'yes' if abs(error_held) <= TARGET else 'no'} |")
        half = (error, error_held)
        if eight:
            ours = _half_width(table, features, models.shipped, models.rows, name, ratio.ratio)
            theirs = _half_width(table, features, models.without(name), models.rows, name,
                                 ratio.ratio)
            half = (inside[name] / ours - 1, held[name] / theirs - 1)
            line += f" {ours:.2f} / {theirs:.2f} | {half[0]:+.0%} | {half[1]:+.0%} |"
        half_errors.setdefault(name, []).append(half)
        lines.append(line)
    def backwards(predicted: dict[str, float]) -> str:
        return "; ".join(_order_misses(published, predicted, specs)) or "none"

    lines += ["", f"Within 25%: in-sample {within} of {compared}, held-out {within_held} of "
              f"{compared}. Family order (same vendor) the in-sample model gets backwards: "
              f"{backwards(inside)}; the held-out model: {backwards(held)}.", ""]
    return lines, within, within_held, compared


def _h200_lines(models: Models, features: dict[str, WorkloadFeatures]) -> list[str]:
    specs = load_accelerators()
    lines = ["### H200 / H100 on the built-in examples (probe harness measurements)", "",
             "| example | measured | in-sample | error | held-out | error |",
             "|---|---|---|---|---|---|"]
    for name, measured in H200_MEASURED.items():
        inside = _ratio(models.shipped, features[name], specs, "H200", "H100-SXM")
        held = _ratio(models.without("H200"), features[name], specs, "H200", "H100-SXM")
        lines.append(f"| {name} | {measured:.2f} | {inside:.2f} | {inside / measured - 1:+.0%} "
                     f"| {held:.2f} | {held / measured - 1:+.0%} |")
    return [*lines, ""]


# a part anchored to tuned-stack ratios beside a reference part on the same die, measured in
# the harness's stack: (anchored part, its twin, what differs on the datasheet)
TWINS = [("L40S", "RTX-6000-Ada", "AD102 both; 864 against 960 GB/s, 362 against 364 TF"),
         ("A10G", "A10", "GA102 both; 600 GB/s both, 70 against 125 TF (A10G's figure recalled)")]


def _twin_lines(models: Models, features: dict[str, WorkloadFeatures]) -> list[str]:
    """Each anchored part's harness prediction next to its same-die twin's, a reference part
    whose rows measure the harness's plain step: what the tuned-stack anchoring's carry-over
    leaves between them."""
    specs = load_accelerators()
    bare = copy.copy(models.shipped).anchor_to([])
    lines = ["### Harness twins: an anchored part against a reference part on the same die", "",
             "Ratios to H100-SXM of the model's harness prediction (no probe). The twin's "
             "prediction is its own reference rows' (Lambda, plain framework step); the "
             "anchored part's is its MLPerf ratio carried to the harness by the stack factors "
             "(a cousin of the H100: its prior kept between the sibling's and the speed "
             "trend's carry, `advisor.throughput._stack_factor`), and 'unanchored' the "
             "roofline the model gives it with nothing published.", "",
             "| workload | anchored part | shipped | unanchored | twin | twin's prediction | "
             "shipped / twin | datasheet |", "|---|---|---|---|---|---|---|---|"]
    for workload in ("resnet50", "bert_large"):
        for part, twin, sheet in TWINS:
            shipped, alone, other = (_ratio(m, features[workload], specs, n, "H100-SXM")
                                     for m, n in ((models.shipped, part), (bare, part),
                                                  (models.shipped, twin)))
            lines.append(f"| {workload} | {part} | {shipped:.3f} | {alone:.3f} | {twin} | "
                         f"{other:.3f} | {shipped / other:.2f} | {sheet} |")
    return [*lines, "", "Before the cousin bracket (the H100's own factor for every NVIDIA "
            "part of its class, until 2026-11-27) the ResNet-50 rows read L40S 0.286 (0.73x "
            "its twin) and A10G 0.133 (0.63x): a tuned stack speeds an H100 up more than these "
            "smaller parts, as it does a V100 (stack factors 2.36 and 1.51 on MLPerf "
            "ResNet-50), so their MLPerf ratios understate what they run of the plain step.",
            ""]


Errors = dict[str, list[tuple[float, float]]]  # accelerator -> (in-sample, held-out) errors


def _counts(errors: Errors) -> tuple[int, int, int]:
    """Accelerators within 25% in every comparison they appear in: in-sample, held-out, of."""
    return (sum(all(abs(e) <= TARGET for e, _ in v) for v in errors.values()),
            sum(all(abs(h) <= TARGET for _, h in v) for v in errors.values()), len(errors))


def _per_accelerator(errors: Errors, label: str = "") -> list[str]:
    """Per accelerator: within 25% in every comparison it appears in."""
    inside, held, total = _counts(errors)
    misses = sorted(n for n, v in errors.items() if not all(abs(h) <= TARGET for _, h in v))
    median = statistics.median(abs(h) for v in errors.values() for _, h in v)
    return [f"**Per accelerator{label} (within 25% in every table it appears in): in-sample "
            f"{inside} of {total}, held-out {held} of {total} (target: 80%).** "
            f"Held-out misses: {', '.join(misses) or 'none'}. Median held-out |error| "
            f"{median:.0%}.", ""]


def _anchored_only(models: Models, errors: Errors) -> Errors:
    """The errors of the parts the anchoring predicts: those with no reference rows (a part
    with them is predicted from its harness-like measurements, and a published ratio judges
    only how far a tuned stack moves it)."""
    return {n: v for n, v in errors.items() if not models.measured(n)}


def _plain_step_lines(models: Models, errors: Errors) -> list[str]:
    """The in-sample misses, each with what measures its plain step where anything does: its
    own reference rows (the harness-like measurements it is predicted from) or a same-die
    twin's (``TWINS``); there a tuned-stack ratio judges a different quantity."""
    twins = {part: twin for part, twin, _ in TWINS}
    misses = sorted(n for n, v in errors.items() if not all(abs(e) <= TARGET for e, _ in v))

    def measured(name: str) -> str:
        if models.measured(name):
            return "its own reference rows"
        return f"its die twin {twins[name]}" if name in twins else "nothing"

    said = [f"{name} ({measured(name)})" for name in misses]
    return [f"In-sample misses and what measures their plain step: {'; '.join(said) or 'none'}.",
            ""]


class Judged(NamedTuple):
    """Every table judged: its lines, the per-comparison counts and, per scope (``whole``:
    every table; ``issue``: issue 27's ResNet-50 and BERT-large tables), the errors against
    the published ratios and against them at half width."""

    lines: list[str]
    within: int
    within_held: int
    compared: int
    errors: dict[str, Errors]
    half_errors: dict[str, Errors]


def judge(models: Models, features: dict[str, WorkloadFeatures], *,
          judged: Sequence[PublishedRow] | None = None) -> Judged:
    """Run every table (published ratios of ``judged``, default the models' rows)."""
    errors: dict[str, Errors] = {"whole": {}, "issue": {}}
    half_errors: dict[str, Errors] = {"whole": {}, "issue": {}}
    body: list[str] = []
    within = within_held = compared = 0
    for table in TABLES:
        found: Errors = {}
        half: Errors = {}
        lines, inside, held, count = run_table(table, features[table.spec], models, found,
                                               half, judged=judged)
        for scope in ("whole", "issue") if table.issue else ("whole",):
            for name, values in found.items():
                errors[scope].setdefault(name, []).extend(values)
            for name, values in half.items():
                half_errors[scope].setdefault(name, []).extend(values)
        body += lines
        within += inside
        within_held += held
        compared += count
    return Judged(body, within, within_held, compared, errors, half_errors)


def _stack_factor_lines(models: Models, features: dict[str, WorkloadFeatures]) -> list[str]:
    """Per stack, workload and precision class: the published per-chip figure over the model's
    prediction of the probe harness's step on the same part, for the parts with reference rows
    (the harness-like measurements the model rests on): what the stack adds, and its spread."""
    specs = load_accelerators()
    lines = ["### Stack factor: published per chip over the harness prediction (reference parts)",
             "", "| stack | workload | precision | parts | factor (geometric mean) | range |",
             "|---|---|---|---|---|---|"]
    for table in TABLES:
        if table.published not in _CROSS_SPEC:  # GPT-3 175B, RetinaNet: no same step
            continue
        per_part: dict[str, list[float]] = {}
        for row in models.rows:
            if (row.workload == table.published and row.stack is table.stack
                    and row.precision in table.precisions and models.measured(row.accelerator)):
                step = _as_published(features[table.spec], specs[row.accelerator])
                predicted = models.shipped.estimate(step, specs[row.accelerator]).samples_per_second
                per_part.setdefault(row.accelerator, []).append(
                    row.samples_per_second_per_chip / predicted)
        if not per_part:
            continue
        factors = {name: statistics.geometric_mean(v) for name, v in per_part.items()}
        parts = ", ".join(f"{n} {f:.2f}" for n, f in sorted(factors.items()))
        lines.append(f"| {table.stack.value} | {table.published} | "
                     f"{'/'.join(table.precisions)} | {parts} | "
                     f"{statistics.geometric_mean(factors.values()):.2f} | "
                     f"{min(factors.values()):.2f}-{max(factors.values()):.2f} |")
    return [*lines, "", "A factor is the tuned stack's speed-up over the harness's plain PyTorch "
            "step on one chip (8-bit rows include what fp8 buys). The anchoring carries each "
            "published ratio P / A to the harness by f(A) / f(P) (`advisor.throughput."
            "_stack_factor`): f(A) measured as here (with the user's step standing in for the "
            "published workload, as in the anchoring's own ratio), f(P) the typical factor: "
            "the geometric mean over the parts with reference rows in the same stack kind "
            "(MLPerf rounds pooled), workload and precision group; a sibling of the anchor "
            "(same vendor, architecture class and generation: H200, H100-NVL beside an H100) "
            "keeps the anchor's factor; a part of the class but another generation (L40S, L4, "
            "A10G beside an H100) keeps its own prior between the sibling's ratio and the "
            "reference parts' speed trend (log f on log harness, pooled within-group slope); "
            "an int8 part beside an fp8 anchor is moved by the two "
            "groups' gains over bf16/fp16 in the stack (fp8: the H100s' fp8 factor over the "
            "A100's fp16 factor on MLPerf BERT; int8: TPU-v5p's int8 over its bf16 on GPT-3). "
            "No constant is fitted to the judged ratios.", "", *NOTES, ""]


# published workload -> the example standing in for it (GPT-3 175B has no same step)
_CROSS_SPEC = {"resnet50": "resnet50", "bert_large_mlperf": "bert_large",
               "bert_large_pretrain_phase1": "bert_large", "bert_large_pretrain_phase2": "bert_large",
               "bert_large_squad": "bert_large", "bert_base_pretrain_hf": "bert_base_512"}


def _row_step(features: dict[str, WorkloadFeatures], row: PublishedRow
              ) -> WorkloadFeatures | None:
    """The example step standing in for a row's workload on its part, at the row's arithmetic
    (fp32 and TF32 rows: the fp32 step; others: half width); None for GPT-3 175B."""
    name = _CROSS_SPEC.get(row.workload)
    if name is None:
        return None
    fp32 = row.precision in ("fp32", "tf32")
    step = features[f"{name}_fp32" if fp32 and name == "resnet50" else name]
    if fp32 and name != "resnet50":
        step = replace(step, precision=Precision.FP32)
    return _as_published(step, load_accelerators()[row.accelerator])


def _factor(models: Models, features: dict[str, WorkloadFeatures], row: PublishedRow) -> float:
    """A row's per-chip figure over the model's harness prediction of the same part (the step
    as ``_row_step`` puts it)."""
    step = _row_step(features, row)
    assert step is not None, row.workload  # only rows of _CROSS_SPEC's workloads come here
    return (row.samples_per_second_per_chip / models.shipped.estimate(
        step, load_accelerators()[row.accelerator]).samples_per_second)


def _system_size_lines(models: Models, features: dict[str, WorkloadFeatures],
                       plain: Judged) -> list[str]:
    """Issue 27's lead 1 (``_system_size.system_size_lines``): the counts with each published
    system's N-chip efficiency taken out of the judged ratios, and of the anchoring's too."""
    def step_of(row: PublishedRow) -> WorkloadFeatures | None:
        return _row_step(features, row)

    def counts(found: Judged) -> list[tuple[int, int, int]]:
        return [_counts(found.errors["whole"]), _counts(found.errors["issue"]),
                _counts(found.half_errors["whole"])]

    def recount(anchored: Sequence[PublishedRow] | None, judged: Sequence[PublishedRow]
                ) -> list[tuple[int, int, int]]:
        if anchored is None:
            return counts(judge(models, features, judged=judged))
        shipped = copy.copy(models.shipped).anchor_to(anchored)
        return counts(judge(Models(shipped, tuple(anchored), {}), features, judged=judged))

    return system_size_lines(models.shipped, models.rows, load_accelerators(),
                             step_of=step_of, plain=counts(plain), recount=recount)


def _cross_suite_lines(models: Models, features: dict[str, WorkloadFeatures]) -> list[str]:
    """The cross-suite anchoring held out: (1) each part with reference rows treated as if it
    had only its published figures: its figure over the mean stack factor of the other
    reference parts of its workload, stack kind and arithmetic, against the model's own
    prediction from its reference rows; (2) first-gen Gaudi anchored by its Habana vendor
    table alone (its MLPerf and Hugging Face rows held out), against those held-out ratios."""
    specs = load_accelerators()
    groups: dict[tuple[str, Stack, str], dict[str, list[float]]] = {}
    for row in models.rows:
        if models.measured(row.accelerator) and row.workload in _CROSS_SPEC:
            arithmetic = "tf32" if row.precision == "tf32" else (
                "8-bit" if row.precision in EIGHT_BIT else
                "fp32" if row.precision == "fp32" else "half")
            groups.setdefault((row.workload, row.stack, arithmetic), {}).setdefault(
                row.accelerator, []).append(_factor(models, features, row))
    lines = ["### Cross-suite anchoring, held out", "",
             "(1) A part with reference rows predicted as a cross-suite anchor would predict it: "
             "its published figure over the mean stack factor of the other reference parts of "
             "the same workload, stack kind and arithmetic; error against the model's own "
             "prediction from its reference rows (= its factor over the others' mean - 1).", "",
             "| workload | stack | arithmetic | part | own factor | others' mean | error |",
             "|---|---|---|---|---|---|---|"]
    judged = within = 0
    for (workload, stack, arithmetic), parts in sorted(groups.items(),
                                                       key=lambda g: (g[0][0], g[0][1].value,
                                                                      g[0][2])):
        if len(parts) < 2:
            continue
        factors = {n: statistics.geometric_mean(v) for n, v in parts.items()}
        for name, own in sorted(factors.items()):
            others = statistics.geometric_mean(f for n, f in factors.items() if n != name)
            error = own / others - 1
            judged += 1
            within += abs(error) <= TARGET
            lines.append(f"| {workload} | {stack.value} | {arithmetic} | {name} | {own:.2f} | "
                         f"{others:.2f} | {error:+.0%} |")
    lines += ["", f"Within 25%: {within} of {judged}.", ""]
    kept = [r for r in models.rows if r.accelerator != "Gaudi"
            or r.suite == "habana_model_performance_1.0.0"]
    alone = copy.copy(models.shipped).anchor_to(kept)
    lines += ["(2) Gaudi anchored by its Habana SynapseAI 1.0.0 ResNet-50 table alone "
              "(vendor-tuned, cross-suite beside NVIDIA DLE's fp16 rows); its other rows held out:",
              "", "| judged against | published ratio | predicted | error | predicted range "
              "(Gaudi's interval over the anchor's figure) | holds it |",
              "|---|---|---|---|---|---|"]
    for label, spec, workload, stack, anchor in (
            ("MLPerf ResNet-50 (v1.0, v1.1, v2.1 via A100-80GB-SXM)", "resnet50", "resnet50",
             Stack.MLPERF_TUNED, "H100-SXM"),
            ("MLPerf BERT-large, fp16/bf16", "bert_large", "bert_large_mlperf",
             Stack.MLPERF_TUNED, "A100-80GB-SXM"),
            ("Hugging Face BERT-base pre-training", "bert_base_512", "bert_base_pretrain_hf",
             Stack.PYTORCH_EAGER, "A100-80GB-SXM")):
        published = relative_throughput(models.rows, workload=workload, stack=stack,
                                        anchor=anchor, precisions=HALF)["Gaudi"].ratio
        predicted = _ratio(alone, features[spec], specs, "Gaudi", anchor)
        gaudi = alone.estimate(_as_published(features[spec], specs["Gaudi"]), specs["Gaudi"])
        low, high = (predicted * gaudi.samples_per_second_low / gaudi.samples_per_second,
                     predicted * gaudi.samples_per_second_high / gaudi.samples_per_second)
        lines.append(f"| {label}, anchor {anchor} | {published:.2f} | {predicted:.2f} | "
                     f"{predicted / published - 1:+.0%} | {low:.2f}-{high:.2f} | "
                     f"{'yes' if low <= published <= high else 'no'} |")
    return [*lines, "", alone.evidence_note("Gaudi") or "", "", *_cross_interval_lines(
        models, features)]


def _cross_interval_lines(models: Models, features: dict[str, WorkloadFeatures]) -> list[str]:
    """The spread a cross-suite-only part's interval carries on each example step
    (``TransferModel.cross_suite_half_width``: the conformal quantile of the rule's held-out
    errors, each group weighing one), and Trainium1's resulting range."""
    specs = load_accelerators()
    lines = ["(3) The spread a part anchored across suites only carries (its interval's "
             "stand-in for the same-suite ratio spread, "
             f"{math.exp(models.shipped.published_spread_) - 1:.0%}): the "
             f"{models.shipped.interval_coverage:.0%} grouped conformal quantile of the "
             "rule's held-out |log errors| (each workload/stack/arithmetic group of reference "
             "parts, and each part judged against its same-suite ratios, weighing one), "
             "on each example's step; Trainium1's range (low / figure, high / figure) with it.",
             "", "| example | errors (groups) | spread | Trainium1 range |", "|---|---|---|---|"]
    for name in ("resnet50", "bert", "gpt2"):
        step = features[name]
        shipped = models.shipped
        errors = shipped.cross_suite_check(step, "mixed")
        half = shipped.cross_suite_half_width(step, "mixed")
        trn = shipped.estimate(step, specs["Trainium1"])
        spread = "none" if half is None else f"x{math.exp(half):.2f}"
        lines.append(f"| {name} | {sum(len(v) for v in errors.values())} ({len(errors)}) | "
                     f"{spread} | x{trn.samples_per_second_low / trn.samples_per_second:.2f} "
                     f"to x{trn.samples_per_second_high / trn.samples_per_second:.2f} |")
    return [*lines, ""]


def main() -> None:
    """Compare every table and write ``benchmarks/results/published_ratios.md``."""
    names = {t.spec for t in TABLES} | set(H200_MEASURED)
    features = {name: _features(name) for name in sorted(names)}
    specs = load_accelerators()
    models = Models(cached_transfer_model(specs), load_published(), {})
    judged = judge(models, features)
    lines = ["# Published per-chip ratios vs the no-probe model (issue 27)", "",
             "Command: `python benchmarks/bench_published_ratios.py`", "",
             "Published ratio: per-chip samples/s over the anchor's, inside one suite (one "
             "MLPerf round, one README), stack and precision class (fp16/bf16 with fp16/bf16, "
             "8-bit with 8-bit: fp8 under Transformer Engine, int8 AQT on TPUs; the precision "
             "of each MLPerf row was read from its submission's config or log, see "
             "`advisor/data/published_training.csv`), geometric mean over suites; 'via' chains "
             "through accelerators measured beside both. Predicted ratio: "
             "`cached_transfer_model` (no probe) at the examples' configs: ResNet-50 bf16 "
             "batch 256; BERT-large (hidden 1024, 24 layers, seq 512) bf16 batch 32; GPT-2 "
             "small bf16 batch 64; BERT-base (the example) at seq 512, bf16 batch 32; a part "
             "with no bf16 (V100) is predicted at fp16, as its submissions ran. In-sample: "
             "anchored to every published row; held-out: "
             "anchored to every published row except the judged accelerator's (leave one "
             "accelerator out). Error = predicted / published - 1.", "", *judged.lines,
             f"**Per comparison: in-sample {judged.within} of {judged.compared}, held-out "
             f"{judged.within_held} of {judged.compared} within 25%.**", "",
             *_per_accelerator(judged.errors["whole"]),
             *_per_accelerator(judged.half_errors["whole"], ", 8-bit ratios at half width"),
             *_per_accelerator(judged.errors["issue"], ", issue 27's own scope (the ResNet-50 "
                               "and BERT-large tables; no 8-bit ratio there needs half width)"),
             *_per_accelerator(_anchored_only(models, judged.errors["issue"]),
                               ", issue 27's scope, the parts predicted from published figures "
                               "(no reference rows: the anchoring's own)"),
             *_plain_step_lines(models, judged.errors["issue"]),
             *_stack_factor_lines(models, features), *_cross_suite_lines(models, features),
             *_system_size_lines(models, features, judged), *_h200_lines(models, features),
             *_twin_lines(models, features)]
    write_result("published_ratios", "\n".join(lines))


if __name__ == "__main__":
    main()
