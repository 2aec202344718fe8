"""The dollar ledger read with aggregate queries agrees with the one built from the trials."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState
from sqlalchemy.exc import IntegrityError
from sweep_helpers import stored_time

from advisor.sweep.accounting.ledger import ledger_from_trials, rdb_of, read_ledger, record_charge
from advisor.sweep.accounting.records import COST_ATTR, TrialCharge
from probes.urls import sqlalchemy_url

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _mixed_study(url: str) -> optuna.Study:
    """Completed and pruned trials with costs, a failed one without (dead worker), a running
    one started 30 s ago, and a waiting one."""
    study = optuna.create_study(study_name="ledger", storage=url)
    dist = {"x": optuna.distributions.FloatDistribution(0, 1)}
    start = datetime.now() - timedelta(seconds=100)
    for state, cost, value in [(TrialState.COMPLETE, 1.5, 0.3), (TrialState.COMPLETE, 4.0, 0.1),
                               (TrialState.PRUNED, 0.5, None), (TrialState.FAIL, 2.0, None)]:
        study.add_trial(optuna.trial.create_trial(
            state=state, value=value, params={"x": 0.5}, distributions=dist,
            user_attrs={COST_ATTR: cost}))
    orphan = optuna.trial.create_trial(state=TrialState.FAIL, params={"x": 0.5},
                                       distributions=dist)
    orphan.datetime_start, orphan.datetime_complete = start, start + timedelta(seconds=36)
    study.add_trial(orphan)
    running = study.ask()
    storage = study._storage  # noqa: SLF001 - backdate the running trial's start
    backend = getattr(storage, "_backend", storage)
    from optuna.storages._rdb import models

    with backend.engine.begin() as conn:
        table = models.TrialModel.__table__
        conn.execute(table.update().where(table.c.trial_id == running._trial_id).values(  # noqa: SLF001
            datetime_start=stored_time(30)))
    study.enqueue_trial({"x": 0.1})
    return study


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_aggregate_ledger_matches_the_trial_list(tmp_path: Path, backend: str,
                                                  request: pytest.FixtureRequest) -> None:
    # through the driver the project binds a plain postgresql:// URL to
    url = (f"sqlite:///{tmp_path / 'l.db'}" if backend == "sqlite"
           else sqlalchemy_url(request.getfixturevalue("postgres_url")))
    study = _mixed_study(url)
    if backend == "postgres":
        study = optuna.load_study(study_name="ledger", storage=url)
    price = 3600.0  # $1 per second: the orphan's 36 s cost $36
    fast = read_ledger(study, price_usd_per_hour=price)
    slow = ledger_from_trials(study.get_trials(), price_usd_per_hour=price)
    for ledger in (fast, slow):
        assert ledger.count(TrialState.COMPLETE) == 2
        assert ledger.count(TrialState.FAIL) == 2
        assert ledger.count(TrialState.WAITING) == 1
        assert ledger.spent_usd == pytest.approx(1.5 + 4.0 + 0.5 + 2.0 + 36.0, abs=0.1)
        assert ledger.max_complete_usd == pytest.approx(4.0)
        assert ledger.max_finished_usd == pytest.approx(36.0, abs=0.1)
        assert len(ledger.running_elapsed_s) == 1
        assert ledger.running_elapsed_s[0] == pytest.approx(30.0, abs=5.0)


def _charge(cost: float, wall: float, *, error: str | None = None) -> TrialCharge:
    return TrialCharge(started_at_s=100.0, price_usd_per_hour=3600.0, share=1, wall_s=wall,
                       cost_usd=cost, error=error)


def test_batched_attrs_land_on_the_trial_in_one_go(tmp_path: Path) -> None:
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'a.db'}")
    trial = study.ask()
    assert record_charge(study, trial, _charge(0.25, 9.0, error="first")) is TrialState.RUNNING
    record_charge(study, trial, _charge(0.5, 3.0, error="second"))
    study.tell(trial, 1.0)
    assert study.trials[0].user_attrs == _charge(0.5, 9.0, error="first").attrs()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_a_second_charge_keeps_the_larger_even_on_a_finished_trial(
        tmp_path: Path, backend: str, request: pytest.FixtureRequest) -> None:
    url = (f"sqlite:///{tmp_path / 'c.db'}" if backend == "sqlite"
           else sqlalchemy_url(request.getfixturevalue("postgres_url")))
    study = optuna.create_study(storage=url, study_name=f"charge-{backend}")
    trial = study.ask()
    study.tell(trial, state=TrialState.FAIL)  # failed by another process, say
    for cost, wall in [(5.0, 5.0), (3.0, 3.0), (7.5, 7.5)]:  # larger, smaller, larger
        assert record_charge(study, trial, _charge(cost, wall)) is TrialState.FAIL
    assert study.trials[0].user_attrs == _charge(7.5, 7.5).attrs()
    assert read_ledger(study, price_usd_per_hour=3600.0).spent_usd == 7.5  # counted once


def _inserts_refused(study: optuna.Study, times: int) -> list[str]:
    """Make the first ``times`` inserts of trial attributes fail as if another writer had
    inserted the same key first; returns the statements refused."""
    import sqlite3

    from sqlalchemy import event

    refused: list[str] = []

    def refuse(*args: Any) -> None:
        statement = str(args[2])
        if statement.startswith("INSERT INTO trial_user_attributes") and len(refused) < times:
            refused.append(statement)
            raise sqlite3.IntegrityError("UNIQUE constraint failed: trial_user_attributes.key")

    event.listen(rdb_of(study).engine, "before_cursor_execute", refuse)
    return refused


@pytest.mark.parametrize(("refusals", "lands"), [
    (2, True),   # two writers went first: the third try writes the charge
    (3, False),  # three tries refused: the database's error is raised
])
def test_a_charge_refused_by_a_concurrent_insert_is_tried_three_times(
        tmp_path: Path, refusals: int, lands: bool) -> None:
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'r.db'}")
    trial = study.ask()
    refused = _inserts_refused(study, refusals)
    if lands:
        assert record_charge(study, trial, _charge(0.5, 9.0)) is TrialState.RUNNING
        assert study.trials[0].user_attrs == _charge(0.5, 9.0).attrs()
    else:
        with pytest.raises(IntegrityError):
            record_charge(study, trial, _charge(0.5, 9.0))
        assert study.trials[0].user_attrs == {}
    assert len(refused) == refusals
