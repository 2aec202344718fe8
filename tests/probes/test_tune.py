"""The tuner on real torch on the CPU: rows per knob inside the box, the numerics rule, the
loader knobs over a real DataLoader, the profile, and the result's JSON round trip.

Time boxes and speedups are judged on a simulated clock: each step of the tiny workload costs
20 ms + 0.2 ms per sample on it (see ``tiny_workload``), so a busy machine changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
import tiny_workload
import torch
from probe_helpers import FakeClock, make_request
from torch.utils.data import DataLoader, TensorDataset

from probes.devices import CpuDevice
from probes.harness import run_probe
from probes.tune.knobs import Knob
from probes.tune.report import RowKind, RowStatus
from probes.tune.runs import with_loader_settings
from probes.tune.tuner import Tuner
from probes.types import ProbeResult, ProbeStatus
from probes.workload import BuiltWorkload


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a busy shared CPU, threads waiting for each other make tiny steps erratic.
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    torch.set_num_threads(1)


def _simulated(**options: Any) -> tuple[BuiltWorkload, FakeClock]:
    """The tiny workload on a clock its steps advance (reads cost 10 us, so no phase is 0)."""
    clock = FakeClock(tick=1e-5)
    return tiny_workload.build(clock=clock, **options), clock


def _tune(*, box_s: float = 6.0, device: CpuDevice | None = None,
          workload: dict[str, Any] | None = None, **request: Any) -> ProbeResult:
    built, clock = _simulated(**(workload or {}))
    return run_probe(make_request(time_box_s=box_s, tune=True, **request), workload=built,
                     device=device or CpuDevice(), clock=clock)


@pytest.fixture(scope="module")
def default_tune() -> ProbeResult:
    """``_tune()`` (the default 6 s box) run once for the tests that read its result (frozen)."""
    with pytest.MonkeyPatch.context() as patch:  # as one_thread, for this module-wide run
        patch.setattr(torch, "get_num_threads", lambda: 1)
        torch.set_num_threads(1)
        return _tune()


def test_every_applicable_knob_gets_a_row_and_the_tune_ends_inside_its_box(
        default_tune: ProbeResult) -> None:
    result = default_tune
    assert result.status is ProbeStatus.OK and result.tuning is not None
    rows = result.tuning.rows
    assert rows[0].kind is RowKind.BASELINE and rows[0].speedup == 1.0
    assert {r.knob for r in rows if r.kind is RowKind.TRIAL} == {Knob.INPUT, Knob.BATCH,
                                                                Knob.COMPILER}
    assert all(r.status is RowStatus.MEASURED for r in rows if r.knob in (Knob.INPUT, Knob.BATCH))
    (again,) = [r for r in rows if r.kind is RowKind.RECHECK]  # the machine's drift
    assert again.status is RowStatus.MEASURED and result.tuning.drift is not None
    assert result.wall_time_s < 6.0
    assert result.samples_per_second == rows[0].samples_per_second  # the spec as written


def test_a_knob_the_box_cannot_afford_is_reported_skipped_for_time() -> None:
    result = _tune(box_s=4.0)
    assert result.tuning is not None
    (compiled,) = [r for r in result.tuning.rows if r.knob is Knob.COMPILER]
    assert compiled.status is RowStatus.NO_TIME
    assert "compiling" in compiled.note and "--time-box" in compiled.note
    assert compiled in result.tuning.skipped_for_time()


def test_a_bigger_batch_is_reported_but_not_applied_without_the_flag() -> None:
    # The tiny step's cost is mostly per step, not per sample: batch 64 is 2.8x the samples/s.
    result = _tune(box_s=10.0)
    assert result.tuning is not None
    (big,) = [r for r in result.tuning.rows if r.knob is Knob.BATCH and r.config.batch_size == 64]
    assert big.speedup is not None and big.speedup > 1.5 and big.changes_numerics
    combos = [r for r in result.tuning.rows if r.kind is RowKind.COMBINATION]
    assert all(not r.changes_numerics for r in combos)
    assert all(r.config.batch_size == 16 for r in combos)
    tuned = result.tuning.tuned(allow_numerics=False)
    assert tuned is None or not tuned.changes_numerics


def test_with_the_flag_the_combination_takes_the_bigger_batch() -> None:
    result = _tune(box_s=10.0, allow_numerics=True)
    assert result.tuning is not None and result.tuning.allow_numerics
    tuned = result.tuning.tuned(allow_numerics=True)
    assert tuned is not None and tuned.changes_numerics and tuned.config.batch_size > 16


def test_the_tuned_configuration_is_profiled(default_tune: ProbeResult) -> None:
    result = default_tune
    assert result.tuning is not None and result.tuning.profile is not None
    profile = result.tuning.profile
    assert profile.steps >= 1 and profile.forward_s > 0 and profile.backward_s > 0
    assert profile.top_operators and profile.top_operators[0].self_time_s > 0
    assert sum(op.share for op in profile.top_operators) <= 1.0 + 1e-9


class _AutotunedCpu(CpuDevice):
    """The CPU, saying cuDNN autotuning is on (as an entrypoint on a GPU may have set it)
    and recording what the step builder switches it to."""

    def __init__(self) -> None:
        super().__init__()
        self.autotune = True
        self.switched: list[bool] = []

    def cudnn_benchmark(self) -> bool:
        return self.autotune

    def set_cudnn_benchmark(self, enabled: bool) -> None:
        self.switched.append(enabled)
        self.autotune = enabled


def test_the_baseline_keeps_the_processes_cudnn_autotuning_and_each_run_sets_it() -> None:
    device = _AutotunedCpu()
    result = _tune(device=device)
    assert result.tuning is not None
    assert all(r.config.cudnn_benchmark for r in result.tuning.rows)  # no trial on the CPU
    assert device.switched and all(device.switched)


def test_the_probe_harness_leaves_cudnn_autotuning_as_the_process_has_it() -> None:
    device = _AutotunedCpu()
    built, clock = _simulated()
    result = run_probe(make_request(time_box_s=3.0), workload=built, device=device, clock=clock)
    assert result.status is ProbeStatus.OK
    assert device.switched == [] and device.autotune


def test_a_tuned_result_survives_the_json_round_trip() -> None:
    result = _tune(box_s=3.0)
    assert ProbeResult.from_json(result.to_json()) == result


def test_a_result_stored_before_tuning_existed_still_reads() -> None:
    # a payload without the "tuning" key, as versions before --tune stored it
    result = ProbeResult.from_dict({"probe_id": "old1", "offer_key": "local",
                                    "workload_fingerprint": "fp", "status": "ok",
                                    "batch_size": 16, "samples_per_second": 9.0,
                                    "measured_steps": 3})
    assert result.tuning is None and ProbeResult.from_json(result.to_json()) == result


def _dataloader_workload(clock: FakeClock) -> BuiltWorkload:
    built = tiny_workload.build(clock=clock)
    data = TensorDataset(torch.randn(512, 32), torch.randint(0, 10, (512,)))
    return BuiltWorkload(built.model, built.make_batch, built.loss_fn,
                         lambda size: DataLoader(data, batch_size=size, shuffle=True,
                                                 num_workers=0, drop_last=True))


def test_num_workers_are_tuned_over_the_real_dataloader() -> None:
    clock = FakeClock(tick=1e-5)
    tuner = Tuner(make_request(time_box_s=8.0, tune=True), CpuDevice(),
                  workload=_dataloader_workload(clock), cpu_count=2, clock=clock)
    result = tuner.run()
    assert result.tuning is not None
    workers = [r for r in result.tuning.rows if r.knob is Knob.LOADER_WORKERS]
    assert [r.config.num_workers for r in workers] == [1, 2]
    assert all(not r.config.cached_input for r in workers)
    assert workers[0].status is RowStatus.MEASURED
    assert result.input_bound_ratio is not None  # cached batch vs the loader as given


def test_a_rebuilt_dataloader_keeps_dataset_batching_and_sampling() -> None:
    data = TensorDataset(torch.arange(10.0))
    loader = DataLoader(data, batch_size=4, drop_last=True, num_workers=0)
    rebuilt = with_loader_settings(loader, num_workers=1, pin_memory=None)
    assert rebuilt.dataset is data and rebuilt.num_workers == 1
    assert [len(b[0]) for b in rebuilt] == [4, 4]  # drop_last kept
    assert with_loader_settings(loader, num_workers=None, pin_memory=None) is loader


def test_a_baseline_that_runs_out_of_memory_ends_the_probe_oom() -> None:
    result = _tune(workload={"oom_above": 8})
    assert result.status is ProbeStatus.OOM
    assert result.tuning is not None and result.tuning.rows[0].status is RowStatus.OOM


def test_find_batch_searches_the_limit_after_the_tune() -> None:
    result = _tune(workload={"oom_above": 100}, box_s=4.0, find_batch=True)
    assert result.status is ProbeStatus.OK
    assert result.largest_batch_that_fits == 100 and result.batch_search_complete
    failed = result.smallest_batch_that_failed
    assert failed is not None and 100 < failed <= 102  # a bracket within 2%


class _CpuWithReadings(CpuDevice):
    """This CPU, with a peak reading every time: a step as small as the tiny workload's may
    not raise the resident high-water mark, which reads as no peak (None)."""

    def peak_memory_gib(self) -> float:
        return 0.25


def test_a_tune_with_find_batch_searches_past_the_largest_batch_tried() -> None:
    result = _tune(box_s=4.0, find_batch=True, device=_CpuWithReadings())
    assert result.status is ProbeStatus.OK and result.tuning is not None
    tried = max(r.config.batch_size for r in result.tuning.measured())
    assert result.largest_batch_that_fits is not None
    assert result.largest_batch_that_fits >= tried
    assert result.largest_batch_peak_memory_gib == 0.25
