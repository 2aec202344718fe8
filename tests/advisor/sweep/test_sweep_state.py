"""The sweep's stored state: one owner of every ``advisor:*`` name, typed records that round
trip, stop reasons that render, and studies written with the stored names still read."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path

import optuna
import pytest

from advisor.sweep.accounting.records import (
    StudySettings,
    TrialCharge,
    cleaned_bytes,
    instances_of,
    read_settings,
    read_stop,
    trial_record,
    write_settings,
    write_stop,
)
from advisor.sweep.accounting.status import sweep_status
from advisor.sweep.spec import CleanupSpec, CleanupState, Distribution, ParamSpec
from advisor.sweep.spec.outcomes import StopKind, StopReason, render_stop_reason

ROOT = Path(__file__).resolve().parents[3]

# A study as the sweep has always stored it (the names are the on-disk format: never change)
STORED_STUDY = {
    "advisor:search_space": [{"name": "x", "type": "float", "low": -1.0, "high": 1.0,
                              "log": False, "step": None, "choices": []}],
    "advisor:cleanup": {"keep_best": 2, "states": ["pruned"]},
    "advisor:heartbeat_s": 5,
    "advisor:share": 2,
    "advisor:price_usd_per_hour": 1.5,
    "advisor:instance": "aws:g5.xlarge:us-east-1:spot",
    "advisor:artifacts_url": "s3://bucket/runs",
    "advisor:max_usd": 40.0,
    "advisor:prices_captured_at": "2025-03-01",
    "advisor:stop_reason": "max_trials reached (4 of 4)",
    "advisor:cleaned:abc": 1024,
    "advisor:worker_instance:w1": {"worker_id": "w1", "instance_id": "i-1",
                                   "offer_key": "aws:g5.xlarge:us-east-1:spot",
                                   "price_usd_per_hour": 1.5, "launched_at_s": 100.0,
                                   "ended_at_s": 160.0},
}
STORED_TRIAL = {"advisor:cost_usd": 0.25, "advisor:wall_s": 600.0,
                "advisor:price_usd_per_hour": 1.5, "advisor:share": 2,
                "advisor:started_at_s": 1000.0, "advisor:error": "boom",
                "advisor:worker": "w1", "advisor:found_dead_at_s": 1600.0,
                "advisor:artifact_error": "disk full"}


def _stored_study(tmp_path: Path) -> optuna.Study:
    study = optuna.create_study(study_name="old", storage=f"sqlite:///{tmp_path / 'old.db'}")
    for key, value in STORED_STUDY.items():
        study.set_user_attr(key, value)
    trial = study.ask()
    for key, value in STORED_TRIAL.items():
        trial.set_user_attr(key, value)
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return study


def test_a_study_written_with_the_stored_names_still_reads(tmp_path: Path) -> None:
    study = _stored_study(tmp_path)
    settings = read_settings(study.user_attrs)
    assert settings == StudySettings(
        search_space=(ParamSpec("x", Distribution.FLOAT, low=-1.0, high=1.0),),
        cleanup=CleanupSpec(keep_best=2, states=(CleanupState.PRUNED,)), heartbeat_s=5,
        share=2, price_usd_per_hour=1.5, instance="aws:g5.xlarge:us-east-1:spot",
        artifacts_url="s3://bucket/runs", max_usd=40.0, prices_captured_at=date(2025, 3, 1))
    assert settings.attrs() == {k: v for k, v in STORED_STUDY.items()
                                if k in settings.attrs()}  # written back the same
    assert read_stop(study.user_attrs) == StopReason(StopKind.RECORDED,
                                                     text="max_trials reached (4 of 4)")
    assert cleaned_bytes(study.user_attrs) == {"abc": 1024}
    assert [i.instance_id for i in instances_of(study.user_attrs)] == ["i-1"]
    record = trial_record(study.trials[0])
    assert (record.cost_usd, record.wall_s, record.worker, record.error, record.artifact_error,
            record.found_dead_at_s) == (0.25, 600.0, "w1", "boom", "disk full", 1600.0)
    status = sweep_status(study, now_s=2000.0)
    assert (status.price_usd_per_hour, status.stop_reason, status.bytes_cleaned,
            status.last_error) == (1.5, "max_trials reached (4 of 4)", 1024, "boom")


def test_settings_and_stop_round_trip_through_a_study(tmp_path: Path) -> None:
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'new.db'}")
    settings = StudySettings(share=3, heartbeat_s=10, price_usd_per_hour=2.0, max_usd=9.5,
                             prices_captured_at=date(2025, 1, 2))
    write_settings(study, settings)
    reason = StopReason(StopKind.DOLLAR_CAP, spent_usd=9.0, running_usd=0.25, next_usd=0.5,
                        max_usd=9.5)
    write_stop(study, reason)
    attrs = optuna.load_study(study_name=study.study_name, storage=study._storage).user_attrs  # noqa: SLF001
    assert read_settings(attrs) == settings
    assert read_stop(attrs) == reason
    assert attrs["advisor:stop_reason"] == render_stop_reason(reason)  # older readers


def test_a_charge_is_stored_under_the_names_readers_know() -> None:
    charge = TrialCharge(started_at_s=1.0, price_usd_per_hour=2.0, share=1, wall_s=3.0,
                         cost_usd=4.0, error="e", found_dead_at_s=5.0)
    assert charge.attrs() == {
        "advisor:started_at_s": 1.0, "advisor:price_usd_per_hour": 2.0, "advisor:share": 1,
        "advisor:wall_s": 3.0, "advisor:cost_usd": 4.0, "advisor:error": "e",
        "advisor:found_dead_at_s": 5.0}


SAMPLES = {  # one reason of each kind, with the figures it compares
    StopKind.MAX_TRIALS: StopReason(StopKind.MAX_TRIALS, trials=4, max_trials=4),
    StopKind.MAX_HOURS: StopReason(StopKind.MAX_HOURS, max_hours=1.5),
    StopKind.DOLLAR_CAP: StopReason(StopKind.DOLLAR_CAP, spent_usd=9.0, running_usd=0.5,
                                    next_usd=1.0, max_usd=10.0),
    StopKind.GRID_EXHAUSTED: StopReason(StopKind.GRID_EXHAUSTED, trials=6),
    StopKind.FAILURES_IN_A_ROW: StopReason(StopKind.FAILURES_IN_A_ROW, trials=3,
                                           last_error="RuntimeError: boom"),
    StopKind.INTERRUPTED: StopReason(StopKind.INTERRUPTED),
    StopKind.STOPPED: StopReason(StopKind.STOPPED),
    StopKind.WORKERS_FINISHED: StopReason(StopKind.WORKERS_FINISHED),
    StopKind.BUDGET_DRAINED: StopReason(StopKind.BUDGET_DRAINED),
    StopKind.DRAIN_TIMED_OUT: StopReason(StopKind.DRAIN_TIMED_OUT, drain_s=600.0),
    StopKind.RECORDED: StopReason(StopKind.RECORDED, text="an older sweep's reason"),
}


@pytest.mark.parametrize("kind", list(StopKind))
def test_every_stop_reason_renders_without_placeholders_and_round_trips(kind: StopKind) -> None:
    reason = SAMPLES[kind]
    text = render_stop_reason(reason)
    assert text and "{" not in text and "}" not in text
    assert StopReason.from_dict(reason.to_dict()) == reason


def test_stop_reasons_read_as_before() -> None:
    assert render_stop_reason(SAMPLES[StopKind.DOLLAR_CAP]) == (
        "dollar cap: $9.00 spent + $0.50 running + $1.00 for one more trial (worst cases) "
        "would pass max_usd $10.00")
    assert render_stop_reason(SAMPLES[StopKind.FAILURES_IN_A_ROW]).startswith(
        "3 trials failed in a row; last error: RuntimeError: boom; fix the objective")
    assert [k for k in StopKind if k.failure] == [StopKind.FAILURES_IN_A_ROW]


def test_a_cheap_sweeps_dollar_cap_writes_dollars_as_its_status_table() -> None:
    # a CPU sweep's cap read '$0.0000 spent + $0.0000 running + $0.0003 for one more trial'
    # under a table of '$0.000433'
    reason = StopReason(StopKind.DOLLAR_CAP, spent_usd=0.000433, running_usd=0.0,
                        next_usd=0.000331, max_usd=0.0001)
    assert render_stop_reason(reason) == (
        "dollar cap: $0.000433 spent + $0.00 running + $0.000331 for one more trial (worst "
        "cases) would pass max_usd $0.0001")


def test_each_stored_name_is_written_in_one_module() -> None:
    """Only advisor/sweep/accounting/records.py spells the ``advisor:*`` attribute names."""
    owner = ROOT / "advisor" / "sweep" / "accounting" / "records.py"
    names = set(re.findall(r'"(advisor:[a-z_]+:?)"', owner.read_text()))
    assert len(names) >= 20
    for package in ("advisor", "reports", "cli"):
        for path in (ROOT / package).rglob("*.py"):
            if path != owner:
                found = names & set(re.findall(r'"(advisor:[a-z_]+:?)"', path.read_text()))
                assert not found, f"{path.relative_to(ROOT)} spells {sorted(found)}"
