"""Probe planner: knowledge gradient per probe dollar over the model's intervals."""

from __future__ import annotations

import pytest

from advisor.errors import AdvisorError
from advisor.formatting import fmt_money
from advisor.ranking.planner import Candidate, ProbeSuggestion, knowledge_gradient, plan


def _c(name: str, value: float, sigma: float, price: float = 1.0) -> Candidate:
    return Candidate(name, value, sigma, f"aws:{name}:us-east-1:on-demand", price)


def test_certain_candidates_have_nothing_to_gain() -> None:
    assert knowledge_gradient([_c("a", 10, 0), _c("b", 8, 0)]) == [0.0, 0.0]


def test_uncertain_rival_is_worth_probing_and_a_hopeless_one_is_not() -> None:
    gains = knowledge_gradient([_c("top", 10, 0.0), _c("rival", 9, 0.3), _c("far", 1, 0.05)])
    assert gains[1] > 0.01
    assert gains[2] < 1e-6


@pytest.mark.parametrize(("median", "sigma"), [
    (9.0, 0.3),    # a rival just below the pick
    (12.0, 0.1),   # a rival above it, little doubt
    (4.0, 0.8),    # far below, wide interval
])
def test_gain_is_the_expected_maximum_integrated_by_scipy(median: float, sigma: float) -> None:
    import numpy as np
    from scipy.stats import lognorm

    gains = knowledge_gradient([_c("pick", 10, 0.0), _c("rival", median, sigma)])
    rival_mean = median * np.exp(sigma ** 2 / 2)
    best = max(10.0, rival_mean)
    expected_max = lognorm(s=sigma, scale=median).expect(lambda x: np.maximum(x, 10.0))
    assert gains[1] == pytest.approx(max(0.0, expected_max - best) / best, rel=1e-6, abs=1e-9)


def test_plan_ranks_by_cut_per_dollar_and_prices_the_probe() -> None:
    candidates = [_c("top", 10, 0.3, price=30.0), _c("rival", 9.5, 0.3, price=1.0)]
    suggestions = plan(candidates, 1, probe_minutes=6, run_cost_usd=1000)
    assert [s.accelerator for s in suggestions] == ["rival"]
    assert suggestions[0].probe_cost_usd == pytest.approx(0.1)
    assert suggestions[0].expected_saving_usd == pytest.approx(
        suggestions[0].expected_regret_cut_pct * 10)
    assert "rival" in suggestions[0].describe()


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(AdvisorError):
        _c("x", -1, 0.1)
    with pytest.raises(AdvisorError):
        plan([_c("a", 1, 0.1)], 1, probe_minutes=0)


@pytest.mark.parametrize("saving_usd", [
    0.00105,   # a cheap run's saving: '$0.00' hid it
    0.0456,
    12.5,
    1234.5,
])
def test_a_suggestion_states_its_saving_as_every_other_dollar_figure(saving_usd: float) -> None:
    line = ProbeSuggestion(offer_key="aws:g4dn.xlarge:us-east-1:spot", accelerator="T4",
                           probe_cost_usd=0.01, expected_regret_cut_pct=6.5,
                           expected_saving_usd=saving_usd).describe()
    assert f", expected saving {fmt_money(saving_usd)} on the run" in line
    assert "$0.00 " not in line


@pytest.mark.parametrize(("saving_usd", "worth_it"), [
    (0.00105, False),  # examples/mlp.yaml's suggestions: a $0.012 probe to save a tenth of a cent
    (0.01, True),      # as much as the probe costs: it pays for itself
    (12.5, True),
])
def test_a_suggestion_that_costs_more_than_it_saves_says_so(saving_usd: float,
                                                           worth_it: bool) -> None:
    line = ProbeSuggestion(offer_key="aws:g4dn.xlarge:us-east-1:spot", accelerator="T4",
                           probe_cost_usd=0.01, expected_regret_cut_pct=6.5,
                           expected_saving_usd=saving_usd).describe()
    assert ("less than the probe costs" not in line) == worth_it
    if not worth_it:
        assert line.endswith(f"expected saving {fmt_money(saving_usd)} on the run, less than "
                             "the probe costs")
