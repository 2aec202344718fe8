"""How a tune shares its time box, end to end on real torch on the CPU with simulated step
times (``tiny_workload`` advances a ``FakeClock``): a slow baseline is measured and a knob still
compared, a steady baseline stops early and leaves the rest to the knobs, a noisy one is
capped, and every run the box could not afford is listed as skipped for time, with why, in the
rows, the JSON and the printed table."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
import tiny_workload
import torch
from probe_helpers import FakeClock, make_request

from cli._tune_table import print_tuning
from probes.devices import CpuDevice
from probes.tune.knobs import Knob, StepConfig
from probes.tune.report import RowKind, RowStatus, TuneReport, TuneRow, combination_plans
from probes.tune.shares import BASELINE_SHARE, profile_reserve_s
from probes.tune.tuner import Tuner
from probes.types import ProbeResult, ProbeStatus
from probes.vocabulary import Precision

_BOX_S = 40.0
_RUNS_S = _BOX_S - profile_reserve_s(_BOX_S)  # what the runs share


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a busy shared CPU, threads waiting for each other make tiny steps erratic.
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    torch.set_num_threads(1)


def _tune(*, step_s: tuple[float, float], jitter: float = 0.0,
          **request: Any) -> tuple[ProbeResult, TuneReport]:
    clock = FakeClock(tick=1e-5)
    workload = tiny_workload.build(clock=clock, step_s=step_s, jitter=jitter)
    result = Tuner(make_request(time_box_s=_BOX_S, tune=True, **request), CpuDevice(),
                   workload=workload, clock=clock).run()
    assert result.tuning is not None
    return result, result.tuning


def _trials(report: TuneReport) -> list[Any]:
    return [r for r in report.rows if r.kind is RowKind.TRIAL]


@pytest.fixture(scope="module")
def slow_tune() -> tuple[ProbeResult, TuneReport]:
    """A tune of a 1.5 s step in a 40 s box, run once for the tests that read it (frozen)."""
    with pytest.MonkeyPatch.context() as patch:  # as one_thread, for this module-wide run
        patch.setattr(torch, "get_num_threads", lambda: 1)
        torch.set_num_threads(1)
        return _tune(step_s=(1.5, 0.0))


def test_a_slow_step_measures_the_baseline_and_compares_a_knob(
        slow_tune: tuple[ProbeResult, TuneReport]) -> None:
    # 1.5 s a step in a 40 s box: an even share (about 4 s) held no measured step at all
    result, report = slow_tune
    assert result.status is ProbeStatus.OK
    assert report.baseline.status is RowStatus.MEASURED and report.baseline.measured_steps >= 3
    compared = [r for r in _trials(report) if r.status is RowStatus.MEASURED]
    assert compared and all(r.speedup is not None for r in compared)
    assert "nothing compared" not in report.untuned_because


def test_a_slow_step_lists_every_knob_it_did_not_run_with_the_reason(
        slow_tune: tuple[ProbeResult, TuneReport]) -> None:
    _, report = slow_tune
    unrun = [r for r in report.rows if r.status is not RowStatus.MEASURED]
    assert unrun  # 40 s cannot hold every knob at 1.5 s a step
    assert all(r.status is RowStatus.NO_TIME for r in unrun)
    assert set(report.skipped_for_time()) == set(unrun)
    for row in unrun:
        assert row.note.startswith("it needs about ")  # its status says skipped for time
        assert "were left" in row.note and "--time-box" in row.note
        assert row.run_s is None and row.measured_steps == 0
    (compiled,) = [r for r in unrun if r.knob is Knob.COMPILER]
    assert "compiling" in compiled.note


def test_skipped_for_time_survives_the_json_round_trip(
        slow_tune: tuple[ProbeResult, TuneReport]) -> None:
    result, report = slow_tune
    again = ProbeResult.from_json(result.to_json())
    assert again == result and again.tuning is not None
    assert again.tuning.skipped_for_time() == report.skipped_for_time()
    assert '"skipped_for_time"' in result.to_json()
    rows = again.tuning.to_dict()["rows"]
    # a run that started says how long it took; one skipped for time has no such key
    assert all(("run_s" in row) is (row["status"] != "skipped_for_time") for row in rows)


def test_the_table_says_what_was_skipped_for_time(
        slow_tune: tuple[ProbeResult, TuneReport], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # no cell wraps
    result, report = slow_tune
    print_tuning(result, price_usd_per_hour=0.0)
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("skipped for time (")]
    assert all(r.setting in line for r in report.skipped_for_time())
    assert "--time-box" in line
    # each row's note cell: its status, then why (said once)
    assert out.count("skipped for time: it needs about") == len(report.skipped_for_time())
    assert "skipped for time: skipped" not in out


def test_a_steady_fast_step_stops_the_baseline_early_and_leaves_the_rest_to_the_knobs() -> None:
    result, report = _tune(step_s=(0.02, 0.0002))
    base = report.baseline
    assert result.stable and base.run_s is not None
    # it settled well inside even an even share of the box: the larger cap cost nothing
    assert base.run_s < _RUNS_S / len(report.rows)
    for row in _trials(report):
        assert row.status is RowStatus.MEASURED or row.knob is Knob.COMPILER  # 60 s to compile


def test_a_noisy_baseline_is_capped_and_the_knobs_still_get_their_windows() -> None:
    step_s = (0.05, 0.0)
    jitter = 0.9  # each step 0.1x to 1.9x: it never settles within 2%
    result, report = _tune(step_s=step_s, jitter=jitter)
    base = report.baseline
    assert base.status is RowStatus.MEASURED and not result.stable
    assert base.run_s is not None
    longest_step_s = step_s[0] * (1 + jitter)
    # its cap, plus its untimed first step (before the box) and the last step's overrun
    assert base.run_s <= BASELINE_SHARE * _RUNS_S + 2 * longest_step_s
    assert base.run_s >= BASELINE_SHARE * _RUNS_S - longest_step_s  # it used its cap
    for row in _trials(report):
        if row.knob is Knob.COMPILER:
            assert row.status is RowStatus.NO_TIME  # 60 s to compile in a 40 s box
            continue
        assert row.status is RowStatus.MEASURED and row.measured_steps >= 3
    assert result.wall_time_s <= _BOX_S + 2 * longest_step_s + 1.0  # first step, profile


def test_a_box_with_no_room_after_the_baseline_says_nothing_was_compared() -> None:
    # 2.5 s a step: half of the box goes to the baseline, no knob fits 8 steps after it
    result, report = _tune(step_s=(2.5, 0.0))
    assert report.baseline.status is RowStatus.MEASURED
    assert all(r.status is RowStatus.NO_TIME for r in _trials(report))
    assert report.untuned_because.startswith("nothing compared: after the baseline")
    assert result.status is ProbeStatus.OK  # the baseline is still a measurement


def test_a_baseline_too_slow_for_its_cap_goes_on_to_its_least_timed_steps() -> None:
    # 5 s a step: half the box holds 1 timed step after warm-up; without a baseline nothing
    # compares, so it takes the knobs' time until it has 3 (the box less the profile's part)
    result, report = _tune(step_s=(5.0, 0.0))
    base = report.baseline
    assert base.status is RowStatus.MEASURED and base.measured_steps == 3
    assert base.run_s is not None and base.run_s > 0.5 * _RUNS_S  # past its cap
    assert result.status is ProbeStatus.OK and result.measured_steps == 3


def test_a_baseline_the_whole_box_cannot_time_says_so() -> None:
    result, report = _tune(step_s=(9.0, 0.0))
    assert report.baseline.status is RowStatus.NOT_MEASURED
    assert "the whole box" in report.baseline.note and "--time-box" in report.baseline.note
    assert result.status is ProbeStatus.TIMEOUT
    assert report.untuned_because.startswith("nothing compared: the baseline was not measured")


def _row(kind: RowKind, knob: Knob | None, sps: float, **config: Any) -> Any:
    base = StepConfig(Precision.FP32, 16)
    return TuneRow(kind, knob, "x", replace(base, **config), RowStatus.MEASURED, False,
                   samples_per_second=sps, rel_halfwidth=0.01, speedup=sps / 100.0)


def test_the_recheck_can_only_take_combinations_away_so_its_share_counts_the_rest() -> None:
    # channels_last beats the first baseline, not the faster one measured again after it
    rows = (_row(RowKind.BASELINE, None, 100.0),
            _row(RowKind.TRIAL, Knob.MEMORY_FORMAT, 150.0, channels_last=True))
    (before,) = combination_plans(rows, allow_numerics=False)
    assert before.config.channels_last
    after = combination_plans((*rows, _row(RowKind.RECHECK, None, 160.0)), allow_numerics=False)
    assert after == ()
