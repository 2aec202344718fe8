"""Shared builders for probe tests: requests, results and a controllable clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probes.types import ProbeRequest, ProbeResult, ProbeStatus
from probes.workload import WorkloadRecipe

HERE = str(Path(__file__).resolve().parent)


def tiny_recipe(batch_size: int = 16, function: str = "build", precision: str = "fp32",
                **options: Any) -> WorkloadRecipe:
    """The tiny entrypoint workload of tiny_workload.py (options go to its builder)."""
    return WorkloadRecipe(builtin=None, entrypoint=f"tiny_workload:{function}", options=options,
                          batch_size=batch_size, precision=precision, base_dir=HERE)


def make_request(probe_id: str = "p1", offer_key: str = "local", **kw: Any) -> ProbeRequest:
    """A request for the tiny workload (keywords override fields)."""
    kw.setdefault("recipe", tiny_recipe())
    kw.setdefault("workload_fingerprint", "fp-tiny")
    kw.setdefault("time_box_s", 5.0)
    return ProbeRequest(probe_id=probe_id, offer_key=offer_key, **kw)


def ok_result(request: ProbeRequest, samples_per_second: float = 123.0) -> ProbeResult:
    """An ok result as an instance would write it."""
    return ProbeResult(
        probe_id=request.probe_id, offer_key=request.offer_key,
        workload_fingerprint=request.workload_fingerprint, status=ProbeStatus.OK,
        batch_size=request.recipe.batch_size, samples_per_second=samples_per_second,
        step_time_p50_s=0.1, step_time_p90_s=0.12, measured_steps=30, stable=True,
    )


class FakeClock:
    """Seconds that move only when told (``advance``) or when ``sleep`` is called;
    ``tick`` is added on every read (so a timed step lasts ``tick``)."""

    def __init__(self, tick: float = 0.0) -> None:
        self.now = 1000.0
        self.tick = tick
        self.on_sleep: list[Any] = []

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        for hook in self.on_sleep:
            hook()
