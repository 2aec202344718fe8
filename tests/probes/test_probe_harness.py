"""The harness on real torch on CPU: ok, stable, oom, largest batch, input check, faults."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tiny_workload
import torch
from probe_helpers import FakeClock, make_request, tiny_recipe

from probes.devices import CpuDevice
from probes.harness import Harness, is_oom_error, run_probe
from probes.types import ProbeResult, ProbeStatus
from probes.workload import BuiltWorkload


def _run(workload: BuiltWorkload, clock: Any = None, **request: Any) -> ProbeResult:
    options: dict[str, Any] = {"workload": workload, "device": CpuDevice()}
    if clock is not None:
        options["clock"] = clock
    return run_probe(make_request(**request), **options)


def test_tiny_model_gives_ok_with_throughput_on_the_real_clock() -> None:
    result = _run(tiny_workload.build(), time_box_s=1.0, input_check=False)
    assert result.status is ProbeStatus.OK
    assert result.samples_per_second is not None and result.samples_per_second > 0
    assert result.measured_steps >= 3 and result.warmup_steps >= 2
    assert result.step_time_p50_s is not None and result.step_time_p90_s is not None
    assert result.step_time_p50_s <= result.step_time_p90_s
    assert result.device == "cpu" and result.precision == "fp32"


def test_steady_steps_stop_as_soon_as_the_estimate_is_stable() -> None:
    clock = FakeClock(tick=0.005)  # every step lasts exactly 10 ms on this clock
    result = _run(tiny_workload.build(), clock=clock, time_box_s=600.0, input_check=False)
    assert result.stable is True
    assert result.rel_halfwidth == 0.0
    assert result.samples_per_second == pytest.approx(16 / 0.005)
    assert result.measured_steps < 1000  # stopped long before the 600 s box


def test_bf16_autocast_is_recorded() -> None:
    result = _run(tiny_workload.build(), time_box_s=1.0, input_check=False,
                  recipe=tiny_recipe(precision="bf16"))
    assert result.status is ProbeStatus.OK and result.precision == "bf16"


def test_tf32_on_cpu_is_reported_as_fp32() -> None:
    result = _run(tiny_workload.build(), time_box_s=1.0, input_check=False,
                  recipe=tiny_recipe(precision="tf32"))
    assert result.precision == "fp32"


def test_out_of_memory_is_a_result_with_the_failed_batch() -> None:
    result = _run(tiny_workload.build(oom_above=8), recipe=tiny_recipe(batch_size=16))
    assert result.status is ProbeStatus.OOM
    assert result.batch_size == 16
    assert "batch 16" in result.error


@pytest.mark.parametrize(("start", "status"), [
    (8, ProbeStatus.OK),     # fits: doubles up past the limit, then bisects down
    (64, ProbeStatus.OOM),   # does not fit: halves down, then bisects up
])
def test_find_batch_finds_the_simulated_limit(start: int, status: ProbeStatus) -> None:
    clock = FakeClock(tick=0.001)
    result = _run(tiny_workload.build(oom_above=37), clock=clock, time_box_s=600.0,
                  find_batch=True, input_check=False, recipe=tiny_recipe(batch_size=start))
    assert result.status is status
    assert result.largest_batch_that_fits == 37
    assert result.batch_search_complete is True


def test_find_batch_cut_short_by_the_box_is_a_lower_bound() -> None:
    clock = FakeClock(tick=0.03)  # every timed read costs 30 ms: the search's 1 s box ends quickly
    result = _run(tiny_workload.build(oom_above=10_000), clock=clock, time_box_s=1.0,
                  find_batch=True, input_check=False, recipe=tiny_recipe(batch_size=8))
    assert result.status is ProbeStatus.OK
    assert result.batch_search_complete is False
    assert result.largest_batch_that_fits is None or result.largest_batch_that_fits < 10_000


def test_input_check_detects_a_slow_loader_on_the_real_clock() -> None:
    # 0.2 s of real sleep per batch: the ratio passes 1.5 unless a tiny step takes 0.4 s,
    # which not even a loaded shared CPU makes it take.
    result = _run(tiny_workload.build(loader_delay_s=0.2), time_box_s=2.0)
    assert result.input_bound_ratio is not None and result.input_bound_ratio > 1.5


class _Clocked:
    """A clock where steps last 10 ms and a slow loader adds its delay to the same clock."""

    def __init__(self) -> None:
        self.clock = FakeClock(tick=0.005)


@pytest.mark.parametrize(("delay_s", "low", "high"), [
    (0.0, 0.99, 1.01),     # loader costs nothing: ratio 1
    (0.02, 2.5, 3.5),      # 20 ms per batch on a 10 ms step: about 3x
])
def test_input_ratio_is_loader_time_over_cached_time(delay_s: float, low: float,
                                                     high: float) -> None:
    clock = FakeClock(tick=0.005)
    workload = tiny_workload.build()

    def loader(batch_size: int) -> Any:
        batch = workload.make_batch(batch_size, "cpu")
        while True:
            clock.advance(delay_s)
            yield batch

    workload.make_loader = loader
    result = _run(workload, clock=clock, time_box_s=600.0)
    assert result.input_bound_ratio is not None
    assert low < result.input_bound_ratio < high


def test_a_crashing_step_is_an_error_result() -> None:
    result = _run(tiny_workload.build(crash=True))
    assert result.status is ProbeStatus.ERROR
    assert "simulated crash" in result.error


def test_a_step_longer_than_the_box_is_a_timeout() -> None:
    clock = FakeClock(tick=30.0)  # each step lasts a minute
    result = _run(tiny_workload.build(), clock=clock, time_box_s=100.0, input_check=False)
    assert result.status is ProbeStatus.TIMEOUT
    assert "time box" in result.error


def test_memory_cap_turns_a_big_peak_into_oom() -> None:
    class Heavy(CpuDevice):
        """A device whose steps peak at half a GiB, whatever the process did before."""

        def peak_memory_gib(self) -> float | None:
            return 0.5

    harness = Harness(make_request(memory_limit_gib=0.25, time_box_s=2.0),
                      workload=tiny_workload.build(), device=Heavy())
    result = harness.run()
    assert result.status is ProbeStatus.OOM
    assert "over the cap" in result.error


@pytest.mark.parametrize(("exc", "oom"), [
    (torch.OutOfMemoryError("CUDA out of memory"), True),
    (MemoryError(), True),
    (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 9 bytes"),
     True),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied"), False),
    (ValueError("out of memory"), False),   # only allocator-type errors count
])
def test_is_oom_error(exc: BaseException, oom: bool) -> None:
    assert is_oom_error(exc) is oom


@pytest.mark.slow
def test_entry_point_writes_a_result_json(tmp_path: Path) -> None:
    request = make_request(time_box_s=2.0, input_check=False)
    (tmp_path / "req.json").write_text(request.to_json())
    subprocess.run([sys.executable, "-m", "probes.harness", str(tmp_path / "req.json"),
                    str(tmp_path / "res.json")], check=True, timeout=120)
    result = ProbeResult.from_json((tmp_path / "res.json").read_text())
    assert result.status is ProbeStatus.OK and result.probe_id == "p1"
    assert json.loads((tmp_path / "res.json").read_text())["status"] == "ok"
