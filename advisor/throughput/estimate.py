"""Throughput estimates and the model that predicts them.

``ThroughputModel`` is the seam: scikit-learn style (keyword hyper-parameters in
``__init__``, ``fit(X, y=None, *, accelerators)`` on reference rows returns self, learned
state ends in ``_``) and ``estimate`` answers one question with its interval. The model
``recommend`` uses is ``advisor.throughput.transfer.TransferModel`` (a scikit-learn
estimator; its fitted state is cached as ``PlainTransferModel``);
``advisor.throughput.baseline`` holds the simple baselines it is measured against.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Self

from advisor.errors import AdvisorError
from advisor.profiling import OpCost, OpMix
from advisor.spec import Precision
from advisor.throughput.reference import ReferenceRow
from pricing import AcceleratorSpec

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "MIN_STEP_SECONDS",
    "Basis",
    "Measurement",
    "ThroughputEstimate",
    "ThroughputModel",
    "WorkloadFeatures",
    "architecture_class",
    "as_fp16",
    "peak_flops",
    "precision_key",
    "reference_targets",
]


# No training step (forward, backward, optimizer update) of an eager framework runs faster
# than this, whatever its FLOPs: tens of kernel launches and the optimizer's host-side work.
MIN_STEP_SECONDS = 1e-3


class Basis(enum.StrEnum):
    """Where a throughput figure comes from, strongest first."""

    MEASURED = "measured"
    TUNED = "tuned"
    PREDICTED = "predicted"
    PRIOR = "prior"

    @property
    def is_measured(self) -> bool:
        """True for figures a probe of this workload measured (as specified, or tuned)."""
        return self in (Basis.MEASURED, Basis.TUNED)


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

    def step_capped(self, batch_size: int) -> ThroughputEstimate:
        """At most ``batch_size`` samples per ``MIN_STEP_SECONDS`` (one step of the global
        batch); FLOPs-based figures for small models exceed it. A capped estimate keeps its
        relative lower width (the step may well be slower than the floor). Measured figures
        and tuned figures are kept."""
        cap = batch_size / MIN_STEP_SECONDS
        if self.basis.is_measured or self.samples_per_second_high <= cap:
            return self
        point = min(self.samples_per_second, cap)
        low = self.samples_per_second_low * point / self.samples_per_second
        return ThroughputEstimate(point, low, cap, self.basis)


@dataclass(frozen=True, slots=True)
class WorkloadFeatures:
    """What the throughput model knows about the workload being predicted.

    ``precision`` is None when unknown (e.g. rows of a user's benchmark file).
    ``op_mix`` (the traced operator mix, ``advisor.profiling.op_profile``) and ``batch_size_per_device``
    let the model predict with no probe from the operators' roofline; None keeps the
    FLOPs-per-sample prior. ``reference_stack``: the step runs in the software stack the
    reference tables were measured in (a reference row's own workload); a user's step runs
    in its own, and its no-probe interval carries the stack-to-stack spread too.
    """

    precision: Precision | None
    flops_per_sample: float | None = None
    params: int | None = None
    name: str = ""
    conv_flops_fraction: float | None = None
    op_mix: OpMix | None = None
    batch_size_per_device: int | None = None
    reference_stack: bool = False


@dataclass(frozen=True, slots=True)
class Measurement:
    """A measured throughput of this workload (a probe) on ``accelerator_count`` devices;
    ``basis`` is ``tuned`` when it is the probe's tuned configuration, not the spec's;
    ``rel_halfwidth`` the probe's own relative 95% half-width (None: not known, the usual
    probe-to-probe spread stands in); ``batch_size`` the per-device batch it ran (None: the
    workload's); ``op_class_seconds`` its device seconds per step per operator class, as
    (class name, seconds) pairs (empty: not recorded; the roofline splits the step)."""

    accelerator: str
    samples_per_second: float
    accelerator_count: int = 1
    basis: Basis = Basis.MEASURED
    rel_halfwidth: float | None = None
    batch_size: int | None = None
    op_class_seconds: tuple[tuple[str, float], ...] = ()


class ThroughputModel(abc.ABC):
    """Predicts a workload's training throughput on an accelerator type and count.

    ``fit`` learns from reference measurements of other workloads (rows ``X``, their
    samples/s or ``y``, as ``reference_targets`` reads them) and returns self;
    ``estimate`` may use measurements of this workload (probes), which always win on the
    accelerator they were taken on. Implementations are not thread safe while fitting.
    """

    @abc.abstractmethod
    def fit(self, X: Sequence[ReferenceRow], y: npt.ArrayLike | None = None, *,
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """Learn from reference rows; returns self."""

    @abc.abstractmethod
    def estimate(
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

    def evidence_note(self, accelerator: str) -> str | None:
        """One line on what a no-probe figure for ``accelerator`` rests on beyond the model's
        reference rows (published runs and their software stack); None when nothing to add."""
        del accelerator
        return None


def reference_targets(X: Sequence[ReferenceRow], y: npt.ArrayLike | None,
                      ) -> list[ReferenceRow]:
    """The rows ``fit`` learns from: ``X`` as given, or with ``y`` as their samples/s (one
    value per row, as scikit-learn passes a target)."""
    if y is None:
        return list(X)
    import numpy as np  # the seam's module stays light; numpy is loaded by any fit anyway

    targets = np.asarray(y, dtype=float).ravel()
    if len(targets) != len(X):
        raise AdvisorError(f"y has {len(targets)} values for {len(X)} reference rows; give "
                           "one samples/s per row, or none")
    return [replace(row, samples_per_second=float(v))
            for row, v in zip(X, targets, strict=True)]


def precision_key(precision: Precision | None, spec: AcceleratorSpec) -> str:
    """``mixed`` when the step runs at half width on this hardware, else ``fp32``.

    Accelerators with no fp32 figure (TPUs, Gaudi) run matmuls in bf16 passes anyway;
    an unknown precision counts as ``mixed`` (what current training recipes use).
    """
    if precision is None:
        return "mixed"
    half = precision is Precision.FP16 or (precision is Precision.BF16 and spec.supports_bf16)
    return "mixed" if half or spec.fp32_tflops is None else "fp32"


def as_fp16(workload: WorkloadFeatures) -> WorkloadFeatures:
    """The same half-width step under fp16 autocast: the precision is fp16 and the traced
    bf16 operators are priced as fp16 (same FLOPs and bytes), so that a part without bf16
    (V100, T4) runs them on its tensor cores, as its fp16 published runs did."""
    mix = workload.op_mix
    if mix is not None:
        def half(costs: tuple[OpCost, ...]) -> tuple[OpCost, ...]:
            return tuple(replace(c, dtype="float16") if c.dtype == "bfloat16" else c
                         for c in costs)

        mix = replace(mix, per_sample=half(mix.per_sample), per_step=half(mix.per_step))
    return replace(workload, precision=Precision.FP16, op_mix=mix)


def architecture_class(spec: AcceleratorSpec) -> tuple[bool, bool]:
    """(tensor cores, bf16): Pascal and older / Volta and Turing / Ampere and newer for
    NVIDIA, classes whose kernels differ beyond what the peak figures say (a V100 is no slower
    A100), so evidence does not carry across them unchecked."""
    return spec.tensor_cores, spec.supports_bf16


def peak_flops(spec: AcceleratorSpec, precision_key: str) -> float:
    """Peak FLOP/s for the precision key; fp32 on tensor-core GPUs with bf16 runs as TF32
    (half the dense bf16 rate), as the reference "fp32" rows on Ampere and newer did."""
    if precision_key == "fp32" and spec.tensor_cores and spec.supports_bf16 and spec.bf16_tflops:
        return max(spec.fp32_tflops or 0.0, spec.bf16_tflops / 2) * 1e12
    return spec.peak_tflops(low_precision=precision_key == "mixed") * 1e12
