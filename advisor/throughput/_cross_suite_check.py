"""How far the cross-suite anchoring rule misses, measured where it can be checked.

A cross-suite anchor (``advisor.throughput._published_anchor``) claims that a part's stack
factor, its published figure over the harness prediction of it, is the mean factor of the
parts with reference rows that published the same workload in the same stack kind at the same
arithmetic. Two kinds of part let that claim be checked against what it would have predicted,
each prediction held out from the figure it is judged by:

1. every part ``P`` with reference rows in such a group of two or more: the rule's log harness
   prediction of ``P`` (its figure over the *other* reference parts' mean factor) against the
   model's own harness prediction of ``P`` from its reference rows, i.e. ``log f(P)`` minus the
   others' mean ``log f``;
2. every part with same-suite anchors that also published, in suites where no reference part
   did, a workload that reference parts published in that stack kind and arithmetic (first-gen
   Gaudi's Habana ResNet-50 table beside NVIDIA's DLE rows): the rule's log harness prediction
   from that figure alone against the one its same-suite anchors of the same workload and
   precision class give (their ratio carried to the harness by the anchor's stack factor,
   ``advisor.throughput._stack_factor``).

All harness predictions are the model's of the user's step, as the anchoring's own are, and
only at the precision class the step runs at. The errors come in groups that are not
exchangeable inside (in a group of two reference parts the two errors are each other's
negatives): group (1) by workload, stack kind and arithmetic, group (2) by part, and
``grouped_conformal_half_width`` weighs each group one.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Collection

from advisor.throughput._published_anchor import CrossFigures, arithmetic_precision
from advisor.throughput._stack_factor import Harness

__all__ = ["SameSuite", "cross_suite_errors"]

# (part, workload, precision class, harness) -> the log harness prediction of the part that its
# same-suite anchors of that workload and class give; None where it has none
SameSuite = Callable[[str, str, str, Harness], float | None]


def cross_suite_errors(figures: CrossFigures, reference_parts: Collection[str],
                       harness: Harness, same_suite: SameSuite, *, precision: str
                       ) -> dict[str, list[float]]:
    """The held-out log errors of the cross-suite rule (see the module) at the precision class
    ``precision``, grouped: ``workload/stack/arithmetic`` for the reference parts, the part's
    name for a part judged against its same-suite anchors. Empty where nothing checks it."""
    errors: dict[str, list[float]] = defaultdict(list)
    for (workload, stack, math_kind), by_part in figures.items():
        kind, _ = arithmetic_precision(math_kind)
        if kind != precision:
            continue
        factors: dict[str, float] = {}
        for part in sorted(by_part):
            base = harness(part, kind) if part in reference_parts else None
            if base is not None:
                factors[part] = statistics.fmean(by_part[part].values()) - base
        if len(factors) >= 2:
            for part, own in factors.items():
                others = statistics.fmean(f for p, f in factors.items() if p != part)
                errors[f"{workload}/{stack.value}/{math_kind}"].append(own - others)
        for part in sorted(set(by_part) - set(reference_parts)):
            shared = {s for p in factors for s in by_part[p]}
            alone = [v for s, v in by_part[part].items() if s not in shared]
            judged = same_suite(part, workload, kind, harness)
            if alone and factors and judged is not None:
                crossed = statistics.fmean(alone) - statistics.fmean(factors.values())
                errors[part].append(crossed - judged)
    return dict(errors)
