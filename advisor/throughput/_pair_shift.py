"""The probed pair's own correction: how the roofline missed alike workloads on both devices.

After one probe on B, the per-operator transfer (``advisor.throughput._op_transfer``) predicts
a target A as the probe times the roofline's ratio A/B, corrected by ``prior_shift``: the
difference of the two devices' no-probe corrections (each device's anchor, a mean of the
roofline's misses over every reference workload measured on it, weighted by convolution
share). Its error is therefore the held-out workload's own miss on A less its miss on B.

The reference measures many workloads on both A and B. Where some of them are like the
probed workload (their operator mixes near its mix), their miss on A less their miss on B is
direct evidence of this pair's correction for such a step:

    shift = (sum_j w_j (r_j(A) - r_j(B)) + pseudo_count x prior_shift) / (sum_j w_j + pseudo_count)
    w_j   = exp(-(mix_distance(mix, mix_j) / width)^2) x (precision_weight if j's precision differs)

with ``r_j(X)`` the fitted roofline's log residual of reference group j (``model/precision``
in one software generation: Lambda's two table generations ran one GPU 10% apart, so a
difference is only taken within one) on X, over the groups measured on both devices. A
workload unlike every reference group (all w_j near 0), or a pair no group ran on both of,
keeps ``prior_shift``. A part with no reference rows (given its spec, and when the caller
has no better evidence for it, such as a published anchor) borrows each group's residual
from the parts of its vendor and architecture class that ran the group: a ridge regression
on the logs of their peak FLOP/s and bandwidth evaluated at its own figures, as
``AnchoredRoofline`` borrows a whole anchor (at least ``MIN_PEERS`` parts). The width is
fixed by rule, not tuned: the widest distance between two precisions' mixes of one reference
model (as ``advisor.throughput._no_probe.novelty_weights``), at least ``MIN_WIDTH``, so only
a model's siblings and its other precision count fully.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Self

from advisor.errors import AdvisorError
from advisor.profiling import OpMix
from advisor.throughput._no_probe import _precision_spread, mix_distance
from advisor.throughput._probe_shrink import ProbeShrinkage
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.roofline import (
    RooflinePrior,
    anchor_features,
    class_peers,
    reference_samples_by_generation,
    ridge_at,
)
from pricing import AcceleratorSpec

__all__ = ["MIN_PEERS", "MIN_WIDTH", "PairShift", "Residuals"]

MIN_WIDTH = 0.05  # the floor novelty_weights puts under its width too
MIN_PEERS = 3  # parts of a class that ran a group needed to borrow its residual (as anchors)

# accelerator name -> (group ``model/precision``, generation) -> log residual
Residuals = Mapping[str, Mapping[tuple[str, str], float]]


class PairShift:
    """The pair-specific correction of one probe's transfer (see the module).

    ``residuals`` maps accelerator names to the fitted roofline's log residual per (group,
    generation) (``from_reference`` measures them); ``mixes`` the groups' operator mixes;
    ``precision_weight`` the weight of a group of the other precision; ``pseudo_count`` the
    weight, in groups, of the prior shift; ``width`` the mix distance at which a group's
    weight falls to exp(-1) (None: by rule, see the module); ``specs`` the specs of the parts
    with residuals and ``ridge`` the penalty, to borrow residuals for a part without any;
    ``shrinkage`` (None: the probe's whole miss) how much of the probe's own no-probe miss
    the transfer carries (``advisor.throughput._probe_shrink``). Immutable after
    construction (borrowed residuals are memoized per part)."""

    def __init__(self, residuals: Residuals, mixes: Mapping[str, OpMix], *,
                 precision_weight: float = 0.3, pseudo_count: float = 1.0,
                 width: float | None = None, specs: Mapping[str, AcceleratorSpec] | None = None,
                 ridge: float = 0.1, shrinkage: ProbeShrinkage | None = None) -> None:
        if not 0 <= precision_weight <= 1:
            raise AdvisorError(f"precision_weight must be in [0, 1], got {precision_weight}")
        if pseudo_count <= 0:
            raise AdvisorError(f"pseudo_count must be > 0, got {pseudo_count}")
        if width is not None and width <= 0:
            raise AdvisorError(f"width must be > 0, got {width}")
        if ridge <= 0:
            raise AdvisorError(f"ridge must be > 0, got {ridge}")
        self.specs = {name: spec for name, spec in (specs or {}).items() if name in residuals}
        self.ridge = ridge
        self.shrinkage = shrinkage
        self._borrowed: dict[str, dict[tuple[str, str], float]] = {}
        self.residuals = {name: dict(found) for name, found in residuals.items()}
        known = {group for found in self.residuals.values() for group, _ in found}
        self.mixes = {group: mixes[group] for group in sorted(known) if group in mixes}
        self.precision_weight = precision_weight
        self.pseudo_count = pseudo_count
        self.width = (width if width is not None
                      else max(_precision_spread(self.mixes), MIN_WIDTH))

    @classmethod
    def from_reference(cls, reference: Sequence[ReferenceRow],
                       accelerators: Mapping[str, AcceleratorSpec], mixes: Mapping[str, OpMix],
                       roofline: RooflinePrior, *, precision_weight: float = 0.3,
                       ridge: float = 0.1, shrinkage: ProbeShrinkage | None = None) -> Self:
        """The correction from ``roofline``'s log residuals on the single-device
        ``reference`` rows whose group has a mix (``reference_samples``, one generation at a
        time; TF32 as there), the mean over a group's batches on one part; ``shrinkage`` as
        in the constructor."""
        found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for generation, samples in reference_samples_by_generation(reference, accelerators,
                                                                   mixes).items():
            for s in samples:
                predicted = roofline.samples_per_second(s.op_mix, s.accelerator,
                                                        batch_size=s.batch_size, tf32=s.tf32)
                found[(s.accelerator.name, s.group, generation)].append(
                    math.log(s.samples_per_second / predicted))
        residuals: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
        for (name, group, generation), values in found.items():
            residuals[name][(group, generation)] = statistics.mean(values)
        return cls(residuals, mixes, precision_weight=precision_weight, specs=accelerators,
                   ridge=ridge, shrinkage=shrinkage)

    def _borrow(self, spec: AcceleratorSpec) -> dict[tuple[str, str], float]:
        """Per (group, generation), the residual regressed from the parts of ``spec``'s vendor
        and architecture class that ran it (see the module); empty without its figures."""
        ours = anchor_features(spec)
        if ours is None:
            return {}
        peers = class_peers(spec, self.specs)
        keys = sorted({key for name in peers for key in self.residuals[name]})
        out = {}
        for key in keys:
            ran = [name for name in peers if key in self.residuals[name]]
            if len(ran) >= MIN_PEERS:
                out[key] = ridge_at([peers[name] for name in ran],
                                    [self.residuals[name][key] for name in ran], ours, self.ridge)
        return out

    def _on(self, name: str, spec: AcceleratorSpec | None) -> Mapping[tuple[str, str], float]:
        """``name``'s residuals; borrowed from its peers when it has none and ``spec`` is
        given."""
        if name in self.residuals or spec is None:
            return self.residuals.get(name, {})
        if spec.name not in self._borrowed:
            self._borrowed[spec.name] = self._borrow(spec)
        return self._borrowed[spec.name]

    def weights(self, op_mix: OpMix, precision_key: str, target: str, probed: str, *,
                borrow: Mapping[str, AcceleratorSpec] | None = None,
                ) -> dict[tuple[str, str], float]:
        """Per reference (group, generation) measured on both ``target`` and ``probed`` (or
        borrowed, for a part of ``borrow`` with no residuals), its weight for a workload with
        ``op_mix`` at ``precision_key`` (``fp32`` or ``mixed``)."""
        borrow = borrow or {}
        on_target = self._on(target, borrow.get(target))
        on_probed = self._on(probed, borrow.get(probed))
        out = {}
        for key in sorted(on_target.keys() & on_probed.keys()):
            group = key[0]
            if group not in self.mixes:
                continue
            weight = math.exp(-((mix_distance(op_mix, self.mixes[group]) / self.width) ** 2))
            if group.partition("/")[2] != precision_key:
                weight *= self.precision_weight
            out[key] = weight
        return out

    def shift(self, op_mix: OpMix, precision_key: str, *, target: str, probed: str,
              prior_shift: float, borrow: Mapping[str, AcceleratorSpec] | None = None,
              ) -> float:
        """The log correction of the probe's transfer from ``probed`` to ``target``:
        ``prior_shift`` moved toward the alike groups' residual differences (the module);
        ``borrow`` maps the parts that may borrow residuals to their specs."""
        weights = self.weights(op_mix, precision_key, target, probed, borrow=borrow)
        borrow = borrow or {}
        on_target = self._on(target, borrow.get(target))
        on_probed = self._on(probed, borrow.get(probed))
        total = sum(weights.values())
        evidence = sum(w * (on_target[k] - on_probed[k]) for k, w in weights.items())
        return (evidence + self.pseudo_count * prior_shift) / (total + self.pseudo_count)
