"""Seeded samplers: a resumed sweep continues instead of re-drawing the trials it paid for, and
workers on one study never draw the same configurations."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from sweep_helpers import write_sweep

from advisor.sweep.run.objective import suggest
from advisor.sweep.run.runner import open_study, run_worker
from advisor.sweep.spec import load_sweep_spec
from advisor.sweep.spec.sampling import PerTrialSeedSampler, make_sampler, trial_seed

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _params(folder: Path) -> list[float]:
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{folder / 'sweep.db'}")
    return [t.params["x"] for t in study.trials]


@pytest.mark.parametrize("sampler", [
    {"type": "random", "seed": 0},                       # every trial drawn at random
    {"type": "tpe", "seed": 7, "n_startup_trials": 2},   # random start, then model-based
])
def test_resume_continues_as_an_uninterrupted_sweep_would(tmp_path: Path,
                                                          sampler: dict[str, object]) -> None:
    resumed = write_sweep(tmp_path / "resumed", entrypoint="objectives:plain", sampler=sampler,
                          budget={"max_trials": 2})
    spec = load_sweep_spec(resumed)
    run_worker(spec)
    run_worker(replace(spec, budget=replace(spec.budget, max_trials=4)))
    fresh = write_sweep(tmp_path / "fresh", entrypoint="objectives:plain", sampler=sampler,
                        budget={"max_trials": 4})
    run_worker(load_sweep_spec(fresh))
    params = _params(tmp_path / "resumed")
    assert len(set(params)) == 4  # trials 2 and 3 are not trials 0 and 1 again
    assert params == _params(tmp_path / "fresh")  # and a fresh study reproduces the sweep


@pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")
def test_workers_on_one_study_draw_different_configurations(tmp_path: Path) -> None:
    spec = load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain"))
    # two workers open the study at the same moment, each with its own sampler
    first, second = open_study(spec), open_study(spec)
    a, b = first.ask(), second.ask()
    assert suggest(a, spec.search_space) != suggest(b, spec.search_space)


def test_trial_seeds_are_stable_and_distinct() -> None:
    seeds = [trial_seed(0, n) for n in range(1000)]
    assert len(set(seeds)) == 1000 and seeds == [trial_seed(0, n) for n in range(1000)]
    assert trial_seed(1, 0) != trial_seed(0, 0)


@pytest.mark.parametrize(("sampler", "per_trial"), [
    ({"type": "tpe", "seed": 1}, True),      # seeded: one stream per trial
    ({"type": "random"}, False),             # unseeded: Optuna's own entropy already differs
    ({"type": "grid", "seed": 1}, False),    # grid: every worker must shuffle the grid alike
])
def test_which_samplers_are_seeded_per_trial(tmp_path: Path, sampler: dict[str, object],
                                            per_trial: bool) -> None:
    space = {"x": {"type": "categorical", "choices": [1.0, 2.0]}}
    spec = load_sweep_spec(write_sweep(tmp_path, sampler=sampler, search_space=space))
    assert isinstance(make_sampler(spec), PerTrialSeedSampler) is per_trial
