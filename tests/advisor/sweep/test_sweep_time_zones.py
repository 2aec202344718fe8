"""Trial times in any ``TZ``: the aggregate ledger equals the sum of its trials, reports say
when trials ran in UTC, and a study whose times another Optuna major version wrote is refused
in one line (Optuna 4 stores naive local time, Optuna 5 naive UTC)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import optuna
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from optuna.trial import TrialState
from sweep_helpers import write_sweep

from advisor.errors import AdvisorError
from advisor.sweep import load_status, run_worker, sweep_report_data
from advisor.sweep.accounting.ledger import ledger_from_trials, rdb_of, read_ledger
from advisor.sweep.accounting.timestamps import (
    CLOCK_ATTR,
    TrialClock,
    column_moment,
    column_value,
    frozen_moment,
    installed_clock,
)
from advisor.sweep.run.runner import open_study
from advisor.sweep.spec import load_sweep_spec
from cli.main import advisor
from probes.urls import sqlalchemy_url

optuna.logging.set_verbosity(optuna.logging.WARNING)

PRICE = 3600.0  # $1 per second


@pytest.fixture(params=[
    "America/Los_Angeles",  # behind UTC (7 or 8 hours)
    "Asia/Kolkata",         # ahead of UTC, by a fraction of an hour (+05:30)
    "UTC",                  # what CI used to run in only
])
def zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """This process's local time zone, for the test only."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TZ", request.param)
        time.tzset()
        yield request.param
    time.tzset()


def _study_with_every_kind_of_trial(tmp_path: Path, url: str) -> tuple[optuna.Study, float]:
    """Three trials run by a worker (charged), one failed without a charge (36 s, as a dead
    worker's trial failed by plain Optuna is), and one running for 30 s at the moment
    returned with the study (seconds since the epoch: the ledgers are read at that moment,
    not at whatever moment a loaded machine reaches them)."""
    spec = load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain", storage=url,
                                       study=f"tz-{uuid.uuid4().hex[:8]}",
                                       price_usd_per_hour=PRICE, budget={"max_trials": 3}))
    run_worker(spec)
    study = open_study(spec, price_usd_per_hour=PRICE)
    dist = {"x": optuna.distributions.FloatDistribution(-5, 5)}
    now = datetime.now(UTC).replace(microsecond=0)
    local_now = now.astimezone().replace(tzinfo=None)  # FrozenTrial times: naive local time
    orphan = optuna.trial.create_trial(state=TrialState.FAIL, params={"x": 0.5},
                                       distributions=dist)
    orphan.datetime_start = local_now - timedelta(seconds=100)
    orphan.datetime_complete = orphan.datetime_start + timedelta(seconds=36)
    study.add_trial(orphan)
    running = optuna.trial.create_trial(state=TrialState.RUNNING, params={"x": 0.5},
                                        distributions=dist)
    running.datetime_start = local_now - timedelta(seconds=30)
    study.add_trial(running)
    return study, now.timestamp()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_the_ledger_is_the_sum_of_its_trials_in_any_time_zone(
        tmp_path: Path, zone: str, backend: str, request: pytest.FixtureRequest) -> None:
    url = (f"sqlite:///{tmp_path / 'sweep.db'}" if backend == "sqlite"
           else sqlalchemy_url(request.getfixturevalue("postgres_url")))
    study, now_s = _study_with_every_kind_of_trial(tmp_path, url)
    trials = study.get_trials()
    aggregate = read_ledger(study, price_usd_per_hour=PRICE, now_s=now_s)
    listed = ledger_from_trials(trials, price_usd_per_hour=PRICE, now_s=now_s)
    charged = sum(float(t.user_attrs["advisor:cost_usd"]) for t in trials
                  if "advisor:cost_usd" in t.user_attrs)
    assert aggregate.spent_usd == pytest.approx(charged + 36.0, abs=0.01)
    assert listed.spent_usd == pytest.approx(aggregate.spent_usd, abs=0.01)
    assert aggregate.max_finished_usd == pytest.approx(36.0, abs=0.01)
    # the running trial: 30 s, not 30 s plus the zone's offset from UTC
    assert aggregate.running_elapsed_s == pytest.approx((30.0,), abs=0.01)
    assert listed.running_elapsed_s == pytest.approx((30.0,), abs=0.01)
    status = load_status(study.study_name, storage_url=url)
    assert status.spent_usd == pytest.approx(aggregate.spent_usd, abs=0.01)
    optuna.delete_study(study_name=study.study_name, storage=url)  # the server is shared


def test_the_report_says_when_trials_ran_in_utc(tmp_path: Path, zone: str) -> None:
    spec = load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain",
                                       price_usd_per_hour=PRICE, budget={"max_trials": 2}))
    before = datetime.now(UTC)
    run_worker(spec)
    data = sweep_report_data(optuna.load_study(study_name="t", storage=spec.storage))
    for trial in data.trials:
        assert trial.started_at is not None and trial.finished_at is not None
        assert trial.started_at.utcoffset() == timedelta(0)
        assert before - timedelta(seconds=5) <= trial.started_at <= datetime.now(UTC)
        assert trial.started_at <= trial.finished_at <= datetime.now(UTC)


@pytest.mark.parametrize("clock", list(TrialClock))
def test_trial_time_columns_round_trip_in_both_zones(zone: str, clock: TrialClock) -> None:
    moment = datetime(2026, 7, 1, 12, 30, 15, 250_000, tzinfo=UTC)
    stored = column_value(moment, clock)
    assert stored.tzinfo is None
    assert column_moment(stored, clock) == moment
    assert frozen_moment(moment.astimezone().replace(tzinfo=None)) == moment


def _other(clock: TrialClock) -> TrialClock:
    return TrialClock.LOCAL if clock is TrialClock.UTC else TrialClock.UTC


def _ran_sweep(tmp_path: Path) -> Path:
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 1})
    run_worker(load_sweep_spec(path))
    return path


def test_a_sweep_records_the_zone_of_its_trial_times(tmp_path: Path) -> None:
    path = _ran_sweep(tmp_path)
    study = optuna.load_study(study_name="t", storage=load_sweep_spec(path).storage)
    assert study.user_attrs[CLOCK_ATTR] == str(installed_clock())


@pytest.mark.parametrize("command", [
    ["sweep", "{path}"],                                    # a worker would add trials
    ["sweep", "status", "t", "--storage", "{url}"],         # a reader would misread them
    ["report", "sweep", "t", "--out", "{out}", "--storage", "{url}"],
])
def test_a_study_written_by_the_other_optuna_major_is_refused_in_one_line(
        tmp_path: Path, command: list[str]) -> None:
    path = _ran_sweep(tmp_path)
    url = load_sweep_spec(path).storage
    assert url is not None
    study = optuna.load_study(study_name="t", storage=url)
    theirs = _other(installed_clock())
    study.set_user_attr(CLOCK_ATTR, str(theirs))
    write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 3})  # room left
    args = [a.format(path=path, url=url, out=tmp_path / "r") for a in command]
    result = CliRunner().invoke(advisor, args)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: study 't' was written by "
                           f"Optuna {theirs.optuna_major} (trial times in ")
    assert f"optuna>={theirs.optuna_major}.0,<{theirs.optuna_major + 1}" in line


@pytest.mark.parametrize(("created_by", "refused"), [
    ("4.9.0", installed_clock() is TrialClock.UTC),    # an Optuna 4 database
    ("5.0.0", installed_clock() is TrialClock.LOCAL),  # an Optuna 5 database
])
def test_a_study_from_before_the_record_is_judged_by_its_databases_version(
        tmp_path: Path, created_by: str, refused: bool) -> None:
    path = _ran_sweep(tmp_path)
    spec = load_sweep_spec(path)
    study = optuna.load_study(study_name="t", storage=spec.storage)
    rdb = rdb_of(study)
    with rdb.engine.begin() as conn:  # as an earlier advisor left it, in a database made by...
        conn.execute(sa.text("DELETE FROM study_user_attributes WHERE key = :k"),
                     {"k": CLOCK_ATTR})
        conn.execute(sa.text("UPDATE version_info SET library_version = :v"), {"v": created_by})
    if refused:
        with pytest.raises(AdvisorError, match=r"^study 't' was written by Optuna \d"):
            open_study(spec)
    else:
        reopened = open_study(spec)
        assert reopened.user_attrs[CLOCK_ATTR] == str(installed_clock())
