"""Multi-accelerator scaling: how much of a linear speed-up an instance with N devices keeps.

Fitted on the reference data's 1/2/4/8-device rows. Efficiency is modelled as
``eff(n) = min(1, exp(-slope * log2(n)))``: a constant fraction lost per doubling. The slope
is learned per accelerator where the reference has multi-device rows, and per interconnect
class (``fabric``: NVLink/SXM, TPU ICI, NeuronLink, Gaudi RoCE; ``pcie``: everything else)
for accelerators it has not seen. Residuals of the fit (leave-one-accelerator-out for the
class slopes) give the interval width.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Self

from advisor.errors import AdvisorError
from advisor.throughput.reference import ReferenceRow
from pricing import AcceleratorSpec

__all__ = ["FABRIC_INTERCONNECTS", "ScalingModel", "interconnect_class"]

# Interconnects with a dedicated device-to-device fabric (not the PCIe bus).
FABRIC_INTERCONNECTS = frozenset({"nvlink", "sxm", "ici", "neuronlink", "roce"})
# Used only when the reference data has no multi-device rows at all.
_DEFAULT_SLOPE = {"fabric": 0.03, "pcie": 0.07}
_MIN_BOUND_ROWS = 20  # reference rows a (class, count) needs for its own efficiency bounds


def interconnect_class(spec: AcceleratorSpec) -> str:
    """``fabric`` for NVLink/SXM-like device fabrics, else ``pcie``."""
    return "fabric" if spec.interconnect.lower() in FABRIC_INTERCONNECTS else "pcie"


class ScalingModel:
    """Fraction of linear speed-up kept on N devices, fitted on reference multi-device rows.

    ``min_points`` is how many (workload, count) ratios an accelerator needs before it gets
    its own slope instead of its interconnect class's.
    """

    def __init__(self, *, min_points: int = 4) -> None:
        if min_points < 1:
            raise AdvisorError(f"min_points must be >= 1, got {min_points}")
        self.min_points = min_points

    def fit(self, reference: Sequence[ReferenceRow],
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """Learn slopes from rows with 1 and N devices of the same workload; returns self."""
        singles: dict[tuple[str, str, str, str], float] = {}
        for row in reference:
            if row.accelerator_count == 1:
                singles[(row.generation, row.model, row.precision, row.accelerator)] = (
                    row.samples_per_second)
        per_accelerator: dict[str, list[float]] = defaultdict(list)
        for row in reference:
            one = singles.get((row.generation, row.model, row.precision, row.accelerator))
            if row.accelerator_count <= 1 or not one:
                continue
            efficiency = row.samples_per_second / (row.accelerator_count * one)
            if not 0.2 <= efficiency <= 1.5:  # implausible rows (e.g. ncf at 1e10 samples/s)
                continue
            per_accelerator[row.accelerator].append(
                -math.log(min(efficiency, 1.0)) / math.log2(row.accelerator_count))
        self.slope_ = {name: statistics.median(v) for name, v in per_accelerator.items()
                       if len(v) >= self.min_points}
        by_class: dict[str, list[float]] = defaultdict(list)
        for name, slope in self.slope_.items():
            if name in accelerators:
                by_class[interconnect_class(accelerators[name])].append(slope)
        self.class_slope_ = {c: statistics.median(v) if v else _DEFAULT_SLOPE[c]
                             for c in _DEFAULT_SLOPE for v in [by_class.get(c, [])]}
        residuals = [abs(s - self.slope_[name]) for name, values in per_accelerator.items()
                     if name in self.slope_ for s in values]
        self.slope_spread_ = (statistics.quantiles(residuals, n=10)[-1]
                              if len(residuals) >= 10 else 0.05)
        self._fit_efficiency_bounds(reference, singles, accelerators)
        return self

    def _fit_efficiency_bounds(self, reference: Sequence[ReferenceRow],
                               singles: Mapping[tuple[str, str, str, str], float],
                               accelerators: Mapping[str, AcceleratorSpec]) -> None:
        """Per interconnect class and device count: the 5% and 95% quantiles of measured
        efficiency over the fitted one (log), and the worst efficiency measured."""
        logs: dict[tuple[str, int], list[float]] = defaultdict(list)
        worst: dict[tuple[str, int], float] = {}
        for row in reference:
            one = singles.get((row.generation, row.model, row.precision, row.accelerator))
            spec = accelerators.get(row.accelerator)
            if row.accelerator_count <= 1 or not one or spec is None:
                continue
            efficiency = row.samples_per_second / (row.accelerator_count * one)
            if not 0.2 <= efficiency <= 1.5:
                continue
            key = (interconnect_class(spec), row.accelerator_count)
            logs[key].append(math.log(efficiency / self.efficiency(spec, row.accelerator_count)))
            worst[key] = min(worst.get(key, 1.0), efficiency)
        self.efficiency_bounds_: dict[tuple[str, int], tuple[float, float, float]] = {}
        for key, values in logs.items():
            if len(values) >= _MIN_BOUND_ROWS:
                ranked = sorted(values)
                low = ranked[int(0.05 * len(ranked))]
                high = ranked[min(len(ranked) - 1, math.ceil(0.95 * len(ranked)) - 1)]
                self.efficiency_bounds_[key] = (min(low, 0.0), max(high, 0.0), worst[key])

    def efficiency_interval(self, accelerator: AcceleratorSpec, count: int) -> tuple[float, float]:
        """(low, high) fraction of linear speed-up kept on ``count`` devices: the fitted
        efficiency moved by the 5%/95% quantiles of the reference rows of its interconnect
        class at that count (from the largest count measured below it, scaled per doubling,
        beyond the data), never above 1 (N devices never beat N times one) nor below the
        worst efficiency those rows measured."""
        point = self.efficiency(accelerator, count)
        if count <= 1:
            return point, point
        cls = interconnect_class(accelerator)
        measured = sorted(n for c, n in getattr(self, "efficiency_bounds_", {}) if c == cls)
        below = [n for n in measured if n <= count] or measured[:1]
        if not below:  # no multi-device rows of this class: the per-doubling spread
            spread = self.log_spread(accelerator, count)
            return point * math.exp(-spread), min(1.0, point * math.exp(spread))
        low, high, worst = self.efficiency_bounds_[(cls, below[-1])]
        stretch = math.log2(count) / math.log2(below[-1])
        return (max(point * math.exp(low * stretch), min(worst, point)),
                min(1.0, point * math.exp(high * stretch)))

    def slope(self, accelerator: AcceleratorSpec) -> tuple[float, bool]:
        """(loss per doubling in log space, whether the accelerator itself was seen)."""
        if accelerator.name in self.slope_:
            return self.slope_[accelerator.name], True
        return self.class_slope_[interconnect_class(accelerator)], False

    def efficiency(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Fraction of linear speed-up kept on ``count`` devices (1.0 for one)."""
        if count <= 1:
            return 1.0
        slope, _ = self.slope(accelerator)
        return min(1.0, math.exp(-slope * math.log2(count)))

    def log_spread(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Extra log-space half-width of the throughput interval caused by scaling."""
        if count <= 1:
            return 0.0
        _, seen = self.slope(accelerator)
        per_doubling = self.slope_spread_ * (1.0 if seen else 2.0)
        return per_doubling * math.log2(count)
