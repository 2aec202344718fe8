"""A second sweep into an existing study with a search space Optuna cannot take (a parameter's
type, log scale or choices changed) stops before any trial, in one line; a new range or a new
parameter goes on. It used to start trials that all failed on Optuna's 'Cannot set different
log configuration to the same parameter name', each charged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna
import pytest
from click.testing import CliRunner
from sweep_helpers import write_sweep

from advisor.errors import AdvisorError
from advisor.sweep.run.runner import run_worker
from advisor.sweep.spec import load_sweep_spec
from cli.main import advisor

optuna.logging.set_verbosity(optuna.logging.WARNING)

FIRST = {"x": {"type": "float", "low": 0.5, "high": 5.0}}
CATEGORIES = {"x": {"type": "float", "low": 0.5, "high": 5.0},
              "b": {"type": "categorical", "choices": [32, 64]}}


def _trials(folder: Path) -> int:
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{folder / 'sweep.db'}")
    return len(study.trials)


def _first_sweep(folder: Path, space: dict[str, Any]) -> None:
    run_worker(load_sweep_spec(write_sweep(folder, entrypoint="objectives:plain",
                                           search_space=space, budget={"max_trials": 2})))


@pytest.mark.parametrize(("first", "second", "says"), [
    # linear, then log
    (FIRST, {"x": {"type": "float", "low": 0.5, "high": 5.0, "log": True}},
     "search_space.x: float on a log scale does not fit study 't', whose trials drew it as "
     "float on a linear scale"),
    # float, then int
    (FIRST, {"x": {"type": "int", "low": 1, "high": 5}},
     "search_space.x: int on a linear scale does not fit study 't', whose trials drew it as "
     "float on a linear scale"),
    # other choices
    (CATEGORIES, {**CATEGORIES, "b": {"type": "categorical", "choices": [32, 64, 128]}},
     "search_space.b: categorical of [32, 64, 128] does not fit study 't', whose trials drew "
     "it as categorical of [32, 64]"),
])
def test_a_space_optuna_cannot_take_stops_before_any_trial(
        tmp_path: Path, first: dict[str, Any], second: dict[str, Any], says: str) -> None:
    _first_sweep(tmp_path, first)
    path = write_sweep(tmp_path, entrypoint="objectives:plain", search_space=second,
                       budget={"max_trials": 4})
    with pytest.raises(AdvisorError, match="^" + says.replace("[", r"\[")):
        run_worker(load_sweep_spec(path))
    assert _trials(tmp_path) == 2  # none started, none charged
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {says}") and result.stderr.count("\n") == 1
    assert "restore them, or give this search space a new 'study' name" in result.stderr
    assert _trials(tmp_path) == 2


@pytest.mark.parametrize("second", [
    {"x": {"type": "float", "low": 1.0, "high": 3.0}},            # a narrower range
    {**FIRST, "y": {"type": "int", "low": 1, "high": 3}},          # one more parameter
])
def test_a_new_range_or_parameter_goes_on(tmp_path: Path, second: dict[str, Any]) -> None:
    _first_sweep(tmp_path, FIRST)
    path = write_sweep(tmp_path, entrypoint="objectives:plain", search_space=second,
                       budget={"max_trials": 4})
    run_worker(load_sweep_spec(path))
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path / 'sweep.db'}")
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 4
