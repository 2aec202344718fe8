"""A short profile of one configuration: where a step's time goes, and the top operators.

``profile_steps`` runs a few steps under the autograd profiler (Kineto): each step's input wait (the
next batch, moved to the device), forward, backward and optimizer are timed by the clock
with a device sync between them, and the profiler's operator table gives the top
operators by self time (device time on CUDA, CPU time elsewhere). ``StepProfile`` is plain
data with a JSON round trip (``pricing.records.Record``).

``profile_op_classes`` runs a few more steps under the same profiler for the harness and sums
their self time by operator class (``probes.op_classes``): on CUDA the kernels' device time,
elsewhere the operators' CPU time (``op_class_seconds``). Torch is imported only by the
functions that profile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pricing.records import Record
from probes.errors import ProbeError
from probes.op_classes import OpClass, classify_op
from probes.vocabulary import DeviceKind

if TYPE_CHECKING:
    from probes.devices.seam import Device
    from probes.train_step import TrainStep

__all__ = ["OperatorTime", "StepProfile", "op_class_seconds", "profile_op_classes",
           "profile_steps"]

PHASES = ("input wait", "forward", "backward", "optimizer")
# torch.optim labels its steps with record_function("Optimizer.step#AdamW.step") and the like
_OPTIMIZER_LABEL = "Optimizer."
_PROFILED = (DeviceKind.CPU, DeviceKind.CUDA)  # where the profiler sees the device's own time


@dataclass(frozen=True)
class OperatorTime:
    """One operator: its self time per profiled step (seconds), calls per step, and its
    share of all operators' self time."""

    name: str
    self_time_s: float
    calls: float
    share: float


@dataclass(frozen=True)
class StepProfile(Record):
    """Mean seconds per step of each phase over ``steps`` profiled steps of ``setting``,
    and the top operators; ``operator_time`` says which time ranks them."""

    _error = ProbeError

    setting: str
    steps: int
    input_wait_s: float
    forward_s: float
    backward_s: float
    optimizer_s: float
    top_operators: tuple[OperatorTime, ...]
    operator_time: str = "self CPU time"

    def phases(self) -> tuple[tuple[str, float], ...]:
        """(phase, seconds per step) in step order."""
        return tuple(zip(PHASES, (self.input_wait_s, self.forward_s, self.backward_s,
                                  self.optimizer_s), strict=True))

    def shares(self) -> tuple[tuple[str, float, float], ...]:
        """(phase, seconds per step, share of the step) in step order (shares 0 when the
        step took no measurable time)."""
        total = sum(seconds for _, seconds in self.phases()) or 1.0
        return tuple((name, seconds, seconds / total) for name, seconds in self.phases())


def _profiler(device: Device) -> AbstractContextManager[Any]:
    """The autograd profiler (Kineto) recording CPU operators, and CUDA kernels on a CUDA
    device; its ``function_events`` are the events. ``torch.profiler.profile`` records the
    same, but its first start imports ``torch._inductor`` (it checks inductor's cudagraphs
    setting): 2 to 3 s in every probe process, for a step that never compiles."""
    from torch.autograd import profiler

    on_device = device.kind == DeviceKind.CUDA
    return profiler.profile(use_cpu=True, use_device="cuda" if on_device else None,
                            use_kineto=True)


def _operators(prof: Any, *, on_device: bool, steps: int, top: int) -> tuple[OperatorTime, ...]:
    events = []
    for event in prof.key_averages():
        micros = float(getattr(event, "self_device_time_total", 0.0) if on_device
                       else event.self_cpu_time_total)
        if micros > 0:
            events.append((str(event.key), micros, int(event.count)))
    total = sum(micros for _, micros, _ in events) or 1.0
    events.sort(key=lambda e: -e[1])
    return tuple(OperatorTime(name, micros / 1e6 / steps, count / steps, micros / total)
                 for name, micros, count in events[:top])


def profile_steps(step: TrainStep, feed: Callable[[], Any], *, device: Device,
                  clock: Callable[[], float], setting: str, steps: int, deadline_s: float,
                  top: int = 10) -> StepProfile:
    """Profile up to ``steps`` steps (at least one; no new step starts past ``deadline_s``)
    of a step that has already run once (warm). ``feed()`` returns the next batch on the
    device."""
    on_device = device.kind == DeviceKind.CUDA
    totals = [0.0, 0.0, 0.0, 0.0]
    done = 0
    with _profiler(device) as prof:
        while done < steps and (done == 0 or clock() < deadline_s):
            start = clock()
            batch = feed()
            device.synchronize()
            waited = clock() - start
            for i, seconds in enumerate((waited, *step.phases(batch, clock))):
                totals[i] += seconds
            done += 1
    wait, forward, backward, update = (t / done for t in totals)
    return StepProfile(setting, done, wait, forward, backward, update,
                       top_operators=_operators(prof, on_device=on_device, steps=done, top=top),
                       operator_time="self CUDA time" if on_device else "self CPU time")


def _class_of(event: Any, *, on_device: bool) -> OpClass | None:
    """The class ``event``'s self time counts under: ``optimizer`` inside torch.optim's step,
    else the class of the outermost aten operator it runs in that launches work (``linear``
    holds its ``addmm`` and the bias copy, as a traced step counts them). None for time
    outside any aten operator on the CPU (the autograd engine, Python); a kernel that only
    views or allocations launched counts as ``other``."""
    classes: list[OpClass | None] = []
    optimizer = False
    node = event
    while node is not None and not optimizer:
        name = str(node.name)
        optimizer = name.startswith(_OPTIMIZER_LABEL)
        if name.startswith("aten::"):
            classes.append(classify_op(name))
        node = node.cpu_parent
    if not (classes or on_device):
        return None
    if optimizer:
        return OpClass.OPTIMIZER
    found = next((c for c in reversed(classes) if c is not None), None)
    return OpClass.OTHER if found is None and on_device else found


def op_class_seconds(events: Iterable[Any], *, on_device: bool, steps: int) -> dict[str, float]:
    """Self seconds per step by operator class (class name -> seconds, classes with time
    only) of ``steps`` profiled steps, from the profiler's events (``function_events``).
    ``on_device``: each CPU-side operator's CUDA kernels (its self device time), and kernels
    that no operator launched as ``other``; else each operator's self CPU time."""
    seconds: dict[OpClass, float] = {}
    kernels_us = attributed_us = 0.0
    for event in events:
        if event.is_async:
            continue
        if event.device_type.name != "CPU":  # a kernel (or memcpy, memset) on the device
            kernels_us += float(event.self_device_time_total)
            continue
        micros = float(event.self_device_time_total if on_device
                       else event.self_cpu_time_total)
        op_class = _class_of(event, on_device=on_device) if micros > 0 else None
        if op_class is not None:
            seconds[op_class] = seconds.get(op_class, 0.0) + micros / 1e6
            attributed_us += micros
    if on_device and kernels_us > attributed_us:
        seconds[OpClass.OTHER] = seconds.get(OpClass.OTHER, 0.0) + (kernels_us - attributed_us) / 1e6
    return {str(c): s / steps for c, s in sorted(seconds.items()) if s > 0}


def profile_op_classes(run_step: Callable[[], None], *, device: Device,
                       clock: Callable[[], float], steps: int,
                       deadline_s: float) -> dict[str, float]:
    """``op_class_seconds`` of up to ``steps`` more steps of a warm step (``run_step()`` runs
    one and waits for the device); no step starts at or past ``deadline_s``, so none (an empty
    dict) once it has passed. None either on XLA, Gaudi or Neuron devices: there the
    operators' CPU time is tracing, not the device's work. Raises what the profiler or the
    step raise."""
    if steps < 1 or device.kind not in _PROFILED or clock() >= deadline_s:
        return {}
    done = 0
    with _profiler(device) as prof:
        while done < steps and clock() < deadline_s:
            run_step()
            done += 1
    if done == 0:
        return {}
    return op_class_seconds(prof.function_events, on_device=device.kind == DeviceKind.CUDA,
                            steps=done)
