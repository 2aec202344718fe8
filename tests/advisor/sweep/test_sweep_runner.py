"""The worker loop: search space, failing entrypoints, resume, samplers and pruners."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from sweep_helpers import write_sweep

from advisor.errors import AdvisorError
from advisor.sweep.accounting.records import CAPTURED_ATTR, COST_ATTR, ERROR_ATTR, MAX_USD_ATTR
from advisor.sweep.run.runner import run_worker
from advisor.sweep.spec import PrunerKind, SamplerKind, load_sweep_spec, parse_sweep_spec
from advisor.sweep.spec.sampling import make_pruner, make_sampler
from advisor.sweep.workers import check_workers_storage, run_sweep

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _study(folder: Path, name: str = "t") -> optuna.Study:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{folder / 'sweep.db'}")


def test_search_space_is_applied_before_the_entrypoint(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:raises_on_odd",
                       search_space={"x": {"type": "int", "low": 1, "high": 9, "log": True}},
                       budget={"max_trials": 2})
    run_worker(load_sweep_spec(path))
    trial = _study(tmp_path).trials[0]
    assert trial.value == trial.params["x"] and 1 <= trial.params["x"] <= 9


def test_entrypoint_that_raises_fails_only_its_trial(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:raises_on_odd", budget={"max_trials": 5})
    result = run_worker(load_sweep_spec(path))
    states = [t.state for t in _study(tmp_path).trials]
    assert states == [TrialState.COMPLETE, TrialState.FAIL] * 2 + [TrialState.COMPLETE]
    assert "max_trials" in result.stop_reason
    # a failed trial is still charged for its time
    assert all(COST_ATTR in t.user_attrs for t in _study(tmp_path).trials)


def test_trials_failing_in_a_row_stop_the_worker_with_the_last_error(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:always_fails",
                       budget={"max_trials": 30, "max_consecutive_failures": 3})
    result = run_worker(load_sweep_spec(path))
    trials = _study(tmp_path).trials
    assert [t.state for t in trials] == [TrialState.FAIL] * 3
    assert result.stop_reason.startswith("3 trials failed in a row; last error: RuntimeError: "
                                         "broken objective (trial 2); fix the objective")
    assert trials[2].user_attrs[ERROR_ATTR] == "RuntimeError: broken objective (trial 2)"


def test_a_success_between_failures_resets_the_count(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:raises_on_odd",
                       budget={"max_trials": 6, "max_consecutive_failures": 2})
    result = run_worker(load_sweep_spec(path))
    assert len(_study(tmp_path).trials) == 6 and "max_trials" in result.stop_reason


def test_syntax_error_in_the_entrypoint_names_file_and_line(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="syn:objective")
    (tmp_path / "syn.py").write_text("x = 1\ndef objective(trial:\n    return 1\n")
    with pytest.raises(AdvisorError, match=r"importing 'syn' failed: SyntaxError: .*"
                                           r"\(syn.py, line 2\)$"):
        run_worker(load_sweep_spec(path))
    assert not (tmp_path / "sweep.db").exists()  # checked before the study is touched


def test_rerun_resumes_the_study(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, budget={"max_trials": 3})
    run_worker(load_sweep_spec(path))
    spec = load_sweep_spec(path)
    run_worker(replace(spec, budget=replace(spec.budget, max_trials=5)))
    assert [t.number for t in _study(tmp_path).trials] == [0, 1, 2, 3, 4]


def test_grid_sampler_stops_when_the_grid_is_walked(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, sampler="grid", budget={"max_trials": 50},
                       search_space={"x": {"type": "categorical", "choices": [1.0, 2.0, 3.0]}})
    result = run_worker(load_sweep_spec(path))
    assert sorted(t.params["x"] for t in _study(tmp_path).trials) == [1.0, 2.0, 3.0]
    assert "grid" in result.stop_reason


def test_missing_entrypoint_module_is_a_clear_error(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="nowhere:objective")
    with pytest.raises(AdvisorError, match="cannot import 'nowhere'"):
        run_worker(load_sweep_spec(path))


@pytest.mark.parametrize("kind", list(SamplerKind))
def test_every_sampler_builds(kind: SamplerKind) -> None:
    space = {"x": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.5}}
    spec = parse_sweep_spec({"study": "s", "entrypoint": "m:f", "sampler": str(kind),
                             "search_space": space, "budget": {"max_trials": 1}})
    assert isinstance(make_sampler(spec), optuna.samplers.BaseSampler)


@pytest.mark.parametrize(("kind", "cls"), [
    (PrunerKind.NONE, optuna.pruners.NopPruner),
    (PrunerKind.MEDIAN, optuna.pruners.MedianPruner),
    (PrunerKind.PERCENTILE, optuna.pruners.PercentilePruner),
    (PrunerKind.SUCCESSIVE_HALVING, optuna.pruners.SuccessiveHalvingPruner),
    (PrunerKind.HYPERBAND, optuna.pruners.HyperbandPruner),
    (PrunerKind.WILCOXON, optuna.pruners.WilcoxonPruner),
])
def test_every_pruner_builds(kind: PrunerKind, cls: type) -> None:
    spec = parse_sweep_spec({"study": "s", "entrypoint": "m:f", "pruner": str(kind),
                             "budget": {"max_trials": 1}})
    assert isinstance(make_pruner(spec), cls)


def test_several_workers_on_sqlite_are_refused_with_the_reason() -> None:
    with pytest.raises(AdvisorError, match="needs a PostgreSQL storage URL.*database is locked"):
        check_workers_storage("sqlite:///x.db", 2)
    check_workers_storage("sqlite:///x.db", 1)
    check_workers_storage("postgresql://u@h/db", 4)


def test_offer_key_prices_trials_from_the_catalog(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, instance="aws:g5.xlarge:us-east-1:spot", budget={"max_trials": 1})
    outcome = run_sweep(path)
    assert outcome.status.price_usd_per_hour == pytest.approx(0.397)
    assert outcome.status.instance == "aws:g5.xlarge:us-east-1:spot"


def test_study_records_the_budget_and_the_price_capture_date(tmp_path: Path) -> None:
    from advisor.sweep import load_sweep_report_data
    from advisor.sweep.accounting.instances import find_offer

    path = write_sweep(tmp_path, instance="aws:g5.xlarge:us-east-1:spot",
                       budget={"max_trials": 1, "max_usd": 2.5})
    run_sweep(path)
    attrs = _study(tmp_path).user_attrs
    observed = find_offer("aws:g5.xlarge:us-east-1:spot").observed_at
    assert attrs[MAX_USD_ATTR] == 2.5
    assert attrs[CAPTURED_ATTR] == observed.isoformat()
    data = load_sweep_report_data("t", storage_url=f"sqlite:///{tmp_path / 'sweep.db'}")
    assert data.prices_captured_at == observed


def test_local_instance_without_dollar_cap_records_neither(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, budget={"max_trials": 1})
    run_sweep(path)
    attrs = _study(tmp_path).user_attrs
    assert MAX_USD_ATTR not in attrs and CAPTURED_ATTR not in attrs


def test_unknown_offer_key_suggests_close_ones(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, instance="aws:g5.xlarge:us-east-9:spot")
    with pytest.raises(AdvisorError, match="did you mean aws:g5.xlarge"):
        run_sweep(path)
