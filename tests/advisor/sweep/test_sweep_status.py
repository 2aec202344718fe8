"""Sweep status: trials and dollars by state, and dollars saved by pruning."""

from __future__ import annotations

import json
from typing import Any

import optuna
import pytest
from optuna.trial import TrialState

from advisor.sweep.accounting import status as status_module
from advisor.sweep.accounting.budget import cost_of
from advisor.sweep.accounting.records import COST_ATTR, PRICE_ATTR, WORKER_ATTR, StudySettings, write_settings
from advisor.sweep.accounting.status import pruning_savings_usd, sweep_status

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _trial(state: TrialState, steps: int, cost: float, value: float | None = None,
           worker: str | None = None) -> optuna.trial.FrozenTrial:
    attrs: dict[str, Any] = {COST_ATTR: cost} if worker is None else {COST_ATTR: cost,
                                                                      WORKER_ATTR: worker}
    return optuna.trial.create_trial(
        state=state, value=value, intermediate_values={i: 1.0 for i in range(steps)},
        user_attrs=attrs, params={"x": 1.0},
        distributions={"x": optuna.distributions.FloatDistribution(0, 2)})


def test_savings_scale_each_pruned_trial_to_full_length() -> None:
    trials = [_trial(TrialState.COMPLETE, 10, 10.0, 0.5),
              _trial(TrialState.PRUNED, 2, 2.0),    # would have cost 10: saved 8
              _trial(TrialState.PRUNED, 5, 5.0),    # would have cost 10: saved 5
              _trial(TrialState.FAIL, 1, 1.0)]      # failures are not savings
    costs = [t.user_attrs[COST_ATTR] for t in trials]
    assert pruning_savings_usd(trials, costs) == pytest.approx(13.0)


def test_status_sums_by_state_and_is_json() -> None:
    study = optuna.create_study(study_name="s", storage="sqlite:///:memory:")
    study.set_user_attr(PRICE_ATTR, 1.5)
    study.add_trials([_trial(TrialState.COMPLETE, 4, 3.0, 0.25),
                      _trial(TrialState.COMPLETE, 4, 3.0, 0.75),
                      _trial(TrialState.PRUNED, 1, 1.0)])
    status = sweep_status(study)
    assert status.trials_by_state == {"complete": 2, "pruned": 1}
    assert status.usd_by_state == {"complete": 6.0, "pruned": 1.0}
    assert status.spent_usd == 7.0
    assert status.saved_by_pruning_usd == pytest.approx(3.0)
    assert status.best_value == 0.25 and status.best_params == {"x": 1.0}
    assert json.loads(json.dumps(status.to_dict()))["price_usd_per_hour"] == 1.5


def test_status_costs_each_trial_once(monkeypatch: pytest.MonkeyPatch) -> None:
    study = optuna.create_study(study_name="s", storage="sqlite:///:memory:")
    study.add_trials([  # run on a launched worker: costed for its spend per worker too
        _trial(TrialState.COMPLETE, 4, 3.0, 0.25, worker="w0"),
        _trial(TrialState.PRUNED, 1, 1.0, worker="w0")])  # and for the pruning savings
    costed: list[int] = []

    def counted(trial: optuna.trial.FrozenTrial, **kwargs: Any) -> float:
        costed.append(trial.number)
        return cost_of(trial, **kwargs)

    monkeypatch.setattr(status_module, "cost_of", counted)
    status = sweep_status(study)
    assert sorted(costed) == [0, 1]
    assert status.spent_usd == 4.0 and status.saved_by_pruning_usd == pytest.approx(3.0)


def test_a_running_trial_costs_its_share_of_the_instance() -> None:
    """Two trials on one instance: a running one costs half its elapsed time, as the ledger
    and the gate count it."""
    study = optuna.create_study()
    write_settings(study, StudySettings(share=2, price_usd_per_hour=3.6))
    trial = study.ask()
    started = trial.datetime_start.timestamp() if trial.datetime_start else 0.0
    status = sweep_status(study, now_s=started + 100.0)
    assert status.usd_by_state["running"] == pytest.approx(100.0 / 3600 * 3.6 / 2)
