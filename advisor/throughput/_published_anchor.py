"""Published per-chip ratios to a part with reference rows: the anchors of the no-probe model.

An accelerator the reference table never measured (H200, B200, L40S, A10G, TPUs, Gaudi) is
predicted as a part that has reference rows (the *anchor*) times the per-chip ratio published
for the two side by side: in one suite (one MLPerf round, one vendor table) and one stack, so
that both ran the same software. ``published_anchors`` finds those pairs in the rows of
``advisor/data/published_training.csv``; ``published_spread`` measures how much one pair's
ratio moves between suites and stacks (what a ratio carries over to another stack at most).

Same-suite ratios first (no chaining: a chain multiplies its links' errors). A part with no
same-suite ratio at all but figures in a stack kind where parts with reference rows published
the same workload (Trainium1's Neuron BERT-large phase 1 table, K80 and P100 in the 2017
TensorFlow benchmarks, beside NVIDIA's DLE tables) gets *cross-suite* anchors: its pooled
figure over each such reference part's pooled figure in that stack kind, marked
``cross_suite``; its own stack factor is taken as its anchors' mean
(``advisor.throughput._stack_factor``; TF32 rows are not set beside fp32 ones), so the figure
says what the part does under a comparably tuned stack, not what one suite measured beside it.
Both sides at the precision the user's step runs at (``mixed``: bf16/fp16; ``fp32``:
fp32/TF32);
an 8-bit row (fp8 on Hopper, Blackwell and Gaudi2; int8 AQT matmuls on TPUs) stands in for
``mixed``, and a ratio of an 8-bit run to a bf16/fp16 one is marked inexact (8-bit matmuls
run about twice as fast as bf16 on every such part; two 8-bit runs make an exact ratio).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from advisor.throughput.published import PublishedRow, Stack
from advisor.throughput.reference import REFERENCE_CONV_FLOPS_FRACTION

__all__ = ["PUBLISHED_CONV_FLOPS_FRACTION", "CrossFigures", "Figures", "PublishedAnchor",
           "arithmetic_precision", "cross_suite_figures", "precision_class", "precision_group",
           "published_anchors", "published_figures", "published_spread"]

# Share of training FLOPs in convolutions of each published workload: which kind of user
# workload (convolutional or attention) its ratio speaks for. BERT and GPT have none.
PUBLISHED_CONV_FLOPS_FRACTION: dict[str, float] = {
    "resnet50": REFERENCE_CONV_FLOPS_FRACTION["resnet50"],
    # RetinaNet (MLPerf's 'ssd' benchmark): a ResNeXt-50 backbone, FPN and convolutional
    # heads, all convolution like the reference SSD
    "retinanet_mlperf": REFERENCE_CONV_FLOPS_FRACTION["ssd"],
    "bert_large_mlperf": 0.0,
    "bert_large_pretrain_phase1": 0.0,
    "bert_large_pretrain_phase2": 0.0,
    "bert_large_squad": 0.0,
    "bert_base_pretrain_hf": 0.0,
    "gpt3_175b_mlperf": 0.0,
}

_CLASS = {"bf16": "mixed", "fp16": "mixed", "mixed": "mixed", "fp8": "8bit", "int8": "8bit",
          "fp32": "fp32", "tf32": "fp32"}
_GROUP = {"bf16": "mixed", "fp16": "mixed", "mixed": "mixed", "fp8": "fp8", "int8": "int8",
          "fp32": "fp32", "tf32": "fp32"}
_STACK_TEXT = {Stack.MLPERF_TUNED: "MLPerf-tuned", Stack.VENDOR_TUNED: "vendor-tuned",
               Stack.PYTORCH_EAGER: "PyTorch eager", Stack.XLA: "XLA"}


def precision_class(precision: str) -> str | None:
    """``mixed``, ``8bit`` (fp8 or int8 matmuls) or ``fp32`` for a published row's precision;
    None when unknown."""
    return _CLASS.get(precision.lower())


def precision_group(precision: str) -> str | None:
    """``mixed`` (bf16/fp16), ``fp8`` (Transformer Engine), ``int8`` (AQT on TPUs) or
    ``fp32`` for a published row's precision: what its stack factor depends on (fp8 and int8
    buy different speed-ups over bf16); None when unknown."""
    return _GROUP.get(precision.lower())


@dataclass(frozen=True, slots=True)
class PublishedAnchor:
    """``accelerator``'s per-chip throughput over ``anchor``'s on the published ``workload``,
    both run in ``suites`` under ``stack`` at ``precision`` (``mixed`` or ``fp32``).

    ``log_ratio`` is the mean over the suites of log(accelerator / anchor); ``exact`` is False
    when one side ran 8-bit matmuls (fp8, int8) and the other bf16/fp16; ``frameworks`` are
    the accelerator's rows'; ``groups`` are, per suite, the ``precision_group`` the
    accelerator's rows and the anchor's ran at. ``cross_suite``: the two were never measured
    in one suite; ``log_ratio`` is of their figures pooled over the suites of ``stack`` (the
    accelerator's suites first in ``suites``, then the anchor's).
    """

    accelerator: str
    anchor: str
    workload: str
    stack: Stack
    precision: str
    log_ratio: float
    suites: tuple[str, ...]
    frameworks: tuple[str, ...]
    exact: bool
    groups: tuple[tuple[str, str], ...] = ()
    cross_suite: bool = False

    @property
    def conv_flops_fraction(self) -> float:
        """The published workload's convolution share of FLOPs."""
        return PUBLISHED_CONV_FLOPS_FRACTION[self.workload]

    def describe(self) -> str:
        """One phrase: the ratio, the workload, the suites and the stack it came from."""
        suites = ", ".join(s.replace("mlperf_training_", "MLPerf Training ") for s in self.suites)
        fp8 = "" if self.exact else "; 8-bit (fp8/int8) matmuls on one side only"
        apart = ("; not measured in one suite: the same workload in that stack kind, its "
                 "speed-up from the stack taken as its anchors' mean" if self.cross_suite else "")
        return (f"{self.workload} {math.exp(self.log_ratio):.2f}x {self.anchor} per chip "
                f"({suites}; {_STACK_TEXT[self.stack]} stack: {self.frameworks[0]}{fp8}"
                f"{apart})")


# (workload, stack, suite) -> accelerator -> precision class -> (precision group, log samples/s
# per chip) of each row
_Groups = dict[tuple[str, Stack, str], dict[str, dict[str, list[tuple[str, float]]]]]


def _groups(rows: Iterable[PublishedRow]
            ) -> tuple[_Groups, dict[tuple[str, str, str], str]]:
    groups: _Groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    frameworks: dict[tuple[str, str, str], str] = {}
    for row in rows:
        kind, group = precision_class(row.precision), precision_group(row.precision)
        if kind is None or group is None or row.workload not in PUBLISHED_CONV_FLOPS_FRACTION:
            continue
        groups[(row.workload, row.stack, row.suite)][row.accelerator][kind].append(
            (group, math.log(row.samples_per_second_per_chip)))
        frameworks.setdefault((row.accelerator, row.suite, row.workload), row.framework)
    return groups, frameworks


def _side(classes: dict[str, list[tuple[str, float]]], precision: str
          ) -> tuple[float, bool, str] | None:
    """Mean log figure of one accelerator at ``precision`` (8-bit standing in for mixed),
    whether it is at that class, and the precision group most of its rows ran at."""
    if precision in classes:
        figures, exact = classes[precision], True
    elif precision == "mixed" and "8bit" in classes:
        figures, exact = classes["8bit"], False
    else:
        return None
    group = statistics.mode(sorted(g for g, _ in figures))
    return statistics.fmean(v for _, v in figures), exact, group


def published_anchors(rows: Sequence[PublishedRow], reference_parts: Collection[str]
                      ) -> dict[str, tuple[PublishedAnchor, ...]]:
    """Per accelerator outside ``reference_parts``: its same-suite ratios to those inside.

    Where a pair was measured at the same precision class in some suites and across classes
    (8-bit beside bf16) in others, only the same-class suites make its ratio."""
    groups, frameworks = _groups(rows)
    found: dict[tuple[str, str, str, Stack, str],
                list[tuple[str, float, bool, tuple[str, str]]]] = defaultdict(list)
    for (workload, stack, suite), by_part in sorted(groups.items(), key=lambda g: g[0][2]):
        anchors = sorted(a for a in by_part if a in reference_parts)
        for target in sorted(a for a in by_part if a not in reference_parts):
            for anchor in anchors:
                for precision in ("mixed", "fp32"):
                    ours, theirs = (_side(by_part[target], precision),
                                    _side(by_part[anchor], precision))
                    if ours is not None and theirs is not None:
                        found[(target, anchor, workload, stack, precision)].append(
                            (suite, ours[0] - theirs[0], ours[1] == theirs[1],
                             (ours[2], theirs[2])))
    result: dict[str, list[PublishedAnchor]] = defaultdict(list)
    for (target, anchor, workload, stack, precision), pairs in sorted(
            found.items(), key=lambda item: (*item[0][:3], item[0][3].value, item[0][4])):
        pairs = [p for p in pairs if p[2]] or pairs  # like-precision suites, where there are any
        suites = tuple(p[0] for p in pairs)
        result[target].append(PublishedAnchor(
            target, anchor, workload, stack, precision,
            statistics.fmean(p[1] for p in pairs), suites,
            tuple(dict.fromkeys(frameworks[(target, s, workload)] for s in suites)),
            all(p[2] for p in pairs), tuple(p[3] for p in pairs)))
    for target, crossed in _cross_suite(rows, frameworks, reference_parts, set(result)):
        result[target].extend(crossed)
    return {name: tuple(anchors) for name, anchors in result.items()}


def _arithmetic(precision: str) -> str | None:
    """A row's precision group, TF32 apart from fp32 (tensor-core math against the harness's
    plain fp32: what a cross-suite pair must share)."""
    return "tf32" if precision.lower() == "tf32" else precision_group(precision)


# (workload, stack, arithmetic) -> accelerator -> suite -> mean log samples/s per chip
CrossFigures = dict[tuple[str, Stack, str], dict[str, dict[str, float]]]


def cross_suite_figures(rows: Iterable[PublishedRow]) -> CrossFigures:
    """Every part's figures per workload, stack kind and arithmetic (``_arithmetic``) at the
    precision classes a cross-suite anchor uses (``mixed``, ``fp32``), per suite: what
    cross-suite anchors are made of, and what ``advisor.throughput._cross_suite_check`` judges
    the rule on."""
    logs: dict[tuple[str, Stack, str], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for row in rows:
        math_kind, kind = _arithmetic(row.precision), precision_class(row.precision)
        if math_kind is None or kind not in ("mixed", "fp32") or (
                row.workload not in PUBLISHED_CONV_FLOPS_FRACTION):
            continue
        logs[(row.workload, row.stack, math_kind)][row.accelerator][row.suite].append(
            math.log(row.samples_per_second_per_chip))
    return {key: {part: {suite: statistics.fmean(v) for suite, v in suites.items()}
                  for part, suites in by_part.items()}
            for key, by_part in sorted(logs.items(),
                                       key=lambda i: (i[0][0], i[0][1].value, i[0][2]))}


def arithmetic_precision(math_kind: str) -> tuple[str, str]:
    """(precision class, precision group) of a cross-suite arithmetic: TF32 is tensor-core
    fp32 (class and group ``fp32``), the rest their own group at ``mixed`` or ``fp32``."""
    group = precision_group(math_kind) or math_kind
    return ("fp32" if group == "fp32" or math_kind == "tf32" else "mixed"), (
        "fp32" if math_kind == "tf32" else group)


def _cross_suite(rows: Iterable[PublishedRow], frameworks: dict[tuple[str, str, str], str],
                 reference_parts: Collection[str], anchored: Collection[str]
                 ) -> list[tuple[str, list[PublishedAnchor]]]:
    """Cross-suite anchors (see the module) of the parts outside ``reference_parts`` and
    ``anchored``: per workload, stack kind and arithmetic (``_arithmetic``), the part's figure
    pooled over its suites (the mean of each suite's mean log) over each reference part's."""
    found: dict[str, list[PublishedAnchor]] = defaultdict(list)
    for (workload, stack, math_kind), by_part in cross_suite_figures(rows).items():
        figures = {part: (statistics.fmean(suites.values()), tuple(sorted(suites)))
                   for part, suites in by_part.items()}
        precision, group = arithmetic_precision(math_kind)
        for target in sorted(p for p in figures if p not in reference_parts
                             and p not in anchored):
            ours, own_suites = figures[target]
            for anchor in sorted(p for p in figures if p in reference_parts):
                theirs, their_suites = figures[anchor]
                found[target].append(PublishedAnchor(
                    target, anchor, workload, stack, precision, ours - theirs,
                    tuple(dict.fromkeys(own_suites + their_suites)),
                    tuple(dict.fromkeys(frameworks[(target, s, workload)] for s in own_suites)),
                    True, ((group, group),), cross_suite=True))
    return sorted(found.items())


# (workload, stack) -> precision group -> accelerator -> mean log samples/s per chip
Figures = dict[tuple[str, Stack], dict[str, dict[str, float]]]


def published_figures(rows: Sequence[PublishedRow]) -> Figures:
    """Each accelerator's published per-chip figure per workload, stack and precision group:
    the mean over the suites of each suite's mean log samples/s (what ``stack_factor`` sets
    against the harness prediction)."""
    groups, _ = _groups(rows)
    per_suite: dict[tuple[str, Stack], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    for (workload, stack, _), by_part in groups.items():
        for part, classes in by_part.items():
            by_group: dict[str, list[float]] = defaultdict(list)
            for figures in classes.values():
                for group, value in figures:
                    by_group[group].append(value)
            for group, values in by_group.items():
                per_suite[(workload, stack)][group][part].append(statistics.fmean(values))
    return {key: {group: {part: statistics.fmean(v) for part, v in parts.items()}
                  for group, parts in by_group.items()}
            for key, by_group in per_suite.items()}


def published_spread(rows: Sequence[PublishedRow], *, floor: float = 0.05) -> float:
    """Pooled standard deviation of one pair's log ratio across the suites (and stacks) that
    measured both at the same precision: how far a published ratio moves with the software.
    At least ``floor``."""
    groups, _ = _groups(rows)
    pairs: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for (workload, _, _), by_part in groups.items():
        parts = sorted(by_part)
        for i, first in enumerate(parts):
            for second in parts[i + 1:]:
                for precision in ("mixed", "fp32"):
                    a = by_part[first].get(precision)
                    b = by_part[second].get(precision)
                    if a and b:
                        pairs[(first, second, workload, precision)].append(
                            statistics.fmean(v for _, v in a)
                            - statistics.fmean(v for _, v in b))
    squares = dof = 0.0
    for values in pairs.values():
        if len(values) >= 2:
            mean = statistics.fmean(values)
            squares += sum((v - mean) ** 2 for v in values)
            dof += len(values) - 1
    return max(floor, math.sqrt(squares / dof) if dof else floor)
