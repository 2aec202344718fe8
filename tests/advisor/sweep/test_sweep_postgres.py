"""Many workers on one PostgreSQL-backed study, and the faults they must survive.

Uses the private server from tests/conftest.py (``postgres_server``).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState
from sweep_helpers import write_sweep

from advisor.storage import sqlalchemy_url
from advisor.sweep.accounting.records import COST_ATTR
from advisor.sweep.workers import SweepOutcome, run_sweep

pytestmark = [pytest.mark.postgres]

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _trials(study: str, url: str) -> list[optuna.trial.FrozenTrial]:
    """The study's trials, read as advisor reads them (the plain URL bound to the installed
    driver), its connections closed."""
    storage = optuna.storages.RDBStorage(sqlalchemy_url(url))
    try:
        return optuna.load_study(study_name=study, storage=storage).trials
    finally:
        storage.engine.dispose()


def _markers(folder: Path) -> dict[int, int]:
    return {int(p.name): len(p.read_text().split()) for p in (folder / "markers").iterdir()}


def test_three_workers_share_one_study_without_duplicates(tmp_path: Path,
                                                          postgres_url: str) -> None:
    path = write_sweep(tmp_path, study="pg-three", storage=postgres_url,
                       entrypoint="objectives:marked", budget={"max_trials": 9})
    outcome = run_sweep(path, workers=3, poll_s=0.2)
    assert outcome.worker_exit_codes == (0, 0, 0)
    trials = _trials("pg-three", postgres_url)
    numbers = [t.number for t in trials]
    assert len(set(numbers)) == len(numbers) == len(trials)
    # the three workers' samplers share a seed, but no two trials got the same configuration
    assert len({t.params["x"] for t in trials}) == len(trials)
    # workers are admitted under an advisory lock near the cap: never one trial too many
    assert len(trials) == 9
    assert all(t.state is TrialState.COMPLETE for t in trials)
    # every trial ran exactly once, in one of the three worker processes
    markers = _markers(tmp_path)
    assert sorted(markers) == sorted(numbers) and set(markers.values()) == {1}


def test_max_trials_is_exact_when_workers_race_for_the_last_trials(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWEEP_TEST_SLEEP_S", "0")  # trials end together: the worst case
    path = write_sweep(tmp_path, study="pg-race", storage=postgres_url,
                       entrypoint="objectives:marked", budget={"max_trials": 7})
    outcome = run_sweep(path, workers=4, poll_s=0.2)
    assert outcome.worker_exit_codes == (0, 0, 0, 0)
    trials = _trials("pg-race", postgres_url)
    assert len(trials) == 7 and sorted(_markers(tmp_path)) == list(range(7))


def test_dollar_cap_counts_the_other_workers_admitted_trials(
        tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWEEP_TEST_SLEEP_S", "0.3")
    # $360/h = $0.1 per second: a trial costs about $0.03; its worst case adds a dead trial's
    # stale time (heartbeat 1 s: 2 s grace + 1 s) = $0.3, so the cap fits a few dozen
    path = write_sweep(tmp_path, study="pg-dollars", storage=postgres_url,
                       entrypoint="objectives:marked", price_usd_per_hour=360.0,
                       heartbeat_s=1, budget={"max_usd": 1.5, "max_trials": 200})
    run_sweep(path, workers=3, poll_s=0.2)
    trials = _trials("pg-dollars", postgres_url)
    costs = sorted(t.user_attrs[COST_ATTR] for t in trials)
    assert TrialState.RUNNING not in [t.state for t in trials]
    worst = costs[-1] + 0.3
    # each admission saw the others' running trials at their worst case: spend stays under
    # the cap, and the budget was used up to one worst case per worker, not left idle
    assert sum(costs) <= 1.5 + 1e-9
    assert sum(costs) >= 1.5 - 3 * worst


def _run_in_thread(path: Path, workers: int) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def target() -> None:
        box["outcome"] = run_sweep(path, workers=workers, poll_s=0.2)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def _wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_kill_9_of_a_worker_fails_its_trial_and_the_study_finishes(
        tmp_path: Path, postgres_url: str) -> None:
    path = write_sweep(tmp_path, study="pg-kill", storage=postgres_url,
                       entrypoint="objectives:sleeper", budget={"max_trials": 6})
    thread, box = _run_in_thread(path, workers=2)
    pid_file = tmp_path / "sleeper.pid"
    _wait_for(pid_file.exists, 60, "a worker to start the sleeping trial")
    time.sleep(0.2)
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    thread.join(timeout=120)
    assert not thread.is_alive()
    outcome: SweepOutcome = box["outcome"]
    assert sorted(outcome.worker_exit_codes) == [-signal.SIGKILL, 0]
    trials = _trials("pg-kill", postgres_url)
    states = [t.state for t in trials]
    assert states.count(TrialState.FAIL) == 1       # the killed worker's trial, by heartbeat
    assert TrialState.RUNNING not in states
    assert states.count(TrialState.COMPLETE) == len(trials) - 1 >= 5  # the other worker's
    assert outcome.status.trials_by_state["complete"] == len(trials) - 1


def test_sweep_survives_a_database_restart(tmp_path: Path, postgres_server: Any) -> None:
    url = postgres_server.url
    path = write_sweep(tmp_path, study="pg-restart", storage=url,
                       entrypoint="objectives:marked", budget={"max_trials": 14})
    thread, box = _run_in_thread(path, workers=2)
    _wait_for(lambda: (tmp_path / "markers").exists() and len(list(
        (tmp_path / "markers").iterdir())) >= 4, 60, "four trials")
    postgres_server.restart()
    thread.join(timeout=180)
    assert not thread.is_alive()
    outcome: SweepOutcome = box["outcome"]
    assert outcome.worker_exit_codes == (0, 0)
    states = [t.state for t in _trials("pg-restart", url)]
    assert TrialState.RUNNING not in states
    # trials cut by the restart may fail; the others complete and the budget is used up
    assert states.count(TrialState.COMPLETE) >= 10
    assert len(states) >= 14


def test_several_workers_with_json_print_only_the_json(
        tmp_path: Path, postgres_url: str, capfd: pytest.CaptureFixture[str]) -> None:
    import json

    from cli.main import main

    path = write_sweep(tmp_path, study="pg-json", storage=postgres_url,
                       entrypoint="objectives:plain", budget={"max_trials": 4})
    # in this process, as the console script runs it: capfd reads file descriptors 1 and 2,
    # so a worker process writing to the wrong one is seen as it would be in a terminal
    with pytest.raises(SystemExit) as done:
        main(["sweep", str(path), "--workers", "2", "--json"])
    out, err = capfd.readouterr()
    assert done.value.code == 0, err
    status = json.loads(out)  # the workers' "worker done" lines went to stderr
    assert status["trials_by_state"] == {"complete": 4}
    assert err.count("worker done: ") == 2
