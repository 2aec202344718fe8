"""A killed worker's trial: failed once its heartbeat is stale, charged until it was found
dead, in ``status`` and on resume; and the status totals are the sums of their rows."""

from __future__ import annotations

import json
import time
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from optuna.trial import TrialState
from sweep_helpers import dead_worker_trial as _dead_worker_trial
from sweep_helpers import write_sweep

from advisor.sweep import load_status, run_worker
from advisor.sweep.accounting.records import COST_ATTR
from advisor.sweep.spec import SweepSpec, load_sweep_spec
from cli.main import advisor

optuna.logging.set_verbosity(optuna.logging.WARNING)

pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")

PRICE = 3600.0  # $1 per second


def _spec(tmp_path: Path, **fields: object) -> SweepSpec:
    values: dict[str, object] = {"heartbeat_s": 5, **fields}
    return load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain",
                                       price_usd_per_hour=PRICE, **values))


class _Moments:
    """The wall clock read before and after a block: a trial found dead inside it was found
    between the two, however long a loaded machine took (no guessed allowance)."""

    def __enter__(self) -> None:
        self.start_s = time.time()

    def __exit__(self, *_: object) -> None:
        self.end_s = time.time()

    def charges(self, set_at_s: float, seconds: float) -> tuple[float, float]:
        """The least and the most charge of a trial started ``seconds`` before ``set_at_s``
        and found dead in the block, at $1 a second (to the microsecond the database keeps)."""
        return (self.start_s - set_at_s + seconds - 1e-3, self.end_s - set_at_s + seconds + 1e-3)


def test_status_fails_a_stale_trial_and_charges_it_until_found_dead(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    set_at = time.time()
    _dead_worker_trial(spec, ran_s=30, silent_s=600, now_s=set_at)  # grace period: 10 s
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    found = _Moments()
    with found:
        first = load_status("t", storage_url=url)
    again = load_status("t", storage_url=url)
    assert first.trials_by_state == {"fail": 1}
    # found dead 630 s after it started, at $1/s: never less than the 30 s + it surely ran
    low, high = found.charges(set_at, 630.0)
    assert low <= first.usd_by_state["fail"] <= high, (low, first.usd_by_state, high)
    assert again.usd_by_state == first.usd_by_state  # it does not grow any more
    assert first.spent_usd == pytest.approx(sum(first.usd_by_state.values()))
    assert "stopped sending heartbeats" in first.last_error


def test_a_trial_with_a_recent_heartbeat_keeps_running(tmp_path: Path) -> None:
    spec = _spec(tmp_path, heartbeat_s=600)  # grace period: 20 minutes
    _dead_worker_trial(spec, ran_s=30, silent_s=60)
    status = load_status("t", storage_url=f"sqlite:///{tmp_path / 'sweep.db'}")
    assert status.trials_by_state == {"running": 1}


def test_resume_fails_and_charges_the_dead_trial_before_the_budget_check(tmp_path: Path) -> None:
    spec = _spec(tmp_path, budget={"max_usd": 5000.0, "max_trials": 3})
    set_at = time.time()
    dead = _dead_worker_trial(spec, ran_s=30, silent_s=600, now_s=set_at)
    found = _Moments()
    with found:
        result = run_worker(spec)
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path / 'sweep.db'}")
    trial = study.trials[dead]
    assert trial.state is TrialState.FAIL
    low, high = found.charges(set_at, 630.0)  # until found dead
    assert low <= trial.user_attrs[COST_ATTR] <= high, (low, trial.user_attrs, high)
    # the dead trial counts once, as failed; the sweep goes on to its max_trials
    assert [t.state for t in study.trials[1:]] == [TrialState.COMPLETE] * 2
    assert "max_trials" in result.stop_reason


def _dollars(line: str) -> float:
    return float(line.split("$")[-1].split()[0].replace(",", ""))


def test_status_table_total_is_the_sum_of_its_rows(tmp_path: Path) -> None:
    spec = _spec(tmp_path, heartbeat_s=600, budget={"max_trials": 3})
    run_worker(spec)
    _dead_worker_trial(spec, ran_s=40, silent_s=5)  # running, alive: shown at its cost so far
    result = CliRunner().invoke(advisor, ["sweep", "status", "t", "--storage",
                                          f"sqlite:///{tmp_path / 'sweep.db'}"])
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[1]: _dollars(line) for line in result.stdout.splitlines()
            if line.startswith("│")}
    assert set(rows) == {"complete", "running", "total"}
    assert rows["running"] > 40
    assert rows["total"] == pytest.approx(rows["complete"] + rows["running"], abs=0.011)
    as_json = CliRunner().invoke(advisor, ["sweep", "status", "t", "--storage",
                                           f"sqlite:///{tmp_path / 'sweep.db'}", "--json"])
    status = json.loads(as_json.stdout)
    assert status["spent_usd"] == pytest.approx(status["usd_by_state"]["complete"])
