"""Multi-accelerator scaling: how much of a linear speed-up an instance with N devices keeps.

Fitted on the reference data's 1/2/4/8-device rows. Efficiency is modelled as
``eff(n) = min(1, exp(-slope * log2(n)))``: a constant fraction lost per doubling. The slope
is learned per accelerator where the reference has multi-device rows, and per interconnect
class (``fabric``: NVLink/SXM, TPU ICI, NeuronLink, Gaudi RoCE; ``pcie``: everything else)
for accelerators it has not seen. The efficiency's bounds per interconnect class and device
count are split-conformal: each reference model's rows predicted by a fit without that model,
and one score per row, its log residual over the fit's own spread on that side (the
quartiles of the in-fit residuals of that class and count: ``spread_``), whose quantile is
taken over reference workloads (one generation, model and precision), each weighing one,
with the finite-sample correction of their number (a workload's rows share its scaling:
counted as rows, the bounds covered 84% of held-out N-device cells, not 90%). One score for
both sides pays that correction once, where a quantile per tail paid it on each (at 40
workloads the 97.4th percentile of each tail, not the 92.3rd of the score).

Workload-aware: each step all-reduces the gradients (``GRADIENT_BYTES_PER_PARAM`` per
parameter) while one device computes for ``batch / samples_per_second`` seconds, so a
workload's *communication load* is ``log(gradient bytes / step seconds)``. Where it is known,
the efficiency is physical (``physical_efficiency``): the step's compute time plus a ring
all-reduce's ``2 (N - 1) / N`` gradient bytes at an effective bandwidth (the non-overlapped
share folded in) fitted per accelerator on the reference rows whose parameters and one-device
step are known (``REFERENCE_PARAMS``), the median of the generation's parts of the same
interconnect class (else of the class) for a part with no such rows, times a fitted factor
per class and count (the topology the ring alone does not know). Held out by model on those
rows it explains 24% of the log efficiencies' variance around each accelerator and count's
median, where a loss per doubling moved by the load explained 12%. Those rows' held-out
misses give the bounds of a workload whose load is known, one scale for both sides
(``load_spread_``).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Self

import numpy as np

from advisor.errors import AdvisorError
from advisor.throughput._calibration import grouped_conformal_half_width
from advisor.throughput.reference import ReferenceRow
from pricing import AcceleratorSpec

__all__ = ["FABRIC_INTERCONNECTS", "GRADIENT_BYTES_PER_PARAM", "REFERENCE_PARAMS", "ScalingModel",
           "interconnect_class", "physical_efficiency"]

# Interconnects with a dedicated device-to-device fabric (not the PCIe bus).
FABRIC_INTERCONNECTS = frozenset({"nvlink", "sxm", "ici", "neuronlink", "roce"})
# Used only when the reference data has no multi-device rows at all.
_DEFAULT_SLOPE = {"fabric": 0.03, "pcie": 0.07}
_MIN_BOUND_ROWS = 20  # reference rows a (class, count) needs for its own efficiency bounds
_COVERAGE = 0.9  # central share of held-out efficiencies the bounds hold
_SPREAD_QUANTILE = 0.25  # the in-fit residuals' quartiles scale each side's score
_MIN_SPREAD = 0.005  # log; below the table's own noise, so a side's scale is never zero
# log bytes/s searched for an all-reduce bandwidth: 0.1 MB/s to 10 TB/s, steps of 1%
_BANDWIDTH_GRID = tuple(math.log(1e5) + i * 0.01 for i in range(int(math.log(1e8) / 0.01) + 1))
_ONE_DEVICE_STEPS = 200  # fixed-point steps of one_device (at efficiency 0.2: 1e-9 in ~100)
_PLAUSIBLE = (0.2, 1.5)  # efficiencies outside are data errors (e.g. ncf at 1e10 samples/s)
# Data-parallel training all-reduces the gradients in the parameters' dtype: fp32 master
# weights under autocast, so 4 bytes per parameter at every precision we train.
GRADIENT_BYTES_PER_PARAM = 4
# Parameters of the reference models whose batch and samples/s count the same unit (so one
# device's step time is batch / samples/s), from the models' public descriptions (rounded):
# ResNet-50 25.6 M (torchvision), SSD300 with a ResNet-50 backbone 22.9 M and Mask R-CNN
# (ResNet-50-FPN) 44.4 M (NVIDIA DeepLearningExamples), BERT-base 110 M and -large 340 M
# (Devlin et al. 2019), NCF (NeuMF, MovieLens-20M, 64 factors) 31.8 M. GNMT and
# Transformer-XL count tokens, Tacotron 2 and WaveGlow frames and audio samples, while their
# batch counts sequences: their step time is not known, so they are left out.
REFERENCE_PARAMS: dict[str, float] = {
    "resnet50": 25.6e6, "ssd": 22.9e6, "maskrcnn": 44.4e6, "bert_base_squad": 110e6,
    "bert_large_squad": 340e6, "ncf": 31.8e6,
}


def physical_efficiency(load: float, count: int, log_bandwidth: float) -> float:
    """Data-parallel efficiency on ``count`` devices of a step whose one-device compute moves
    ``exp(load)`` gradient bytes per second: the step takes its compute time plus a ring
    all-reduce's ``2 (count - 1) / count`` gradient bytes at ``exp(log_bandwidth)`` bytes/s
    (the non-overlapped share folded into the fitted bandwidth), so
    ``1 / (1 + 2 (count - 1) / count x exp(load - log_bandwidth))``."""
    if count <= 1:
        return 1.0
    return 1.0 / (1.0 + 2.0 * (count - 1) / count * math.exp(load - log_bandwidth))


def _quartile_spread(residuals: Sequence[float]) -> tuple[float, float]:
    """Magnitudes of the lower and upper quartiles of log residuals, at least ``_MIN_SPREAD``."""
    return (max(-float(np.quantile(residuals, _SPREAD_QUANTILE)), _MIN_SPREAD),
            max(float(np.quantile(residuals, 1 - _SPREAD_QUANTILE)), _MIN_SPREAD))


def _fit_bandwidth(points: Sequence[tuple[float, int, float]]) -> float:
    """The log bandwidth on ``_BANDWIDTH_GRID`` whose ``physical_efficiency`` misses the
    (load, count, log efficiency) points least in sum of absolute log residuals."""
    loads, counts, measured = (np.array(v, dtype=float) for v in zip(*points, strict=True))
    ring = np.log(2.0 * (counts - 1) / counts) + loads
    grid = np.asarray(_BANDWIDTH_GRID)
    fitted = -np.log1p(np.exp(ring[None, :] - grid[:, None]))
    return float(grid[int(np.argmin(np.abs(measured[None, :] - fitted).sum(axis=1)))])


def interconnect_class(spec: AcceleratorSpec) -> str:
    """``fabric`` for NVLink/SXM-like device fabrics, else ``pcie``."""
    return "fabric" if spec.interconnect.lower() in FABRIC_INTERCONNECTS else "pcie"


Key = tuple[str, str, str, str]  # generation, model, precision, accelerator


def _one_device(reference: Sequence[ReferenceRow]) -> dict[Key, ReferenceRow]:
    return {(r.generation, r.model, r.precision, r.accelerator): r
            for r in reference if r.accelerator_count == 1}


class ScalingModel:
    """Fraction of linear speed-up kept on N devices, fitted on reference multi-device rows.

    ``min_points`` is how many (workload, count) ratios an accelerator needs before it gets
    its own slope instead of its interconnect class's. ``params`` maps reference model names
    to their parameter counts (default ``REFERENCE_PARAMS``) for the communication load.
    """

    def __init__(self, *, min_points: int = 4,
                 params: Mapping[str, float] | None = None) -> None:
        if min_points < 1:
            raise AdvisorError(f"min_points must be >= 1, got {min_points}")
        self.min_points = min_points
        self.params = dict(REFERENCE_PARAMS if params is None else params)

    def fit(self, reference: Sequence[ReferenceRow],
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """Learn slopes from rows with 1 and N devices of the same workload, and the bounds
        from each reference model's rows predicted by a fit without that model (held out,
        split-conformal over workloads, ``grouped_conformal_half_width`` of the scores
        ``max(-residual / low spread, residual / high spread)``: a workload's rows share its
        scaling, so a new workload is a new group, not a new row); returns self."""
        self.fit_point(reference, accelerators)
        singles = _one_device(reference)
        # per (class, count): each reference workload's held-out scores
        held_out: dict[bool, dict[tuple[str, int], dict[str, list[float]]]] = {
            False: defaultdict(lambda: defaultdict(list)),
            True: defaultdict(lambda: defaultdict(list))}
        worst: dict[tuple[str, int], float] = {}
        for name in sorted({r.model for r in reference}):
            without = ScalingModel(min_points=self.min_points, params=self.params).fit_point(
                [r for r in reference if r.model != name], accelerators)
            for row, spec, efficiency in self._ratios(reference, singles, accelerators):
                if row.model != name or spec is None:
                    continue
                key = (interconnect_class(spec), row.accelerator_count)
                if key not in without.spread_:
                    continue
                worst[key] = min(worst.get(key, 1.0), efficiency)
                load = self.row_load(row, singles[(row.generation, row.model, row.precision,
                                                   row.accelerator)])
                for with_load in (False, True) if load is not None else (False,):
                    spreads = without.load_spread_ if with_load else without.spread_
                    if key not in spreads:
                        continue
                    low, high = spreads[key]
                    fitted = without.efficiency(spec, row.accelerator_count,
                                                load=load if with_load else None)
                    residual = math.log(efficiency / fitted)
                    workload = f"{row.generation}/{name}/{row.precision}"
                    held_out[with_load][key][workload].append(max(-residual / low,
                                                                  residual / high))
        self.efficiency_bounds_, self.load_bounds_ = (
            {key: (grouped_conformal_half_width(by_workload, _COVERAGE), worst[key])
             for key, by_workload in held_out[with_load].items()
             if sum(map(len, by_workload.values())) >= _MIN_BOUND_ROWS}
            for with_load in (False, True))
        return self

    def fit_point(self, reference: Sequence[ReferenceRow],
                  accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """The fitted efficiency alone: slopes per accelerator and class, their spread, the
        known-load bandwidths and the in-fit spreads; returns self."""
        singles = _one_device(reference)
        per_accelerator: dict[str, list[float]] = defaultdict(list)
        for row, _, efficiency in self._ratios(reference, singles, {}):
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
        self._fit_load(reference, singles, accelerators)
        self._fit_spread(reference, singles, accelerators)
        return self

    def _fit_spread(self, reference: Sequence[ReferenceRow], singles: Mapping[Key, ReferenceRow],
                    accelerators: Mapping[str, AcceleratorSpec]) -> None:
        """Per (interconnect class, count): how far the fitted efficiency misses its own rows
        below and above (the magnitudes of the in-fit log residuals' lower and upper
        quartiles, at least ``_MIN_SPREAD``), the scales of a held-out score's two sides:
        ``spread_`` of every row as the fit predicts it (with its load where known),
        ``load_spread_`` of the rows of known load alone, one scale for both sides (the larger
        quartile's magnitude: ``physical_efficiency`` never passes 1, so its in-fit misses
        above are a floor, 0.5-1% on fabric, and a score over them would take every held-out
        miss above as a miss of tens of spreads)."""
        residuals: dict[bool, dict[tuple[str, int], list[float]]] = {
            False: defaultdict(list), True: defaultdict(list)}
        for row, spec, efficiency in self._ratios(reference, singles, accelerators):
            if spec is None:
                continue
            load = self.row_load(row, singles[(row.generation, row.model, row.precision,
                                               row.accelerator)])
            residual = math.log(efficiency / self.efficiency(spec, row.accelerator_count,
                                                             load=load))
            key = (interconnect_class(spec), row.accelerator_count)
            residuals[False][key].append(residual)
            if load is not None:
                residuals[True][key].append(residual)
        self.spread_ = {key: _quartile_spread(found) for key, found in residuals[False].items()}
        self.load_spread_ = {key: (max(spread), max(spread)) for key, found
                             in residuals[True].items() for spread in [_quartile_spread(found)]}

    def _ratios(self, reference: Sequence[ReferenceRow], singles: Mapping[Key, ReferenceRow],
                accelerators: Mapping[str, AcceleratorSpec],
                ) -> list[tuple[ReferenceRow, AcceleratorSpec | None, float]]:
        """(N-device row, its spec or None, efficiency) of every plausible 1/N pair; with
        ``accelerators`` given, only rows with a spec."""
        found = []
        for row in reference:
            one = singles.get((row.generation, row.model, row.precision, row.accelerator))
            spec = accelerators.get(row.accelerator)
            if row.accelerator_count <= 1 or one is None or (accelerators and spec is None):
                continue
            efficiency = row.samples_per_second / (row.accelerator_count * one.samples_per_second)
            if _PLAUSIBLE[0] <= efficiency <= _PLAUSIBLE[1]:
                found.append((row, spec, efficiency))
        return found

    def row_load(self, row: ReferenceRow, one: ReferenceRow) -> float | None:
        """The communication load of a reference workload (None: parameters or batch unknown)."""
        params = self.params.get(row.model)
        if params is None or one.batch_size_per_accelerator <= 0:
            return None
        return self.load(params, one.batch_size_per_accelerator, one.samples_per_second)

    @staticmethod
    def load(params: float | None, batch_size_per_device: int | None,
             samples_per_second_per_device: float) -> float | None:
        """log(gradient bytes per second of one device's compute): the communication load of
        a step; None when the parameters or the batch are not known."""
        if not params or not batch_size_per_device or samples_per_second_per_device <= 0:
            return None
        step_s = batch_size_per_device / samples_per_second_per_device
        return math.log(params * GRADIENT_BYTES_PER_PARAM / step_s)

    def _fit_load(self, reference: Sequence[ReferenceRow], singles: Mapping[Key, ReferenceRow],
                  accelerators: Mapping[str, AcceleratorSpec]) -> None:
        """The effective all-reduce bandwidth (log bytes/s) of each accelerator with
        ``min_points`` known-load ratios (``_fit_bandwidth``), the median of those of each
        (generation, interconnect class) and of each class (for accelerators with no such
        rows: a part's fabric follows its generation), and per (class, count) the median log
        miss of the fitted ``physical_efficiency`` (the topology at that count, which the ring
        alone does not know)."""
        points: dict[str, list[tuple[float, int, float]]] = defaultdict(list)
        for row, spec, efficiency in self._ratios(reference, singles, accelerators):
            load = self.row_load(row, singles[(row.generation, row.model, row.precision,
                                               row.accelerator)])
            if load is not None and spec is not None:
                points[row.accelerator].append((load, row.accelerator_count,
                                                math.log(efficiency)))
        self.bandwidth_ = {name: _fit_bandwidth(found) for name, found in points.items()
                           if len(found) >= self.min_points}
        grouped: dict[tuple[str, str], list[float]] = defaultdict(list)
        for name, own in self.bandwidth_.items():
            cls = interconnect_class(accelerators[name])
            grouped[(accelerators[name].generation, cls)].append(own)
            grouped[("", cls)].append(own)
        self.group_bandwidth_ = {key: statistics.median(v) for key, v in grouped.items()}
        self.count_offset_: dict[tuple[str, int], float] = {}  # none while fitting them
        misses: dict[tuple[str, int], list[float]] = defaultdict(list)
        for name, found in points.items():
            bandwidth = self._bandwidth(accelerators[name])
            if bandwidth is None:
                continue
            for load, count, measured in found:
                misses[(interconnect_class(accelerators[name]), count)].append(
                    measured - math.log(physical_efficiency(load, count, bandwidth)))
        self.count_offset_ = {key: statistics.median(v) for key, v in misses.items()}

    def _bandwidth(self, accelerator: AcceleratorSpec) -> float | None:
        """Fitted log all-reduce bandwidth of the accelerator, else of its generation and
        interconnect class, else of its class (None: no known-load rows of its class)."""
        own: dict[str, float] = getattr(self, "bandwidth_", {})
        if accelerator.name in own:
            return own[accelerator.name]
        groups: dict[tuple[str, str], float] = getattr(self, "group_bandwidth_", {})
        cls = interconnect_class(accelerator)
        return groups.get((accelerator.generation, cls), groups.get(("", cls)))

    def efficiency_interval(self, accelerator: AcceleratorSpec, count: int, *,
                            load: float | None = None) -> tuple[float, float]:
        """(low, high) fraction of linear speed-up kept on ``count`` devices: the fitted
        efficiency moved by the held-out 90% score quantile times the fit's own spread on
        each side, of the reference rows of its interconnect class at that count (those with
        a known load, fitted with it, when ``load`` is given; from the largest count measured
        below it, scaled per doubling, beyond the data), never above 1 (N devices never beat
        N times one) nor below the worst efficiency those rows measured."""
        point = self.efficiency(accelerator, count, load=load)
        if count <= 1:
            return point, point
        cls = interconnect_class(accelerator)
        bounds, spreads = getattr(self, "efficiency_bounds_", {}), self.spread_
        if load is not None and any(c == cls for c, _ in getattr(self, "load_bounds_", {})):
            bounds, spreads = self.load_bounds_, self.load_spread_
        measured = sorted(n for c, n in bounds if c == cls)
        below = [n for n in measured if n <= count] or measured[:1]
        if not below:  # no multi-device rows of this class: the per-doubling spread
            spread = self.log_spread(accelerator, count)
            return point * math.exp(-spread), min(1.0, point * math.exp(spread))
        score, worst = bounds[(cls, below[-1])]
        low, high = spreads[(cls, below[-1])]
        stretch = math.log2(count) / math.log2(below[-1])
        return (max(point * math.exp(-score * low * stretch), min(worst, point)),
                min(1.0, point * math.exp(score * high * stretch)))

    def slope(self, accelerator: AcceleratorSpec) -> tuple[float, bool]:
        """(loss per doubling in log space, whether the accelerator itself was seen)."""
        if accelerator.name in self.slope_:
            return self.slope_[accelerator.name], True
        return self.class_slope_[interconnect_class(accelerator)], False

    def efficiency(self, accelerator: AcceleratorSpec, count: int, *,
                   load: float | None = None) -> float:
        """Fraction of linear speed-up kept on ``count`` devices (1.0 for one), for a
        workload of communication ``load`` (None: a typical one, the fitted slope; known:
        ``physical_efficiency`` at the accelerator's or its class's fitted bandwidth)."""
        if count <= 1:
            return 1.0
        bandwidth = None if load is None else self._bandwidth(accelerator)
        if load is not None and bandwidth is not None:
            offsets = getattr(self, "count_offset_", {})
            cls = interconnect_class(accelerator)
            below = [n for c, n in offsets if c == cls and n <= count]
            offset = offsets[(cls, max(below))] if below else 0.0
            return min(1.0, physical_efficiency(load, count, bandwidth) * math.exp(offset))
        slope, _ = self.slope(accelerator)
        return min(1.0, math.exp(-slope * math.log2(count)))

    def one_device(self, samples_per_second: float, accelerator: AcceleratorSpec, count: int,
                   *, params: float | None = None,
                   batch_size_per_device: int | None = None) -> float:
        """The one-device samples/s that ``samples_per_second`` measured on ``count`` devices
        implies: ``samples_per_second / (count x efficiency)``, the efficiency at the load
        of that one device (parameters and per-device batch known), so that ``efficiency``
        carries it back to the measurement. The load grows with the one-device figure: the
        fixed point, from the per-device measurement up (each step shrinks the gap by
        ``1 - efficiency``)."""
        single = samples_per_second / max(count, 1)
        for _ in range(_ONE_DEVICE_STEPS):
            load = self.load(params, batch_size_per_device, single)
            implied = samples_per_second / (count * self.efficiency(accelerator, count,
                                                                    load=load))
            if load is None or abs(implied - single) <= 1e-9 * implied:
                return implied
            single = implied
        return single

    def log_spread(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Extra log-space half-width of the throughput interval caused by scaling."""
        if count <= 1:
            return 0.0
        _, seen = self.slope(accelerator)
        per_doubling = self.slope_spread_ * (1.0 if seen else 2.0)
        return per_doubling * math.log2(count)
