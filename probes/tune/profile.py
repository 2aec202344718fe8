"""A short profile of one configuration: where a step's time goes, and the top operators.

``profile_steps`` runs a few steps under ``torch.profiler``: each step's input wait (the
next batch, moved to the device), forward, backward and optimizer are timed by the clock
with a device sync between them, and the profiler's operator table gives the top
operators by self time (device time on CUDA, CPU time elsewhere). ``StepProfile`` is plain
data with a JSON round trip (``pricing.records.Record``); torch is imported only by ``profile_steps``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pricing.records import Record
from probes.errors import ProbeError
from probes.vocabulary import DeviceKind

if TYPE_CHECKING:
    from probes.devices.seam import Device
    from probes.train_step import TrainStep

__all__ = ["OperatorTime", "StepProfile", "profile_steps"]

PHASES = ("input wait", "forward", "backward", "optimizer")


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
    from torch.profiler import ProfilerActivity, profile

    on_device = device.kind == DeviceKind.CUDA
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_device else [])
    totals = [0.0, 0.0, 0.0, 0.0]
    done = 0
    with profile(activities=activities) as prof:
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
