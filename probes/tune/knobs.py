"""The tuning knobs as data: which apply on which device and model, and what each changes.

Pure (no torch). ``KNOBS`` holds one ``KnobSpec`` per knob: the ``StepConfig`` field it sets,
whether it changes the numerics (precision, batch: a convergence check is needed before
training with it), whether it is a setting at all (cached input is a bound, not something a
user can apply), the device kinds it does not apply to with the reason, and what the
workload must have. ``plan_knobs`` turns that table, a device's traits and a workload's
traits into the trials to measure and the knobs skipped with their reasons; ``combine``
applies the chosen settings to the baseline, holding numerics-changing ones back unless
they are explicitly allowed.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pricing.records import Record
from probes.errors import ProbeError
from probes.vocabulary import DeviceKind, Precision

__all__ = [
    "COMPILER_BACKENDS",
    "KNOBS",
    "Combination",
    "DeviceTraits",
    "Knob",
    "KnobPlan",
    "KnobSpec",
    "LoaderKind",
    "Needs",
    "Skipped",
    "StepConfig",
    "Trial",
    "WorkloadTraits",
    "combine",
    "knob_spec",
    "plan_knobs",
]


class Knob(enum.StrEnum):
    """One thing the tuner changes, one at a time."""

    PRECISION = "precision"
    MEMORY_FORMAT = "memory_format"
    CUDNN_BENCHMARK = "cudnn_benchmark"
    COMPILER = "compiler"
    BATCH = "batch"
    LOADER_WORKERS = "num_workers"
    PIN_MEMORY = "pin_memory"
    INPUT = "input"


class Needs(enum.StrEnum):
    """What the workload must have for a knob to apply."""

    NOTHING = "nothing"
    CONV2D = "conv2d"          # 2-D (or 3-D) convolutions: channels-last and cuDNN autotuning
                               # change only those
    DATALOADER = "dataloader"  # make_loader returns a torch DataLoader (workers can be set)
    LOADER = "loader"          # make_loader exists at all


class LoaderKind(enum.StrEnum):
    """What the entrypoint's ``make_loader`` gives."""

    NONE = "none"
    ITERABLE = "iterable"
    DATALOADER = "dataloader"


# The torch.compile backend per device kind ("the XLA path" on TPU); a kind not here has none.
COMPILER_BACKENDS: Mapping[DeviceKind, str] = {
    DeviceKind.CPU: "inductor", DeviceKind.CUDA: "inductor", DeviceKind.XLA: "openxla",
    DeviceKind.HPU: "hpu_backend"}


@dataclass(frozen=True)
class KnobSpec:
    """One knob: the ``StepConfig`` field it sets, whether it changes numerics, whether it
    is a setting a user can apply, the device kinds it does not apply to (kind -> why),
    what the workload needs, whether its trials read the real loader (``on_loader``; the
    others time the step on one cached batch), and the set-up seconds its first step may
    take on top of measuring (compiling)."""

    knob: Knob
    config_field: str
    changes_numerics: bool
    settable: bool = True
    not_on: Mapping[DeviceKind, str] = field(default_factory=dict)
    needs: Needs = Needs.NOTHING
    on_loader: bool = False
    setup_s: float = 0.0


_LAYOUT_CHOSEN = "the XLA compiler chooses memory layouts itself"
_NOT_CUDA = (DeviceKind.CPU, DeviceKind.XLA, DeviceKind.HPU, DeviceKind.NEURON)
_NO_CUDNN = ("cuDNN's convolution autotuning (torch.backends.cudnn.benchmark) exists on CUDA "
             "and ROCm GPUs only")
KNOBS: tuple[KnobSpec, ...] = (
    KnobSpec(Knob.INPUT, "cached_input", changes_numerics=False, settable=False,
             needs=Needs.LOADER, on_loader=True),
    KnobSpec(Knob.PRECISION, "precision", changes_numerics=True),
    KnobSpec(Knob.MEMORY_FORMAT, "channels_last", changes_numerics=False, needs=Needs.CONV2D,
             not_on={DeviceKind.XLA: _LAYOUT_CHOSEN, DeviceKind.NEURON: _LAYOUT_CHOSEN,
                     DeviceKind.HPU: "the Gaudi graph compiler chooses memory layouts itself"}),
    KnobSpec(Knob.CUDNN_BENCHMARK, "cudnn_benchmark", changes_numerics=False,
             needs=Needs.CONV2D, not_on=dict.fromkeys(_NOT_CUDA, _NO_CUDNN)),
    KnobSpec(Knob.LOADER_WORKERS, "num_workers", changes_numerics=False,
             needs=Needs.DATALOADER, on_loader=True),
    KnobSpec(Knob.PIN_MEMORY, "pin_memory", changes_numerics=False, needs=Needs.DATALOADER,
             on_loader=True,
             not_on=dict.fromkeys(_NOT_CUDA,
                                  "pinned host memory only speeds up copies to CUDA devices")),
    KnobSpec(Knob.BATCH, "batch_size", changes_numerics=True),
    KnobSpec(Knob.COMPILER, "compiler", changes_numerics=False, setup_s=60.0,
             not_on={DeviceKind.NEURON: "torch-neuronx trains through XLA's lazy tensors already; "
                               "torch.compile is not offered for Neuron training"}),
)
_BY_KNOB = {spec.knob: spec for spec in KNOBS}


def knob_spec(knob: Knob) -> KnobSpec:
    """The table row of ``knob``."""
    return _BY_KNOB[knob]


class _DeviceLike(Protocol):
    kind: DeviceKind

    def supports_bf16(self) -> bool: ...

    def supports_tf32(self) -> bool: ...


@dataclass(frozen=True)
class DeviceTraits:
    """What the knob model needs to know of a device: its kind (cpu, cuda, xla, hpu,
    neuron) and which reduced precisions it computes natively."""

    kind: DeviceKind
    supports_bf16: bool
    supports_tf32: bool

    @classmethod
    def of(cls, device: _DeviceLike) -> DeviceTraits:
        """The traits of a ``probes.devices.Device`` (or anything shaped like one)."""
        return cls(device.kind, device.supports_bf16(), device.supports_tf32())

    def precisions(self) -> tuple[Precision, ...]:
        """fp32 everywhere; TF32 and bf16 where native; fp16 on CUDA (with a loss scaler)."""
        found = [Precision.FP32]
        if self.supports_tf32:
            found.append(Precision.TF32)
        if self.supports_bf16:
            found.append(Precision.BF16)
        if self.kind == DeviceKind.CUDA:
            found.append(Precision.FP16)
        return tuple(found)


@dataclass(frozen=True)
class WorkloadTraits:
    """What the knob model needs to know of a workload: 2-D/3-D convolutions, the kind of
    loader, and the loader's own ``num_workers`` and ``pin_memory`` (for a DataLoader)."""

    convolutional: bool
    loader: LoaderKind = LoaderKind.NONE
    loader_type: str = ""
    loader_workers: int | None = None
    loader_pin_memory: bool | None = None


@dataclass(frozen=True)
class StepConfig(Record):
    """One configuration of the step: precision, per-device batch, memory format, compiler
    backend (None: eager), cuDNN convolution autotuning (``torch.backends.cudnn.benchmark``),
    cached batch or the real loader, and the loader's ``num_workers`` and ``pin_memory``
    (None: as the entrypoint's loader has them). It rides in a tune's JSON (a ``Record``)."""

    _error = ProbeError

    precision: Precision
    batch_size: int
    channels_last: bool = False
    compiler: str | None = None
    cudnn_benchmark: bool = False
    cached_input: bool = True
    num_workers: int | None = None
    pin_memory: bool | None = None

    def setting(self, knob: Knob) -> str:
        """This configuration's value of ``knob`` in words (``bf16``, ``batch 64``)."""
        text: dict[Knob, str] = {
            Knob.PRECISION: str(self.precision), Knob.BATCH: f"batch {self.batch_size}",
            Knob.MEMORY_FORMAT: "channels_last" if self.channels_last else "contiguous",
            Knob.COMPILER: f"torch.compile ({self.compiler})" if self.compiler else "eager",
            Knob.CUDNN_BENCHMARK: f"cudnn.benchmark={self.cudnn_benchmark}",
            Knob.INPUT: "cached batch" if self.cached_input else "real loader",
            Knob.LOADER_WORKERS: f"num_workers={self.num_workers}",
            Knob.PIN_MEMORY: f"pin_memory={self.pin_memory}",
        }
        return text[knob]

    def describe(self) -> str:
        """The whole configuration in words, cuDNN autotuning only when on, the loader's
        settings only when it is used."""
        knobs = [Knob.PRECISION, Knob.BATCH, Knob.MEMORY_FORMAT, Knob.COMPILER, Knob.INPUT]
        if self.cudnn_benchmark:
            knobs.insert(4, Knob.CUDNN_BENCHMARK)
        if not self.cached_input:
            knobs += [k for k, v in ((Knob.LOADER_WORKERS, self.num_workers),
                                     (Knob.PIN_MEMORY, self.pin_memory)) if v is not None]
        return ", ".join(self.setting(k) for k in knobs)

@dataclass(frozen=True)
class Trial:
    """One A/B trial: the knob it changes and the baseline with that one change."""

    knob: Knob
    config: StepConfig


@dataclass(frozen=True)
class Skipped:
    """A knob that does not apply here, and why."""

    knob: Knob
    reason: str


@dataclass(frozen=True)
class KnobPlan:
    """The trials to measure, in order, and the knobs skipped with their reasons."""

    trials: tuple[Trial, ...]
    skipped: tuple[Skipped, ...]


def _why_not(spec: KnobSpec, device: DeviceTraits, workload: WorkloadTraits) -> str | None:
    """Why ``spec`` does not apply (None: it does)."""
    if device.kind in spec.not_on:
        return f"not on {device.kind}: {spec.not_on[device.kind]}"
    if spec.knob is Knob.COMPILER and device.kind not in COMPILER_BACKENDS:
        return f"no torch.compile backend is known for {device.kind}"
    if spec.needs is Needs.CONV2D and not workload.convolutional:
        return f"the model has no 2-D or 3-D convolutions ({spec.knob} changes only those)"
    if spec.needs in (Needs.LOADER, Needs.DATALOADER) and workload.loader is LoaderKind.NONE:
        return "the entrypoint gives no make_loader (built-in models make no claim about input)"
    if spec.needs is Needs.DATALOADER and workload.loader is not LoaderKind.DATALOADER:
        return (f"make_loader returns a {workload.loader_type or 'plain iterable'}, not a torch "
                "DataLoader, so its workers and pinned memory cannot be set")
    return None


def _worker_counts(baseline: int, cpu_count: int) -> list[int]:
    """None, half, double and all the CPUs, apart from the loader's own count."""
    counts = {0, max(1, baseline // 2), min(cpu_count, max(1, 2 * baseline)), cpu_count}
    return sorted(counts - {baseline})


def _values(spec: KnobSpec, device: DeviceTraits, workload: WorkloadTraits,
            baseline: StepConfig, cpu_count: int) -> list[Any]:
    """The values of ``spec``'s field to try, the baseline's own left out."""
    if spec.knob is Knob.PRECISION:
        return [p for p in device.precisions() if p is not baseline.precision]
    if spec.knob is Knob.MEMORY_FORMAT:
        return [not baseline.channels_last]
    if spec.knob is Knob.CUDNN_BENCHMARK:
        return [not baseline.cudnn_benchmark]
    if spec.knob is Knob.COMPILER:
        return [COMPILER_BACKENDS[device.kind]] if baseline.compiler is None else [None]
    if spec.knob is Knob.BATCH:
        return [baseline.batch_size * 2, baseline.batch_size * 4]
    if spec.knob is Knob.LOADER_WORKERS:
        return _worker_counts(workload.loader_workers or 0, cpu_count)
    if spec.knob is Knob.PIN_MEMORY:
        return [not workload.loader_pin_memory]
    return [not baseline.cached_input]  # Knob.INPUT


def plan_knobs(device: DeviceTraits, workload: WorkloadTraits, baseline: StepConfig, *,
               cpu_count: int) -> KnobPlan:
    """Every trial that applies, in ``KNOBS`` order (cheap ones first, the compiler last),
    and every knob that does not apply with its reason. Batch trials are the first rungs of
    a doubling ladder; the tuner stops climbing at out-of-memory or the time box."""
    trials: list[Trial] = []
    skipped: list[Skipped] = []
    for spec in KNOBS:
        why = _why_not(spec, device, workload)
        values = [] if why else _values(spec, device, workload, baseline, cpu_count)
        if why is None and not values:
            why = (f"the {device.kind} device offers no other {spec.knob} than the "
                   f"baseline's {baseline.setting(spec.knob)}")
        if why is not None:
            skipped.append(Skipped(spec.knob, why))
            continue
        loader = {"cached_input": False} if spec.on_loader else {}
        trials += [Trial(spec.knob, replace(baseline, **{spec.config_field: v, **loader}))
                   for v in values]
    return KnobPlan(tuple(trials), tuple(skipped))


@dataclass(frozen=True)
class Combination:
    """The baseline with the chosen settings applied; ``applied`` and ``held_back`` (those
    that change numerics and were not allowed) name the knobs."""

    config: StepConfig
    applied: tuple[Knob, ...]
    held_back: tuple[Knob, ...]

    @property
    def changes_numerics(self) -> bool:
        """True when an applied knob changes the numerics (needs a convergence check)."""
        return any(knob_spec(k).changes_numerics for k in self.applied)


def combine(baseline: StepConfig, chosen: Mapping[Knob, StepConfig], *,
            allow_numerics: bool) -> Combination:
    """``baseline`` with each chosen step knob's value taken from its trial's configuration.

    A knob that changes numerics (precision, batch) is held back unless ``allow_numerics``;
    loader knobs (measured on the loader, not the step) and knobs that are no setting
    (cached input) are not applied here.
    """
    config, applied, held = baseline, [], []
    for spec in KNOBS:
        trial = chosen.get(spec.knob)
        if trial is None or not spec.settable or spec.on_loader:
            continue
        if spec.changes_numerics and not allow_numerics:
            held.append(spec.knob)
            continue
        config = replace(config, **{spec.config_field: getattr(trial, spec.config_field)})
        applied.append(spec.knob)
    return Combination(config, tuple(applied), tuple(held))
