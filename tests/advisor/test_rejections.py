"""Rejections carry their rule and figures; readers group by kind, never by parsing text."""

from __future__ import annotations

from advisor.ranking import CostAssumptions, RejectionKind, cost_of, rank
from advisor.rejections import KIND_TEXT, Rejection
from advisor.serialize import rejection_row
from advisor.throughput import Basis, ThroughputEstimate
from pricing import Market
from tests.advisor.test_ranking import offer, spec


def test_every_kind_has_a_text_and_what_it_says_about_the_offers() -> None:
    assert set(KIND_TEXT) == set(RejectionKind)
    assert all(text.template and text.what for text in KIND_TEXT.values())


def test_deadline_and_budget_keep_the_figures_they_compared() -> None:
    slow = cost_of(spec(deadline_hours=1), offer(), ThroughputEstimate(100, 90, 110,
                                                                       Basis.PREDICTED),
                   CostAssumptions())
    _, rejected = rank(spec(deadline_hours=1), [slow])
    assert rejected[0].kind is RejectionKind.DEADLINE
    assert rejected[0].figures == {"run_hours": slow.run_hours, "deadline_hours": 1, "spot": ""}
    assert rejected[0].reason == f"run takes {slow.run_hours:,.1f} h > constraints.deadline_hours 1"
    _, over = rank(spec(budget_usd=0.5), [slow])
    assert over[0].kind is RejectionKind.BUDGET and over[0].figures["budget_usd"] == 0.5


def test_json_row_names_the_kind_and_figures() -> None:
    row = rejection_row(Rejection(offer(count=16), RejectionKind.TOO_MANY_ACCELERATORS,
                                  {"max_accelerators": 8}))
    assert row["reason_kind"] == "too-many-accelerators" and row["figures"] == {"max_accelerators": 8}
    assert row["reason"] == "16 accelerators > constraints.max_accelerators 8"


def test_a_spot_offer_over_the_deadline_names_its_interruption_band() -> None:
    spot = cost_of(spec(deadline_hours=1), offer("p4d.24xlarge", market=Market.SPOT),
                   ThroughputEstimate(100, 90, 110, Basis.PREDICTED), CostAssumptions())
    _, rejected = rank(spec(deadline_hours=1), [spot])
    assert "h (spot, interruption band 5-10%/month published) > constraints.deadline_hours 1" \
        in rejected[0].reason
