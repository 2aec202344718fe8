"""The published-anchor half of ``TransferModel``: parts with no reference rows, anchored.

An accelerator with no reference rows but a published per-chip ratio to one that has them
(``advisor.throughput._published_anchor``) is predicted as the model's own prediction for it
(the roofline, or the reference part's transfer) corrected by the gap between the published
log ratio, carried from the suite's tuned stack to the harness, and the model's log ratio for
the same pair:

    log sps(X) = base(X) + trust x (published log(X / A) + log f(A) - log f(X)
                                    - (base(X) - base(A)))

``f`` is a part's stack factor, its published figure over its harness prediction
(``advisor.throughput._stack_factor``: the anchor's own, measured, against the stack's typical
part, with each side's 8-bit gain; a same-generation sibling keeps the anchor's, another
generation of its class is bracketed by the reference parts' speed trend). ``trust`` is 1
when the published workload is of the user's kind (convolution share of FLOPs within
``kind_width``), falling to
``published_cross_kind_weight`` for the other kind (a ResNet-50 ratio speaks for a
transformer only in part: the correction shrinks toward the roofline's own ratio), times
``precision_mismatch_weight`` where a side ran 8-bit matmuls (fp8, int8) and the other
bf16/fp16. The model's own ratio ``base(X) - base(A)`` is taken at the precision class both
published rows ran at: where the user's step would run at another width on the anchor than on
the target (a bf16 step on a V100, which has no bf16, against a TPU), the anchor is priced at
fp16, as its published half-precision rows ran. Several anchors are averaged, weighted by their
trust. A part with nothing published borrows the mean correction of the anchored parts of its
vendor and architecture class (of its generation where any is anchored), each weighted by the
trust of its own anchors for the workload (a peer anchored by a run of the user's kind counts
more than one anchored by the other kind), shrunk by ``published_peer_count`` pseudo-weights
toward none; it stays a prior. Where the part's prior has no per-part correction of its own (no
reference rows of its vendor: TPUs, Gaudi, Trainium), each peer's correction is first carried
to it by the reference parts' size trend (``advisor.throughput._size_trend``): a peer twice its
size reached less of its roofline.

The interval of an anchored part (``published_bounds``) is the anchor part's no-probe error
combined with the ratio's spread: across suites for a same-suite anchor
(``published_spread``); for a part anchored across suites only, the cross-suite rule's own
held-out error on the step (``cross_suite_half_width``, ``advisor.throughput._cross_suite_check``),
with ``1 - w`` of the part's unanchored interval kept where the correction is trusted at ``w``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Self

from advisor.errors import AdvisorError
from advisor.profiling import OpClass
from advisor.spec import Precision
from advisor.throughput._calibration import grouped_conformal_half_width
from advisor.throughput._cross_suite_check import cross_suite_errors
from advisor.throughput._published_anchor import (
    PublishedAnchor,
    cross_suite_figures,
    precision_group,
    published_anchors,
    published_figures,
    published_spread,
)
from advisor.throughput._stack_factor import Harness, StackFactors
from advisor.throughput.estimate import (
    WorkloadFeatures,
    architecture_class,
    as_fp16,
    precision_key,
)
from advisor.throughput.published import PublishedRow, Stack
from pricing import AcceleratorSpec

__all__ = ["PublishedAnchoring"]


class PublishedAnchoring:
    """Mixin of ``TransferModel``: published anchors, their corrections and evidence notes."""

    specs_: dict[str, AcceleratorSpec]
    interval_coverage: float
    kind_width: float
    precision_mismatch_weight: float
    published_cross_kind_weight: float
    published_peer_count: float

    def _reference_parts(self) -> set[str]:
        raise NotImplementedError

    def _reference_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                       probes: Mapping[str, float]) -> tuple[float, str]:
        raise NotImplementedError

    def _size_shift(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                    peer: AcceleratorSpec) -> float:
        raise NotImplementedError

    def _probes_miss(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                     probes: Mapping[str, float]) -> float:
        raise NotImplementedError

    def anchor_to(self, published: Sequence[PublishedRow]) -> Self:
        """Anchor the parts with no reference rows to ``published`` figures (replacing any
        earlier ones; empty: none); returns self. Cheap: the fitted state is kept."""
        parts = self._reference_parts()
        rows = [r for r in published if r.accelerator in self.specs_]
        self.anchors_: dict[str, tuple[PublishedAnchor, ...]] = published_anchors(rows, parts)
        self.published_spread_ = published_spread(rows)
        self.cross_suite_figures_ = cross_suite_figures(rows)
        self.stack_factors_ = StackFactors(published_figures(rows), frozenset(parts))
        self.published_rows_: dict[str, tuple[PublishedRow, ...]] = {
            name: tuple(r for r in rows if r.accelerator == name)
            for name in sorted({r.accelerator for r in rows} - parts)}
        return self

    # -- corrections -------------------------------------------------------------------------

    def _usable(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec
                ) -> list[tuple[PublishedAnchor, WorkloadFeatures]]:
        """The accelerator's anchors published at the precision class its step runs at, each
        with the step as its anchor ran it (``_as_anchored``; anchors it cannot price are
        left out)."""
        ours = precision_key(workload.precision, accelerator)
        usable = []
        for anchor in getattr(self, "anchors_", {}).get(accelerator.name, ()):
            spec = self.specs_.get(anchor.anchor)
            step = None if spec is None else _as_anchored(workload, spec, ours)
            if anchor.precision == ours and step is not None:
                usable.append((anchor, step))
        return usable

    def _trust(self, workload: WorkloadFeatures, anchor: PublishedAnchor) -> float:
        """How far a published ratio speaks for this workload (see the module)."""
        conv = workload.conv_flops_fraction
        if conv is None and workload.op_mix is not None:
            conv = workload.op_mix.flops_fraction(OpClass.CONVOLUTION)
        alike = 1.0 if conv is None else math.exp(
            -((abs(conv - anchor.conv_flops_fraction) / self.kind_width) ** 2))
        trust = alike + (1 - alike) * self.published_cross_kind_weight
        return trust if anchor.exact else trust * self.precision_mismatch_weight

    def _harness(self, workload: WorkloadFeatures, probes: Mapping[str, float]) -> Harness:
        """The model's log samples/s of the step on a part at a precision class, remembered
        (the stack factors ask it of the same parts again and again)."""
        seen: dict[tuple[str, str], float | None] = {}

        def harness(name: str, precision: str) -> float | None:
            if (name, precision) not in seen:
                spec = self.specs_.get(name)
                step = None if spec is None else _as_anchored(workload, spec, precision)
                seen[(name, precision)] = (
                    None if spec is None or step is None
                    else self._reference_log(step, spec, probes)[0])
            return seen[(name, precision)]

        return harness

    def _stack_offset(self, accelerator: AcceleratorSpec, anchor: PublishedAnchor,
                      harness: Harness) -> float:
        """log f(anchor) - log f(accelerator): the stack factors' gap the published ratio
        carries (``advisor.throughput._stack_factor``); 0 for a model fitted before them."""
        factors: StackFactors | None = getattr(self, "stack_factors_", None)
        if factors is None:
            return 0.0
        spec = self.specs_[anchor.anchor]
        # a cross-suite anchor carries no offset: averaged over the part's cross-suite anchors
        # (``_correction``), its factor is theirs, the mean over the reference parts that ran
        # the workload in that stack kind at the same arithmetic
        kin = (spec.vendor == accelerator.vendor
               and architecture_class(spec) == architecture_class(accelerator))
        sibling = anchor.cross_suite or (kin and spec.generation == accelerator.generation)
        return factors.offset(anchor, harness, sibling=sibling,
                              cousin=accelerator.name if kin and not sibling else None)

    def _correction(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                    probes: Mapping[str, float], harness: Harness | None = None
                    ) -> float | None:
        """Log correction to the accelerator's base prediction from its published anchors,
        each ratio carried to the harness by the stack factors; None when none is usable."""
        anchors = self._usable(workload, accelerator)
        if not anchors:
            return None
        harness = harness or self._harness(workload, probes)
        base = self._reference_log(workload, accelerator, probes)[0]
        total = weights = 0.0
        for anchor, step in anchors:
            theirs = self._reference_log(step, self.specs_[anchor.anchor], probes)[0]
            trust = self._trust(workload, anchor)
            carried = anchor.log_ratio + self._stack_offset(accelerator, anchor, harness)
            total += trust * trust * (carried - (base - theirs))
            weights += trust
        return total / weights

    def _peers(self, accelerator: AcceleratorSpec) -> list[str]:
        """Anchored parts of the accelerator's vendor and architecture class: those of its
        generation where there are any (an H200 borrows from an H100-NVL, not from an L4)."""
        peers = [name for name in sorted(getattr(self, "anchors_", {}))
                 if name != accelerator.name and name in self.specs_
                 and self.specs_[name].vendor == accelerator.vendor
                 and architecture_class(self.specs_[name]) == architecture_class(accelerator)]
        return ([n for n in peers if self.specs_[n].generation == accelerator.generation]
                or peers)

    def _peer_correction(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                         probes: Mapping[str, float]) -> float:
        """Mean correction of the anchored peers, each carried to the part by the reference
        parts' size trend where the part's prior has none (``_size_shift``) and weighted by
        how far its own anchors speak for this workload (the sum of their trust), shrunk
        toward 0 by ``published_peer_count`` pseudo-weights (0 when there is none)."""
        total = weights = 0.0
        harness = self._harness(workload, probes)
        for name in self._peers(accelerator):
            spec = self.specs_[name]
            correction = self._correction(workload, spec, probes, harness)
            if correction is not None:
                weight = sum(self._trust(workload, a) for a, _ in self._usable(workload, spec))
                correction += self._size_shift(workload, accelerator, spec)
                total += weight * correction
                weights += weight
        return total / (weights + self.published_peer_count) if weights else 0.0

    def _published_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                       probes: Mapping[str, float]) -> tuple[float, str]:
        """Log single-device samples/s of a part with no reference rows (not probed): its base
        plus its own published correction (case ``published``), or its peers' (its base's
        case). Probes on other parts move that figure by the share of their misses it carries
        (``_probes_miss``), so a probe that lands on its own prediction moves nothing; with no
        figure to move (a workload of unknown FLOPs), the probes are carried by the reference
        model as before."""
        if probes:
            try:
                alone, case = self._published_log(workload, accelerator, {})
                return alone + self._probes_miss(workload, accelerator, probes), case
            except AdvisorError:  # no FLOPs to predict from without them: the probes carry it
                pass
        base, case = self._reference_log(workload, accelerator, probes)
        own = self._correction(workload, accelerator, probes)
        if own is not None:
            return base + own, "published"
        return base + self._peer_correction(workload, accelerator, probes), case

    def precision_gain(self, workload: WorkloadFeatures, stack: Stack, precision: str) -> float:
        """What a published precision (``fp8``, ``int8``) buys over bf16/fp16 in ``stack``, as
        the anchoring measures it for this step (``advisor.throughput._stack_factor``); 1 for
        other precisions, where nothing measures it, or before ``anchor_to``."""
        factors: StackFactors | None = getattr(self, "stack_factors_", None)
        group = precision_group(precision)
        if factors is None or group is None:
            return 1.0
        return math.exp(factors.gain(stack, group, self._harness(workload, {})))

    # -- intervals ---------------------------------------------------------------------------

    def published_bounds(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                         anchor: tuple[float, float],
                         case_interval: Callable[[str], tuple[float, float]]
                         ) -> tuple[float, float]:
        """Log (low, high) of a published-anchored prediction, from the anchor part's no-probe
        error ``anchor`` and ``case_interval`` (a residual case's log bounds).

        Same-suite anchors: ``hypot(anchor, published_spread_)`` each side, the ratio's own
        spread across suites. Anchors that are all cross-suite carry the cross-suite rule's
        measured error instead: the spread is ``cross_suite_half_width`` (at least
        ``published_spread_``: a ratio across suites moves at least as much as one inside a
        suite), and the correction, trusted at ``w`` (its effective weight in ``_correction``,
        sum(trust^2) / sum(trust): below 1 for a run of the other kind or 8-bit on one side),
        leaves ``1 - w`` of the part's unanchored (prior) interval, itself no narrower than the
        anchored one: each side ``w x anchored + (1 - w) x max(prior, anchored)``. Where the
        rule cannot be checked on the step, ``w`` is 0: the prior's interval."""
        spread = self.published_spread_
        same = (-math.hypot(anchor[0], spread), math.hypot(anchor[1], spread))
        usable = self._usable(workload, accelerator)
        if not usable or not all(a.cross_suite for a, _ in usable):
            return same
        half = self.cross_suite_half_width(workload, usable[0][0].precision)
        crossed = (same if half is None else
                   (-math.hypot(anchor[0], max(half, spread)),
                    math.hypot(anchor[1], max(half, spread))))
        trusts = [self._trust(workload, a) for a, _ in usable]
        weight = 0.0 if half is None else sum(t * t for t in trusts) / sum(trusts)
        prior = case_interval(self._reference_log(workload, accelerator, {})[1])
        return (weight * crossed[0] + (1 - weight) * min(prior[0], crossed[0]),
                weight * crossed[1] + (1 - weight) * max(prior[1], crossed[1]))

    def cross_suite_half_width(self, workload: WorkloadFeatures, precision: str
                               ) -> float | None:
        """The ``interval_coverage`` conformal quantile of the cross-suite rule's held-out
        |log errors| on this step at precision class ``precision``
        (``advisor.throughput._cross_suite_check``; each group of errors weighs one); None
        where nothing checks the rule (or before ``anchor_to``)."""
        errors = self.cross_suite_check(workload, precision)
        if not errors:
            return None
        return grouped_conformal_half_width(
            {name: [abs(e) for e in values] for name, values in errors.items()},
            self.interval_coverage)

    def cross_suite_check(self, workload: WorkloadFeatures, precision: str
                          ) -> dict[str, list[float]]:
        """The cross-suite rule's held-out log errors on this step at precision class
        ``precision``, grouped (``advisor.throughput._cross_suite_check``); empty before
        ``anchor_to``."""
        figures = getattr(self, "cross_suite_figures_", None)
        if not figures:
            return {}
        return cross_suite_errors(figures, self._reference_parts(),
                                  self._harness(workload, {}), self._same_suite_log,
                                  precision=precision)

    def _same_suite_log(self, part: str, workload: str, precision: str, harness: Harness
                        ) -> float | None:
        """The log harness prediction of ``part`` its same-suite anchors of ``workload`` at
        ``precision`` give, both sides at that precision (exact): each anchor's harness plus
        the ratio carried by the stack factors, averaged; None where it has none."""
        spec = self.specs_.get(part)
        found = []
        for anchor in getattr(self, "anchors_", {}).get(part, ()):
            if (spec is None or anchor.cross_suite or not anchor.exact
                    or anchor.workload != workload or anchor.precision != precision):
                continue
            theirs = harness(anchor.anchor, precision) if anchor.anchor in self.specs_ else None
            if theirs is not None:
                found.append(theirs + anchor.log_ratio + self._stack_offset(spec, anchor, harness))
        return statistics.fmean(found) if found else None

    # -- evidence ----------------------------------------------------------------------------

    def evidence_note(self, accelerator: str) -> str | None:
        """What a no-probe figure for ``accelerator`` rests on, in one line for the
        assumptions: the published runs it is anchored to (ratio, suites, stack), the parts
        whose published runs correct its datasheet prior, or that nothing is published.
        None for parts with reference rows (their evidence is the reference table)."""
        if accelerator in self._reference_parts():
            return None
        anchors = getattr(self, "anchors_", {}).get(accelerator)
        if anchors:
            best: dict[str, PublishedAnchor] = {}
            for anchor in anchors:  # per workload, a like-precision anchor before one with
                # 8-bit matmuls on one side, then the one seen in the most suites
                known = best.get(anchor.workload)
                if known is None or ((anchor.exact, len(anchor.suites))
                                     > (known.exact, len(known.suites))):
                    best[anchor.workload] = anchor
            carried = ("each ratio corrected for its anchor's own speed-up from that stack"
                       if any(not a.cross_suite for a in best.values())
                       else "carried to the plain step by its anchors' mean speed-up from "
                       "that stack")
            return (f"{accelerator}: anchored to published training runs: "
                    + "; ".join(a.describe() for a in best.values()) + f"; {carried}")
        rows = getattr(self, "published_rows_", {}).get(accelerator)
        spec = self.specs_.get(accelerator)
        peers = self._peers(spec) if spec is not None else []
        borrowed = (f"; datasheet prior corrected by the published runs of {', '.join(peers)}"
                    if peers else "; datasheet prior")
        if rows:
            suites = ", ".join(sorted({r.suite for r in rows}))
            return (f"{accelerator}: published figures ({suites}) have no part with "
                    f"reference rows measured beside them{borrowed}")
        return f"{accelerator}: no published training figure{borrowed}"


def _as_anchored(workload: WorkloadFeatures, anchor: AcceleratorSpec, precision: str
                 ) -> WorkloadFeatures | None:
    """The user's step as the anchor ran it in the published rows of precision class
    ``precision``: unchanged where the step already runs at that class on the anchor; a bf16
    step at fp16 where the rows ran half width on a part without bf16 (its published
    half-precision rows are fp16); None where the step cannot be put at that class (an fp32
    step beside half-width rows, or the other way round)."""
    if precision_key(workload.precision, anchor) == precision:
        return workload
    if precision == "mixed" and workload.precision is Precision.BF16:
        return as_fp16(workload)
    return None
