"""Reading an Optuna study (as ``advisor sweep`` leaves it) into sweep report values."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from advisor.errors import AdvisorError
from advisor.sweep import load_sweep_report_data, sweep_report_data
from advisor.sweep.accounting.records import COST_ATTR, INSTANCE_ATTR, MAX_USD_ATTR, PRICE_ATTR, WALL_ATTR

_LR = {"lr": FloatDistribution(1e-4, 1.0, log=True)}


def _study(url: str, *, budget: float | None = 2.0) -> optuna.Study:
    study = optuna.create_study(study_name="lr", storage=url, direction="minimize")
    study.set_user_attr(PRICE_ATTR, 1.2)
    study.set_user_attr(INSTANCE_ATTR, "aws:g5.xlarge:us-east-1:on-demand")
    if budget is not None:
        study.set_user_attr(MAX_USD_ATTR, budget)
    rows = [  # state, value, cost, steps
        (TrialState.COMPLETE, 0.30, 0.40, 10),
        (TrialState.COMPLETE, 0.25, 0.38, 10),
        (TrialState.PRUNED, None, 0.08, 2),
        (TrialState.FAIL, None, 0.01, 0),
    ]
    for i, (state, value, cost, steps) in enumerate(rows):
        study.add_trial(create_trial(
            state=state, value=value, params={"lr": 0.01 * (i + 1)}, distributions=_LR,
            intermediate_values={s: 1.0 - 0.05 * s for s in range(steps)},
            user_attrs={COST_ATTR: cost, PRICE_ATTR: 1.2, WALL_ATTR: cost / 1.2 * 3600}))
    return study


def test_study_becomes_report_values(tmp_path: Path) -> None:
    data = sweep_report_data(_study(f"sqlite:///{tmp_path / 's.db'}"))
    assert data.study == "lr" and data.direction == "minimize"
    assert data.instance == "aws:g5.xlarge:us-east-1:on-demand" and data.budget_usd == 2.0
    assert [t.state for t in data.trials] == ["complete", "complete", "pruned", "fail"]
    assert [t.cost_usd for t in data.trials] == [0.40, 0.38, 0.08, 0.01]
    assert data.spent_usd == pytest.approx(0.87)
    assert data.count_by_state() == {"complete": 2, "pruned": 1, "fail": 1}
    best = data.best_trial()
    assert best is not None and best.number == 1 and best.value == 0.25
    pruned = data.trials[2]
    assert pruned.value_is_intermediate and pruned.value == pytest.approx(0.95)
    # the pruned trial ran 2 of 10 steps: finishing would have cost 5x its $0.08
    assert data.saved_by_pruning_usd == pytest.approx(0.08 * 4)
    assert all(t.started_at is not None and t.started_at.tzinfo is not None
               for t in data.trials)


def test_budget_option_overrides_the_recorded_one(tmp_path: Path) -> None:
    study = _study(f"sqlite:///{tmp_path / 's.db'}", budget=None)
    assert sweep_report_data(study).budget_usd is None
    assert sweep_report_data(study, budget_usd=9.0).budget_usd == 9.0


def test_load_by_name_and_unknown_name(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    _study(url)
    assert len(load_sweep_report_data("lr", storage_url=url).trials) == 4
    with pytest.raises(AdvisorError, match=r"study 'nope' not found .*known: lr"):
        load_sweep_report_data("nope", storage_url=url)
