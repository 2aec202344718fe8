"""A live trial failed as stale (its heartbeat late under load) keeps its own final charge.

The interleaving is driven through the real code paths on SQLite: while the worker's trial
runs, a second study handle (another worker) finds its heartbeat stale, fails it and charges
it (``charge_stale_trial``); then the trial finishes in its own process. The charge is the
larger of the two, counted once, and the worker goes on with its next trial.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy as sa
from optuna.trial import TrialState
from sweep_helpers import stored_time, write_sweep

from advisor.sweep import load_status, run_worker
from advisor.sweep.accounting.records import COST_ATTR, FOUND_DEAD_ATTR, WALL_ATTR
from advisor.sweep.run.heartbeat import fail_stale_trials
from advisor.sweep.run.runner import open_study
from advisor.sweep.spec import load_sweep_spec

optuna.logging.set_verbosity(optuna.logging.ERROR)

pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")

PRICE = 3600.0  # $1 per second
OWN_RUN_S = 180.0  # what the trial's own clock says it ran


@pytest.mark.parametrize("ran_before_found_s", [
    0.0,      # found "dead" at once: its own, later charge (180 s) lands
    600.0,    # the stale charge (600 s and the moments to find it) is larger: it stays
])
def test_a_trial_failed_as_stale_while_alive_is_charged_the_larger_charge_once(
        tmp_path: Path, ran_before_found_s: float) -> None:
    path = write_sweep(tmp_path, price_usd_per_hour=PRICE, budget={"max_trials": 2})
    spec = load_sweep_spec(path)
    now = [1_000_000.0]  # the worker's clock (its cost accounting), moved by the objective
    moments: dict[str, float] = {}  # the wall clock as the other worker found it "dead"

    def objective(trial: optuna.Trial) -> float:
        if trial.number == 0:
            other = open_study(spec)  # another worker's handle on the same study
            rdb: Any = other._storage._backend  # type: ignore[attr-defined]  # noqa: SLF001
            moments["set"] = time.time()
            started = stored_time(ran_before_found_s, now_s=moments["set"])
            with rdb.engine.begin() as conn:  # a late heartbeat (and, row 2, a long run)
                conn.execute(sa.text("UPDATE trial_heartbeats SET heartbeat = "
                                     "datetime('now', '-60 seconds') WHERE trial_id = :t"),
                             {"t": trial._trial_id})  # noqa: SLF001
                conn.execute(sa.text("UPDATE trials SET datetime_start = :s WHERE trial_id = :t"),
                             {"s": started, "t": trial._trial_id})  # noqa: SLF001
            moments["before"] = time.time()
            fail_stale_trials(other)  # fails it and charges it until found "dead"
            moments["after"] = time.time()
            assert other.trials[0].state is TrialState.FAIL
            now[0] += OWN_RUN_S  # ...but it was alive, and runs on
        return 1.0

    result = run_worker(spec, clock=lambda: now[0], objective=objective)

    assert "max_trials" in result.stop_reason  # the worker went on to its next trial
    assert result.trials_run == 2
    trials = optuna.load_study(study_name="t", storage=spec.storage).trials
    assert [t.state for t in trials] == [TrialState.FAIL, TrialState.COMPLETE]
    late = trials[0].user_attrs
    assert FOUND_DEAD_ATTR in late  # the stale charge was written first
    # the larger of its own charge and the stale one (found between two clock reads)
    low, high = (max(OWN_RUN_S, ran_before_found_s + moments[at] - moments["set"] + slack)
                 for at, slack in (("before", -1e-3), ("after", 1e-3)))
    assert low <= late[COST_ATTR] <= high, (low, late, high)
    assert late[WALL_ATTR] == pytest.approx(late[COST_ATTR])  # $1 a second
    status = load_status("t", storage_url=spec.storage)
    assert status.usd_by_state["fail"] == pytest.approx(late[COST_ATTR])  # counted once
    assert status.spent_usd == pytest.approx(late[COST_ATTR] + trials[1].user_attrs[COST_ATTR])
