"""Objectives that fail badly: no number returned, sys.exit(), Ctrl-C (issues 16 and 17)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from optuna.trial import TrialState
from sweep_helpers import write_sweep

from advisor.sweep.accounting.records import COST_ATTR, ERROR_ATTR
from advisor.sweep.run.runner import run_worker
from advisor.sweep.spec import load_sweep_spec
from cli.main import advisor

optuna.logging.set_verbosity(optuna.logging.WARNING)

REPO = Path(__file__).resolve().parents[3]
INTERRUPTED_LINE = (
    "interrupted (Ctrl-C): the sweep stopped; a running trial is recorded as failed "
    "(interrupted) and charged for its time; run the same command again to resume")


def _trials(folder: Path) -> list[optuna.trial.FrozenTrial]:
    return optuna.load_study(study_name="t", storage=f"sqlite:///{folder / 'sweep.db'}").trials


@pytest.mark.parametrize(("entrypoint", "error"), [
    # a string is not a loss, even one float() would read
    ("returns_text", "objective returned 'low loss' (a str), not a number; return a float"),
    # NaN (was: "last error: none recorded")
    ("returns_nan", "objective returned NaN; return a number (report a diverged loss as a "
                    "large value, or raise optuna.TrialPruned)"),
    # no return statement
    ("returns_none", "objective returned None, not a number; return the value to optimize "
                     "as a float"),
])
def test_an_objective_that_returns_no_number_fails_with_that_reason(
        tmp_path: Path, entrypoint: str, error: str) -> None:
    path = write_sweep(tmp_path, entrypoint=f"objectives:{entrypoint}", budget={"max_trials": 2})
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 1
    trials = _trials(tmp_path)
    assert [t.state for t in trials] == [TrialState.FAIL] * 2
    assert [t.user_attrs[ERROR_ATTR] for t in trials] == [error] * 2
    lines = result.stderr.strip().splitlines()
    assert f"trial 0 failed: {error}" in lines and f"trial 1 failed: {error}" in lines
    assert "Traceback" not in result.stderr
    assert lines[-1] == (f"error: every trial failed (2); last error: {error}; fix the "
                         "objective, then run the sweep again to resume it")


def test_sys_exit_in_the_objective_fails_only_its_trial(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:calls_exit", budget={"max_trials": 3})
    result = run_worker(load_sweep_spec(path))
    trials = _trials(tmp_path)
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL,
                                         TrialState.COMPLETE]
    assert trials[1].user_attrs[ERROR_ATTR] == "objective called sys.exit(3)"
    assert COST_ATTR in trials[1].user_attrs
    assert result.stop_reason == "max_trials reached (3 of 3)"


def test_sys_exit_in_every_trial_stops_by_the_failure_policy(tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text("import sys\n\ndef objective(trial):\n    sys.exit(3)\n")
    path = write_sweep(tmp_path, entrypoint="exits:objective",
                       budget={"max_trials": 9, "max_consecutive_failures": 2})
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "error: every trial failed (2); last error: objective called sys.exit(3); fix the "
        "objective, then run the sweep again to resume it")


def test_ctrl_c_in_a_trial_fails_it_as_interrupted_and_stops(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:ctrl_c", budget={"max_trials": 6},
                       price_usd_per_hour=3600.0)
    result = run_worker(load_sweep_spec(path))
    assert (result.trials_run, result.stop_reason) == (3, "interrupted (Ctrl-C)")
    trials = _trials(tmp_path)
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 2 + [TrialState.FAIL]
    attrs = trials[2].user_attrs
    assert attrs[ERROR_ATTR] == "interrupted (Ctrl-C)"
    assert attrs[COST_ATTR] >= 0.05  # charged for its time ($1 a second here)


def test_ctrl_c_in_the_cli_is_one_line_and_exit_130(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:ctrl_c", budget={"max_trials": 6})
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 130
    assert result.stderr.strip().splitlines()[-1] == INTERRUPTED_LINE
    assert "Traceback" not in result.stderr and "Aborted" not in result.output


def _start_as_from_a_terminal(args: list[str]) -> subprocess.Popen[str]:
    """Start ``args`` with Ctrl-C (SIGINT) raising KeyboardInterrupt in it, as a terminal
    starts it, even where this test runs with SIGINT ignored (a background job, nohup, some
    CI runners): an ignored signal stays ignored across exec, and Python then installs no
    handler; a handler in this process is reset to the default in the child instead."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={**os.environ, "COLUMNS": "200"})
    finally:
        signal.signal(signal.SIGINT, previous)


def test_sigint_to_a_running_sweep_records_the_trial_and_exits_130(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:waits_for_ctrl_c",
                       budget={"max_trials": 5}, price_usd_per_hour=3600.0)
    proc = _start_as_from_a_terminal([sys.executable, "-m", "cli", "sweep", str(path)])
    try:
        deadline = time.monotonic() + 120  # starting Python and two trials on a loaded machine
        while not (tmp_path / "started.txt").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.3)  # trial 1 runs this long at least before Ctrl-C: its charge
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # never leave it sleeping behind a failed test
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == INTERRUPTED_LINE
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    trials = _trials(tmp_path)
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL]
    assert trials[1].user_attrs[ERROR_ATTR] == "interrupted (Ctrl-C)"
    assert trials[1].user_attrs[COST_ATTR] >= 0.3  # $1 a second, ran 0.3 s or more


@pytest.mark.parametrize("raised", [
    "GeneratorExit('closed')",           # a generator's close() escaping the objective
    "type('Halt', (BaseException,), {})('stop here')",  # the user's own BaseException
])
def test_a_base_exception_in_the_objective_fails_only_its_trial(tmp_path: Path,
                                                                raised: str) -> None:
    # Optuna catches Exception only: the trial stayed RUNNING and the worker died
    (tmp_path / "halts.py").write_text(
        "def objective(trial):\n"
        "    x = trial.params['x']\n"
        f"    if trial.number == 1:\n        raise {raised}\n"
        "    return x\n")
    path = write_sweep(tmp_path, entrypoint="halts:objective", budget={"max_trials": 3})
    result = run_worker(load_sweep_spec(path))
    trials = _trials(tmp_path)
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL,
                                         TrialState.COMPLETE]
    error = trials[1].user_attrs[ERROR_ATTR]
    assert error.startswith("objective raised ") and COST_ATTR in trials[1].user_attrs
    assert result.stop_reason == "max_trials reached (3 of 3)"
