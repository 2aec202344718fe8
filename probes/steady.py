"""Warm-up, then measured steps until the throughput estimate is stable or a deadline passes.

Shared by the probe harness and the tuner (``probes.tune``): both time one step at a time
through a ``run_step() -> seconds`` callable and stop on the same rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from probes.stats import relative_drift, relative_halfwidth, warmup_done

__all__ = ["SteadyRun", "measure_steady"]


@dataclass(frozen=True)
class SteadyRun:
    """Measured step times (seconds, warm-up excluded), the warm-up steps run, and the
    device utilization readings (percent) taken while measuring."""

    step_times_s: tuple[float, ...]
    warmup_steps: int
    utilization_pct: tuple[float, ...] = ()


def measure_steady(
    run_step: Callable[[], float],
    *,
    clock: Callable[[], float],
    deadline_s: float,
    target_rel_halfwidth: float,
    min_steps: int,
    min_measure_s: float,
    max_warmup: int,
    on_measure_start: Callable[[], None] = lambda: None,
    utilization_pct: Callable[[], float | None] = lambda: None,
) -> SteadyRun:
    """Warm up (until step times stop falling, ``max_warmup`` steps, or 40% of the time to
    ``deadline_s``), call ``on_measure_start``, then measure until the relative 95% half-width
    is under ``target_rel_halfwidth`` and both halves agree (after at least ``min_steps``
    steps and ``min_measure_s``) or ``deadline_s`` (on ``clock``) passes.

    At least one warm-up step always runs; measured steps may be none when the deadline is
    already past. ``run_step`` raises what the step raises.
    """
    start = clock()
    warmup_cap = start + 0.4 * (deadline_s - start)
    warm: list[float] = []
    while True:
        warm.append(run_step())
        if warmup_done(warm) or len(warm) >= max_warmup or clock() >= warmup_cap:
            break
    on_measure_start()
    measured: list[float] = []
    util: list[float] = []
    begin = last_util = clock()
    while clock() < deadline_s:
        measured.append(run_step())
        now = clock()
        if now - last_util >= 0.2:
            reading = utilization_pct()
            if reading is not None:
                util.append(reading)
            last_util = now
        if (len(measured) >= min_steps and now - begin >= min_measure_s
                and relative_halfwidth(measured) < target_rel_halfwidth
                and relative_drift(measured) < 1.5 * target_rel_halfwidth):
            break
    return SteadyRun(tuple(measured), len(warm), tuple(util))
