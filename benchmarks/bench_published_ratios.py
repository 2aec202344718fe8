"""Published per-chip throughput ratios against the current no-probe model (issue 27).

For ResNet-50 (ImageNet, the built-in example at bf16, batch 256) and BERT-large (the BERT-base
example made large: hidden 1024, 24 layers, 16 heads, sequence 512, batch 32), every
accelerator with a published figure (``advisor/data/published_training.csv``) gets its
published per-chip ratio to an anchor measured in the same suite and stack (chained through
shared accelerators where no suite holds both; see ``advisor.throughput.published``) next to
the ratio the model ``recommend`` uses predicts with no probe (``default_throughput_model``:
the cached transfer model with the roofline prior), and the error of the prediction. The
family-order check lists, within each vendor, the pairs whose published order the model
gets backwards. Published figures ran tuned stacks (MLPerf, NVIDIA DLE); the model predicts
the harness's PyTorch step; only ratios are compared.

Run: python benchmarks/bench_published_ratios.py   (writes benchmarks/results/published_ratios.md)
"""

from __future__ import annotations

import sys
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_result  # noqa: E402

from advisor.profiling import op_mix_for_spec, profile_workload  # noqa: E402
from advisor.ranking import workload_features  # noqa: E402
from advisor.spec import WorkloadSpec, load_workload_spec  # noqa: E402
from advisor.throughput import WorkloadFeatures, cached_transfer_model  # noqa: E402
from advisor.throughput.published import (  # noqa: E402
    PublishedRatio,
    Stack,
    load_published,
    relative_throughput,
)
from pricing import AcceleratorSpec, load_accelerators  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.25  # issue 27: within 25% for at least 80% of accelerators with a published figure


class Table(NamedTuple):
    """One comparison: a model workload against one published workload, stack and anchor."""

    label: str
    spec: str
    published: str
    stack: Stack
    anchor: str


TABLES = [
    Table("ResNet-50, MLPerf", "resnet50", "resnet50", Stack.MLPERF_TUNED, "H100-SXM"),
    Table("ResNet-50, vendor references (NVIDIA DLE, Habana, RiseML)", "resnet50", "resnet50",
          Stack.VENDOR_TUNED, "A100-80GB-SXM"),
    Table("BERT-large, MLPerf (seq 512)", "bert_large", "bert_large_mlperf",
          Stack.MLPERF_TUNED, "H100-SXM"),
    Table("BERT-large phase 2, NVIDIA DLE (seq 512)", "bert_large",
          "bert_large_pretrain_phase2", Stack.VENDOR_TUNED, "A100-80GB-SXM"),
]


def _spec(name: str) -> WorkloadSpec:
    if name == "resnet50":
        return load_workload_spec(ROOT / "examples" / "resnet50.yaml")
    base = load_workload_spec(ROOT / "examples" / "bert.yaml")
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


def run_table(table: Table, features: WorkloadFeatures) -> tuple[list[str], int, int]:
    """Markdown lines for one table; with the count within ``TARGET`` and the count compared."""
    specs = load_accelerators()
    model = cached_transfer_model(specs)
    published = relative_throughput(load_published(), workload=table.published,
                                    stack=table.stack, anchor=table.anchor)
    base = model.predict(features, specs[table.anchor]).samples_per_second
    predicted = {name: model.predict(features, specs[name]).samples_per_second / base
                 for name in published}
    lines = [f"### {table.label}: anchor {table.anchor}", "",
             "| accelerator | published ratio | suites (path) | predicted ratio | error | "
             "within 25% |", "|---|---|---|---|---|---|"]
    within = compared = 0
    for name in sorted(published, key=lambda n: -published[n].ratio):
        ratio = published[name]
        if name == table.anchor:
            continue
        error = predicted[name] / ratio.ratio - 1
        compared += 1
        within += abs(error) <= TARGET
        path = " via " + " > ".join(ratio.via) if ratio.via else ""
        suites = ", ".join(s.removeprefix("mlperf_training_") for s in ratio.suites)
        lines.append(f"| {name} | {ratio.ratio:.2f} | {suites}{path} | {predicted[name]:.2f} "
                     f"| {error:+.0%} | {'yes' if abs(error) <= TARGET else 'no'} |")
    misses = _order_misses(published, predicted, specs)
    lines += ["", f"Within 25%: {within} of {compared}. Family order (same vendor) the model "
              "gets backwards: " + ("; ".join(misses) if misses else "none") + ".", ""]
    return lines, within, compared


def main() -> None:
    """Compare every table and write ``benchmarks/results/published_ratios.md``."""
    features = {name: _features(name) for name in {t.spec for t in TABLES}}
    body: list[str] = []
    total_within = total = 0
    for table in TABLES:
        lines, within, compared = run_table(table, features[table.spec])
        body += lines
        total_within += within
        total += compared
    lines = ["# Published per-chip ratios vs the no-probe model (issue 27)", "",
             "Command: `python benchmarks/bench_published_ratios.py`", "",
             "Published ratio: per-chip samples/s over the anchor's, inside one suite (one "
             "MLPerf round, one README) and stack, geometric mean over suites; 'via' chains "
             "through accelerators measured beside both. Predicted ratio: "
             "`default_throughput_model` (no probe) at the examples' configs: ResNet-50 bf16 "
             "batch 256; BERT-large (hidden 1024, 24 layers, seq 512) bf16 batch 32. "
             "Error = predicted / published - 1.", "", *body,
             f"**Overall: {total_within} of {total} comparisons within 25% "
             f"(target: 80%).**", ""]
    write_result("published_ratios", "\n".join(lines))


if __name__ == "__main__":
    main()
