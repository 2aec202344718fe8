"""An in-memory launcher for tests and the launcher contract: no processes, no clouds.

``behaviour`` decides, per request, what the "instance" does: return a result after
``ready_after_polls`` polls, die without one, never answer, or fail to launch.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from probes.launchers.base import Launcher, LaunchFailed, LaunchHandle
from probes.types import ProbeRequest, ProbeResult, ProbeStatus

__all__ = ["FakeBehaviour", "FakeLauncher", "FakeOutcome"]


class FakeOutcome(enum.StrEnum):
    """What the fake instance does."""

    RESULT = "result"
    CRASH = "crash"
    HANG = "hang"
    LAUNCH_FAILS = "launch-fails"


@dataclass(frozen=True)
class FakeBehaviour:
    """One fake run: the outcome, how many polls until it happens, and the samples/s."""

    outcome: FakeOutcome = FakeOutcome.RESULT
    ready_after_polls: int = 1
    samples_per_second: float = 100.0


def _ok(request: ProbeRequest, samples_per_second: float) -> ProbeResult:
    size = request.recipe.batch_size
    return ProbeResult(
        probe_id=request.probe_id, offer_key=request.offer_key,
        workload_fingerprint=request.workload_fingerprint, status=ProbeStatus.OK,
        batch_size=size, samples_per_second=samples_per_second,
        step_time_p50_s=size / samples_per_second, step_time_p90_s=size / samples_per_second,
        measured_steps=30, warmup_steps=3, rel_halfwidth=0.01, stable=True,
        precision=request.recipe.precision, device="fake",
        accelerator=request.accelerator,  # the fake instance has the device the offer promises
    )


class FakeLauncher(Launcher):
    """Keeps "instances" in a dict; ``launched`` records every request it was given."""

    name = "fake"
    boot_overhead_s = 60.0

    def __init__(self, behaviour: Callable[[ProbeRequest], FakeBehaviour] | None = None,
                 **options: Any) -> None:
        options.setdefault("poll_interval_s", 1.0)
        super().__init__(**options)
        self._behaviour = behaviour or (lambda _request: FakeBehaviour())
        self.launched: list[ProbeRequest] = []
        self._running: dict[str, tuple[ProbeRequest, FakeBehaviour, datetime]] = {}
        self._polls: dict[str, int] = {}
        self._written: dict[str, ProbeResult] = {}

    def complete(self, probe_id: str, result: ProbeResult) -> None:
        """Act as the instance: write ``result`` for a running probe."""
        self._written[probe_id] = result

    def launch(self, request: ProbeRequest) -> LaunchHandle:
        behaviour = self._behaviour(request)
        self.launched.append(request)
        if behaviour.outcome is FakeOutcome.LAUNCH_FAILS:
            raise LaunchFailed(f"fake: no capacity for {request.offer_key}")
        expires = self.expiry_for(request)
        self._running[request.probe_id] = (request, behaviour, expires)
        self._polls[request.probe_id] = 0
        return LaunchHandle(request.probe_id, self.name, f"fake-{request.probe_id}", "fake-zone",
                            self.clock(), expires)

    def poll(self, handle: LaunchHandle) -> ProbeResult | None:
        entry = self._running.get(handle.probe_id)
        if entry is None:
            return None
        request, behaviour, _ = entry
        self._polls[handle.probe_id] += 1
        if handle.probe_id in self._written:
            return self._written[handle.probe_id]
        if (behaviour.outcome is FakeOutcome.RESULT
                and self._polls[handle.probe_id] >= behaviour.ready_after_polls):
            return _ok(request, behaviour.samples_per_second)
        return None

    def is_alive(self, handle: LaunchHandle) -> bool:
        entry = self._running.get(handle.probe_id)
        if entry is None:
            return False
        _, behaviour, _ = entry
        return not (behaviour.outcome is FakeOutcome.CRASH
                    and self._polls[handle.probe_id] >= behaviour.ready_after_polls)

    def terminate(self, handle: LaunchHandle) -> None:
        self._running.pop(handle.probe_id, None)
        self._written.pop(handle.probe_id, None)

    def live_probe_ids(self) -> list[str]:
        return sorted(self._running)

    def gc(self, now: datetime, *, dry_run: bool = False) -> list[str]:
        expired = [pid for pid, (_, _, exp) in self._running.items() if exp < now]
        if not dry_run:
            for probe_id in expired:
                self._running.pop(probe_id)
        return [f"fake-{p}" for p in expired]
