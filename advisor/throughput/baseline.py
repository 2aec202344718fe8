"""The simple baselines the transfer model is judged against.

``MedianRatioModel``: a target is predicted from each probe by the median, over all reference
workloads measured on both, of the target/probe throughput ratio; the probes' estimates are
averaged in log space. Accelerators no reference workload was measured on keep the probes'
fraction of datasheet peak. Without probes it cannot predict.

``NearestRatioModel``: the one reference workload that moves most like this one over the
probes (the least spread of its log ratios to them, among those measured on the target and on
every probe) carries its target/probe ratios over; with one probe, or no such workload, the
median ratio.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Self

from advisor.errors import AdvisorError
from advisor.throughput.estimate import (
    Basis,
    Measurement,
    ThroughputEstimate,
    ThroughputModel,
    WorkloadFeatures,
    peak_flops,
    precision_key,
    reference_targets,
)
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.scaling import ScalingModel
from pricing import AcceleratorSpec

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["MedianRatioModel", "NearestRatioModel"]


class MedianRatioModel(ThroughputModel):
    """Median reference ratio from each probe to the target; no similarity, no intervals
    beyond ``half_width`` (log space)."""

    def __init__(self, *, half_width: float = 0.3) -> None:
        if not half_width > 0:
            raise AdvisorError(f"half_width must be > 0, got {half_width}")
        self.half_width = half_width

    def fit(self, X: Sequence[ReferenceRow], y: npt.ArrayLike | None = None, *,
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """Index single-device log throughput by accelerator and workload; returns self."""
        reference = reference_targets(X, y)
        logs: dict[str, dict[str, float]] = defaultdict(dict)
        for row in reference:
            if row.accelerator_count == 1 and row.samples_per_second > 0:
                workload = f"{row.generation}/{row.model}/{row.precision}"
                logs[row.accelerator][workload] = math.log(row.samples_per_second)
        self.logs_ = dict(logs)
        self.specs_ = dict(accelerators)
        self.scaling_ = ScalingModel().fit(reference, accelerators)
        return self

    def scaling_efficiency(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Fraction of linear speed-up kept on ``count`` devices, from the scaling fit."""
        return self.scaling_.efficiency(accelerator, count)

    def _estimate(self, workload: WorkloadFeatures, probe: str, log_sps: float,
                  target: AcceleratorSpec) -> float:
        on_target, on_probe = self.logs_.get(target.name, {}), self.logs_.get(probe, {})
        ratios = [on_target[w] - on_probe[w] for w in on_target.keys() & on_probe.keys()]
        if ratios:
            return log_sps + statistics.median(ratios)
        spec = self.specs_.get(probe)
        if spec is None:
            raise AdvisorError(f"no reference ratio or spec links {probe} to {target.name}")
        return log_sps + math.log(peak_flops(target, precision_key(workload.precision, target))
                                  / peak_flops(spec, precision_key(workload.precision, spec)))

    def _predict_log(self, workload: WorkloadFeatures, probes: Mapping[str, float],
                     target: AcceleratorSpec) -> float:
        """Mean over the probes (log single-device samples/s) of the median-ratio estimate."""
        return statistics.mean(self._estimate(workload, probe, log_sps, target)
                               for probe, log_sps in probes.items())

    def estimate(
        self,
        workload: WorkloadFeatures,
        accelerator: AcceleratorSpec,
        *,
        count: int = 1,
        measurements: Sequence[Measurement] = (),
    ) -> ThroughputEstimate:
        """Samples/s from the probes' estimates; needs at least one probe."""
        if not measurements:
            raise AdvisorError("the ratio baselines need at least one probe")
        logs: dict[str, list[float]] = defaultdict(list)
        for m in measurements:
            logs[m.accelerator].append(math.log(m.samples_per_second / (
                m.accelerator_count * self.scaling_efficiency(self.specs_[m.accelerator],
                                                              m.accelerator_count))))
        probes = {a: statistics.mean(values) for a, values in logs.items()}
        value = (math.exp(self._predict_log(workload, probes, accelerator)) * count
                 * self.scaling_efficiency(accelerator, count))
        measured = any(m.accelerator == accelerator.name for m in measurements)
        return ThroughputEstimate(value, value * math.exp(-self.half_width),
                                  value * math.exp(self.half_width),
                                  Basis.MEASURED if measured else Basis.PREDICTED)


class NearestRatioModel(MedianRatioModel):
    """The ratios of the one reference workload nearest to this one over the probes."""

    def _predict_log(self, workload: WorkloadFeatures, probes: Mapping[str, float],
                     target: AcceleratorSpec) -> float:
        """Nearest = least population spread of the log offsets probe - reference workload
        (ties: the first name); its target value plus the mean offset."""
        if target.name in probes:
            return probes[target.name]
        nearest: tuple[float, str, float] | None = None
        for name, on_target in self.logs_.get(target.name, {}).items():
            offsets = [log_sps - self.logs_[probe][name] for probe, log_sps in probes.items()
                       if name in self.logs_.get(probe, {})]
            if len(probes) > 1 and len(offsets) == len(probes):
                found = (statistics.pstdev(offsets), name, on_target + statistics.mean(offsets))
                nearest = min(nearest or found, found)
        return nearest[2] if nearest else super()._predict_log(workload, probes, target)
