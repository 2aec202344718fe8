"""Throughput estimates and the model that predicts them.

``ThroughputModel`` is the seam: scikit-learn style (keyword hyper-parameters in
``__init__``, ``fit`` returns self, learned state ends in ``_``). ``PeakFractionModel`` is the
first honest version: it learns from the reference data which fraction of its datasheet peak
each accelerator achieves, and scales by the workload's FLOPs per sample.
"""

from __future__ import annotations

import abc
import enum
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

from advisor.errors import AdvisorError
from advisor.reference import REFERENCE_FLOPS_PER_SAMPLE, ReferenceRow
from advisor.spec import Precision
from pricing import AcceleratorSpec

__all__ = [
    "Basis",
    "Measurement",
    "PeakFractionModel",
    "ThroughputEstimate",
    "ThroughputModel",
    "WorkloadFeatures",
    "peak_flops",
    "precision_key",
]

DEFAULT_SCALING_EFFICIENCY = 0.90


class Basis(enum.StrEnum):
    """Where a throughput figure comes from, strongest first."""

    MEASURED = "measured"
    PREDICTED = "predicted"
    PRIOR = "prior"


@dataclass(frozen=True, slots=True)
class ThroughputEstimate:
    """Training samples per second on a whole instance, with a low/high interval."""

    samples_per_second: float
    samples_per_second_low: float
    samples_per_second_high: float
    basis: Basis

    def __post_init__(self) -> None:
        if not 0 < self.samples_per_second_low <= self.samples_per_second <= self.samples_per_second_high:
            raise AdvisorError(
                "throughput interval must satisfy 0 < low <= estimate <= high, got "
                f"{self.samples_per_second_low} <= {self.samples_per_second} <= "
                f"{self.samples_per_second_high}"
            )

    def scaled(self, factor: float) -> ThroughputEstimate:
        """The same estimate times ``factor`` (e.g. per device to per instance)."""
        return ThroughputEstimate(
            self.samples_per_second * factor, self.samples_per_second_low * factor,
            self.samples_per_second_high * factor, self.basis,
        )


@dataclass(frozen=True, slots=True)
class WorkloadFeatures:
    """What the throughput model knows about the workload being predicted.

    ``precision`` is None when unknown (e.g. rows of a user's benchmark file).
    """

    precision: Precision | None
    flops_per_sample: float | None = None
    params: int | None = None
    name: str = ""
    conv_flops_fraction: float | None = None


@dataclass(frozen=True, slots=True)
class Measurement:
    """A measured throughput of this workload (a probe) on ``accelerator_count`` devices."""

    accelerator: str
    samples_per_second: float
    accelerator_count: int = 1


class ThroughputModel(abc.ABC):
    """Predicts a workload's training throughput on an accelerator type and count.

    ``fit`` learns from reference measurements of other workloads and returns self;
    ``predict`` may use measurements of this workload (probes), which always win on the
    accelerator they were taken on. Implementations are not thread safe while fitting.
    """

    @abc.abstractmethod
    def fit(self, reference: Sequence[ReferenceRow],
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """Learn from reference rows; returns self."""

    @abc.abstractmethod
    def predict(
        self,
        workload: WorkloadFeatures,
        accelerator: AcceleratorSpec,
        *,
        count: int = 1,
        measurements: Sequence[Measurement] = (),
    ) -> ThroughputEstimate:
        """Samples/s of the workload on ``count`` devices of ``accelerator``."""

    @abc.abstractmethod
    def scaling_efficiency(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Fraction of linear speed-up kept on ``count`` devices (1.0 for one)."""


def precision_key(precision: Precision | None, spec: AcceleratorSpec) -> str:
    """``mixed`` when the step runs at half width on this hardware, else ``fp32``.

    Accelerators with no fp32 figure (TPUs, Gaudi) run matmuls in bf16 passes anyway;
    an unknown precision counts as ``mixed`` (what current training recipes use).
    """
    if precision is None:
        return "mixed"
    half = precision is Precision.FP16 or (precision is Precision.BF16 and spec.supports_bf16)
    return "mixed" if half or spec.fp32_tflops is None else "fp32"


def peak_flops(spec: AcceleratorSpec, precision_key: str) -> float:
    """Peak FLOP/s for the precision key; fp32 on tensor-core GPUs with bf16 runs as TF32
    (half the dense bf16 rate), as the reference "fp32" rows on Ampere and newer did."""
    if precision_key == "fp32" and spec.tensor_cores and spec.supports_bf16 and spec.bf16_tflops:
        return max(spec.fp32_tflops or 0.0, spec.bf16_tflops / 2) * 1e12
    return spec.peak_tflops(low_precision=precision_key == "mixed") * 1e12


class PeakFractionModel(ThroughputModel):
    """Samples/s = achieved fraction of peak x peak FLOP/s / FLOPs per sample.

    The fraction per (accelerator, precision) is the median over reference models with
    known FLOPs; its spread over those models gives the interval. Accelerators absent from
    the reference data take the median fraction of their architecture generation, or of all
    accelerators, with the interval widened by ``unseen_widening``.
    """

    def __init__(self, *, generation: str | None = None, unseen_widening: float = 1.5,
                 default_scaling_efficiency: float = DEFAULT_SCALING_EFFICIENCY) -> None:
        self.generation = generation
        self.unseen_widening = unseen_widening
        self.default_scaling_efficiency = default_scaling_efficiency

    def fit(self, reference: Sequence[ReferenceRow],
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        fractions: dict[tuple[str, str], list[float]] = defaultdict(list)
        singles: dict[tuple[str, str, str, str], float] = {}
        ratios: dict[int, list[float]] = defaultdict(list)
        rows = [r for r in reference if self.generation in (None, r.generation)]
        for row in rows:
            if row.accelerator_count == 1:
                singles[(row.generation, row.model, row.precision, row.accelerator)] = (
                    row.samples_per_second)
            spec = accelerators.get(row.accelerator)
            flops = REFERENCE_FLOPS_PER_SAMPLE.get(row.model)
            if row.accelerator_count == 1 and spec is not None and flops is not None:
                achieved = row.samples_per_second * flops
                fractions[(row.accelerator, row.precision)].append(
                    achieved / peak_flops(spec, row.precision))
        for row in rows:
            one = singles.get((row.generation, row.model, row.precision, row.accelerator))
            if row.accelerator_count > 1 and one:
                ratios[row.accelerator_count].append(
                    row.samples_per_second / (row.accelerator_count * one))
        if not fractions:
            raise AdvisorError("reference data has no single-accelerator rows of a model "
                               "with known FLOPs; cannot fit the throughput model")
        self.fraction_ = {k: statistics.median(v) for k, v in fractions.items()}
        self.fraction_range_ = {k: (min(v), max(v)) for k, v in fractions.items()}
        by_generation: dict[tuple[str, str], list[float]] = defaultdict(list)
        by_precision: dict[str, list[float]] = defaultdict(list)
        for (name, precision), value in self.fraction_.items():
            by_generation[(accelerators[name].generation, precision)].append(value)
            by_precision[precision].append(value)
        self.generation_fraction_ = {k: statistics.median(v) for k, v in by_generation.items()}
        self.global_fraction_ = {k: statistics.median(v) for k, v in by_precision.items()}
        self.global_range_ = {k: (min(v), max(v)) for k, v in by_precision.items()}
        self.scaling_ = {n: min(1.0, statistics.median(v)) for n, v in ratios.items()}
        return self

    def _fraction(self, spec: AcceleratorSpec, precision_key: str) -> tuple[float, float, float, bool]:
        """(fraction, low, high, seen) for this accelerator and precision."""
        key = (spec.name, precision_key)
        if key in self.fraction_:
            low, high = self.fraction_range_[key]
            return self.fraction_[key], low, high, True
        fraction = self.generation_fraction_.get(
            (spec.generation, precision_key), self.global_fraction_[precision_key])
        low, high = self.global_range_[precision_key]
        return fraction, min(low, fraction / self.unseen_widening), max(
            high, fraction * self.unseen_widening), False

    def scaling_efficiency(self, accelerator: AcceleratorSpec, count: int) -> float:  # noqa: ARG002
        if count <= 1:
            return 1.0
        known = [n for n in self.scaling_ if n <= count]
        if not known:
            return self.default_scaling_efficiency
        return self.scaling_[max(known)]

    def predict(
        self,
        workload: WorkloadFeatures,
        accelerator: AcceleratorSpec,
        *,
        count: int = 1,
        measurements: Sequence[Measurement] = (),
    ) -> ThroughputEstimate:
        for m in measurements:
            if m.accelerator == accelerator.name:
                per_device = m.samples_per_second / (
                    m.accelerator_count * self.scaling_efficiency(accelerator, m.accelerator_count))
                scale = count * self.scaling_efficiency(accelerator, count)
                return ThroughputEstimate(per_device * scale, per_device * scale * 0.97,
                                          per_device * scale * 1.03, Basis.MEASURED)
        if not workload.flops_per_sample:
            raise AdvisorError("the workload has no FLOPs per sample; profile it or give "
                               "profile.flops_per_sample in model.yaml")
        key = precision_key(workload.precision, accelerator)
        fraction, low, high, seen = self._fraction(accelerator, key)
        peak = peak_flops(accelerator, key)
        scale = count * self.scaling_efficiency(accelerator, count) * peak / workload.flops_per_sample
        return ThroughputEstimate(
            fraction * scale, min(low, fraction) * scale, max(high, fraction) * scale,
            Basis.PREDICTED if seen else Basis.PRIOR,
        )
