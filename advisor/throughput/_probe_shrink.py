"""How much of one probe's miss to carry to another device: the probe's shrinkage.

After one probe on B the per-operator transfer (``advisor.throughput._op_transfer``) predicts
a target A as A's no-probe figure moved by the whole of the workload's no-probe miss on B
(plus the pair shift): its error is the miss on A less the miss on B. That is best only when
a workload's misses on the two devices move together one for one. They do not: a model's
misses on two GPUs correlate (the roofline misses a kind of step everywhere) but far from
perfectly (the model x GPU interaction), and the less the further apart the two parts are.
Regressing the miss on A on the miss on B over the reference models gives the share of B's
miss to carry,

    r_j(A) ~ beta(d) r_j(B),   beta(d) = level + slope x d     (least squares, through zero)

with ``d`` the distance between the two parts' datasheet figures (``spec_distance``: log
peak tensor and fp32 FLOP/s and log bandwidth, the anchors' features), and the prediction
becomes the transferred figure less ``(1 - beta)`` of the probe's miss on B, i.e. the
no-probe figure on A moved by ``beta`` of it (the pair shift kept whole).

``r_j(X)`` is reference group j's (``model/precision``, one generation) log residual on X
predicted by the anchored roofline refitted without j's model (efficiencies and anchors
alike): the miss a new workload's no-probe figure makes, not the smaller in-sample one.
The terms are every (group, generation, X, Y) with X and Y distinct parts of one vendor that
both ran the group, pooled per (architecture class of X, architecture class of Y)
(``architecture_class``): how far misses carry depends on whether the two parts run the same
kernels. A class pair with fewer than ``MIN_PAIRS`` terms, or from fewer than ``MIN_GROUPS``
models, takes the vendor's pooled line; terms that do not tell a slope apart (one distance)
or parts without the figures take the plain share ``sum r(A) r(B) / sum r(B)^2``; a vendor
without evidence keeps the whole miss (beta 1, the transfer before this module). beta is
clipped to [0, 1].

A user's step runs in a software stack of its own, which moves it on every part alike
(``advisor.throughput._calibration.stack_shifts``, measured between the reference's
generations and the published suites): a shared miss the reference models, all in one
stack, do not have. With its mean square ``v`` (``stack_variance``) added to both the
covariance and the probed miss's variance, ``beta' = (beta V + v) / (V + v)``, with ``V`` the
class pair's mean squared probed miss. Nothing is tuned: the lines are least-squares fits on
the reference models' held-out residuals, the judged workload in none of them.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Self

from advisor.errors import AdvisorError
from advisor.profiling import OpMix
from advisor.throughput.estimate import architecture_class
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.roofline import (
    AnchoredRoofline,
    RooflineSample,
    anchor_features,
    reference_samples_by_generation,
)
from pricing import AcceleratorSpec

__all__ = ["MIN_GROUPS", "MIN_PAIRS", "HeldOutMisses", "ProbeShrinkage", "held_out_misses",
           "spec_distance", "stack_variance"]

MIN_PAIRS = 30  # (group, X, Y) terms a class pair needs for a beta of its own
MIN_GROUPS = 3  # and the reference models they come from
_MIN_FIT = 10  # samples a refit needs (as the no-probe roofline)

# (group ``model/precision``, generation, accelerator name) -> held-out log residual
HeldOutMisses = Mapping[tuple[str, str, str], float]
# vendor, target's and probed part's architecture classes (None, None: the vendor pooled)
ClassPair = tuple[str, tuple[bool, bool] | None, tuple[bool, bool] | None]


def held_out_misses(reference: Sequence[ReferenceRow],
                    accelerators: Mapping[str, AcceleratorSpec], mixes: Mapping[str, OpMix],
                    refit: Callable[[list[RooflineSample]], AnchoredRoofline],
                    ) -> dict[tuple[str, str, str], float]:
    """Per (group, generation, accelerator), the mean log residual (measured over predicted)
    of the single-device ``reference`` rows with a mix, predicted by ``refit`` (an anchored
    roofline fitted on the given samples) on every generation's samples except those of the
    group's model. Models whose removal leaves fewer than ten samples are skipped."""
    by_generation = reference_samples_by_generation(reference, accelerators, mixes)
    everything = [s for samples in by_generation.values() for s in samples]
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for model in sorted({s.group.partition("/")[0] for s in everything}):
        rest = [s for s in everything if s.group.partition("/")[0] != model]
        if len(rest) < _MIN_FIT:
            continue
        fitted = refit(rest)
        for generation, samples in by_generation.items():
            for s in samples:
                if s.group.partition("/")[0] != model:
                    continue
                predicted = fitted.predict_log(s.op_mix, s.accelerator, batch_size=s.batch_size,
                                               tf32=s.tf32, precision_key=s.group.split("/")[-1])
                found[(s.group, generation, s.accelerator.name)].append(
                    math.log(s.samples_per_second) - predicted)
    return {key: statistics.mean(values) for key, values in found.items()}


class ProbeShrinkage:
    """The share of a probe's no-probe miss carried to another part, per class pair and by
    how far apart the two parts' figures are (see the module). ``misses`` are held-out log
    residuals (``held_out_misses``); ``specs`` the parts' specs (parts without one are left
    out). Immutable after construction."""

    def __init__(self, misses: HeldOutMisses, specs: Mapping[str, AcceleratorSpec], *,
                 stack_variance: float = 0.0) -> None:
        if not (math.isfinite(stack_variance) and stack_variance >= 0):
            raise AdvisorError(f"stack_variance must be a finite number >= 0, got "
                               f"{stack_variance}")
        self.stack_variance = stack_variance
        by_run: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        for (group, generation, name), residual in misses.items():
            if not math.isfinite(residual):
                raise AdvisorError(f"held-out miss of {group} on {name} is not finite")
            if name in specs:
                by_run[(group, generation)][name] = residual
        terms: dict[ClassPair, list[tuple[float, float, float | None]]] = defaultdict(list)
        models: dict[ClassPair, set[str]] = defaultdict(set)
        for (group, _), found in by_run.items():
            for target, r_target in found.items():
                for probed, r_probed in found.items():
                    a, b = specs[target], specs[probed]
                    if target == probed or a.vendor != b.vendor:
                        continue
                    keys: tuple[ClassPair, ...] = (
                        (a.vendor, architecture_class(a), architecture_class(b)),
                        (a.vendor, None, None))
                    for key in keys:
                        terms[key].append((r_target, r_probed, spec_distance(a, b)))
                        models[key].add(group.partition("/")[0])
        self.pairs = {key: len(collected) for key, collected in terms.items()}
        self.levels: dict[ClassPair, float] = {}
        self.probed_variance: dict[ClassPair, float] = {}
        self.lines: dict[ClassPair, tuple[float, float]] = {}
        for key, collected in terms.items():
            if len(collected) < MIN_PAIRS or len(models[key]) < MIN_GROUPS:
                continue
            probed_squares = sum(rb * rb for _, rb, _ in collected)
            if probed_squares > 0:
                self.levels[key] = sum(ra * rb for ra, rb, _ in collected) / probed_squares
                self.probed_variance[key] = probed_squares / len(collected)
            line = _fit_line([(ra, rb, d) for ra, rb, d in collected if d is not None])
            if line is not None:
                self.lines[key] = line

    @classmethod
    def from_reference(cls, reference: Sequence[ReferenceRow],
                       accelerators: Mapping[str, AcceleratorSpec], mixes: Mapping[str, OpMix],
                       refit: Callable[[list[RooflineSample]], AnchoredRoofline], *,
                       stack_variance: float = 0.0) -> Self:
        """The shrinkage from ``reference``'s held-out misses (``held_out_misses``)."""
        return cls(held_out_misses(reference, accelerators, mixes, refit), accelerators,
                   stack_variance=stack_variance)

    def beta(self, target: AcceleratorSpec, probed: AcceleratorSpec) -> float:
        """The share of the probe's miss on ``probed`` carried to ``target``: the class
        pair's line (else the vendor's) at the two parts' distance, or where either part
        lacks the figures or the terms do not tell a slope apart, the share whatever the
        distance; clipped to [0, 1], then with the stack variance (the module); 1 without
        evidence, and on the probed part itself."""
        if target.name == probed.name:
            return 1.0
        keys = ((target.vendor, architecture_class(target), architecture_class(probed)),
                (target.vendor, None, None))
        distance = spec_distance(target, probed)
        for key in keys:
            if distance is not None and key in self.lines:
                level, slope = self.lines[key]
                return self._with_stack(key, level + slope * distance)
            if key in self.levels:  # no line (one distance, or no figures): the level
                return self._with_stack(key, self.levels[key])
        return 1.0

    def _with_stack(self, key: ClassPair, beta: float) -> float:
        """``beta`` clipped to [0, 1], then with the stack's shared miss added to both the
        covariance and the probed part's variance (the module)."""
        beta = min(1.0, max(0.0, beta))
        variance = self.probed_variance[key]
        return (beta * variance + self.stack_variance) / (variance + self.stack_variance)


def stack_variance(shifts: Iterable[float]) -> float:
    """The mean square of stack shifts (``advisor.throughput._calibration.stack_shifts``:
    how far one workload moves between software stacks, on every part alike); 0 without."""
    values = [s * s for s in shifts]
    return statistics.fmean(values) if values else 0.0


def spec_distance(a: AcceleratorSpec, b: AcceleratorSpec) -> float | None:
    """How far apart two parts' figures are: the Euclidean distance of their log peak
    FLOP/s (tensor and fp32) and log bandwidth (the anchors' features); None without them."""
    ours, theirs = anchor_features(a), anchor_features(b)
    if ours is None or theirs is None:
        return None
    return math.dist(ours, theirs)


def _fit_line(terms: Sequence[tuple[float, float, float]]) -> tuple[float, float] | None:
    """(level, slope) of ``r_target ~ (level + slope x distance) r_probed`` by least squares
    over (r_target, r_probed, distance) terms (through zero: a miss of zero carries
    nothing); None when there are too few terms or they do not tell a slope apart."""
    if len(terms) < MIN_PAIRS:
        return None
    s11 = sum(rb * rb for _, rb, _ in terms)
    s12 = sum(rb * rb * d for _, rb, d in terms)
    s22 = sum(rb * rb * d * d for _, rb, d in terms)
    t1 = sum(ra * rb for ra, rb, _ in terms)
    t2 = sum(ra * rb * d for ra, rb, d in terms)
    det = s11 * s22 - s12 * s12
    if s11 <= 0 or det <= 1e-9 * s11 * s22:
        return None
    return ((t1 * s22 - t2 * s12) / det, (s11 * t2 - s12 * t1) / det)
