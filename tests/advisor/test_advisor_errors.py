"""The advisor's exception leaves: each raised in its case, each caught as AdvisorError."""

from __future__ import annotations

import pytest

from advisor import AdvisorError, NoFeasibleOffer
from tests.advisor.test_recommend import _recommend


def test_an_empty_ranking_has_no_pick_and_says_why() -> None:
    rec = _recommend(constraints={**_base_constraints(), "budget_usd": 0.01})
    assert not rec.ranked and rec.rejected
    with pytest.raises(NoFeasibleOffer) as caught:
        rec.pick()
    assert str(caught.value) == f"resnet50: {rec.advice[0]}"
    assert str(caught.value).startswith("resnet50: no offer meets every constraint: ")
    assert caught.value.workload == "resnet50" and caught.value.rejected == len(rec.rejected)


def test_no_feasible_offer_is_an_advisor_error() -> None:
    rec = _recommend(constraints={**_base_constraints(), "deadline_hours": 0.01})
    with pytest.raises(AdvisorError, match="no offer meets every constraint"):
        rec.pick()


def test_a_ranking_with_offers_picks_its_first() -> None:
    rec = _recommend()
    assert rec.pick() is rec.ranked[0]


def _base_constraints() -> dict[str, object]:
    from tests.advisor.test_recommend import SPEC

    constraints = SPEC["constraints"]
    assert isinstance(constraints, dict)
    return dict(constraints)
