"""Choosing the savings baseline and computing the top pick's savings."""

from __future__ import annotations

from dataclasses import replace

import pytest
from report_samples import (
    A2,
    EURO,
    GENERATED_AT,
    P4D_OD,
    P4D_SPOT,
    P4D_WEST,
    sample_recommendation,
)

import reports.baseline
from pricing import Market
from probes.offer_keys import OfferRef, parse_offer_key
from reports.baseline import DEFAULT_BASELINE_TEXT, choose_baseline, parse_baseline, savings
from reports.errors import ReportError
from reports.recommendation import render_recommendation_html


@pytest.mark.parametrize(("wanted", "expected"), [
    (None, P4D_OD),                                             # default: cheapest od 8x A100
    ("aws:p4d.24xlarge", P4D_OD),                               # any region, on-demand
    ("aws:p4d.24xlarge:us-east-1", P4D_OD),                     # no market: on-demand, not spot
    ("aws:p4d.24xlarge:us-east-1:spot", P4D_SPOT),              # spot only when named
    ("AWS:p4d.24xlarge:us-east-1:SPOT", P4D_SPOT),              # cloud and market any case
    ("aws:p4d.24xlarge:us-west-2", P4D_WEST),                   # region narrows
    ("aws:p4d.24xlarge:us-east-1:on-demand", P4D_OD),           # full key
    ("gcp:a2-highgpu-1g", A2),                                  # another cloud
])
def test_baseline_choice(wanted: str | None, expected: object) -> None:
    base = choose_baseline(sample_recommendation(), wanted)
    assert base is not None and base.offer == expected and base.estimate is not None


def test_default_baseline_says_how_it_was_chosen() -> None:
    base = choose_baseline(sample_recommendation())
    assert base is not None and base.chosen_by == DEFAULT_BASELINE_TEXT


def test_rejected_baseline_has_no_savings() -> None:
    base = choose_baseline(sample_recommendation(), "gcp:a2-highgpu-8g")
    assert base is not None and base.offer == EURO and base.estimate is None
    assert base.rejected_because == "region europe-west4 not in constraints.regions"
    assert savings(sample_recommendation().ranked[0], base) is None


def test_default_falls_back_to_any_on_demand_a100() -> None:
    rec = sample_recommendation()
    rec = replace(rec, ranked=tuple(e for e in rec.ranked if e.offer.accelerator_count == 1),
                  rejected=())
    base = choose_baseline(rec)
    assert base is not None and base.offer == A2 and "no 8x A100" in base.chosen_by


def test_no_a100_means_no_default_baseline() -> None:
    rec = sample_recommendation()
    rec = replace(rec, ranked=tuple(e for e in rec.ranked if e.offer.accelerator == "A10G"),
                  rejected=())
    assert choose_baseline(rec) is None


@pytest.mark.parametrize(("wanted", "message"), [
    ("p4d.24xlarge", "is not cloud:instance_type"),             # no cloud
    ("ibm:p4d.24xlarge", "cloud 'ibm' is not one of"),           # unknown cloud
    ("aws:p4d.24xlarge:us-east-1:reserved", "market 'reserved'"),  # unknown market
    ("local", "is not cloud:instance_type"),                    # this machine is no offer
    ("aws:g5.xlarge:us-east-1", "name the market it has, e.g. aws:g5.xlarge:us-east-1:spot"),
    ("aws:p4d.24xlarg", "did you mean aws:p4d.24xlarge"),        # typo
    ("aws:p4d.24xlarge:eu-west-1", "no offer of the recommendation matches"),  # no region
])
def test_bad_baseline_names_the_option(wanted: str, message: str) -> None:
    with pytest.raises(ReportError, match="--baseline") as info:
        choose_baseline(sample_recommendation(), wanted)
    assert message in str(info.value)


@pytest.mark.parametrize(("wanted", "market", "named"), [
    ("aws:p4d.24xlarge", Market.ON_DEMAND, False),                 # no region, no market
    ("aws:p4d.24xlarge:us-east-1", Market.ON_DEMAND, False),       # no market
    ("aws:p4d.24xlarge:us-east-1:spot", Market.SPOT, True),        # named
])
def test_parse_baseline_market(wanted: str, market: Market, named: bool) -> None:
    query = parse_baseline(wanted)
    assert (query.market, query.market_named) == (market, named)


def test_baseline_goes_through_the_shared_offer_key_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def spy(text: str, *, field: str = "offer") -> OfferRef:
        seen.append(text)
        return parse_offer_key(text, field=field)

    monkeypatch.setattr(reports.baseline, "parse_offer_key", spy)
    parse_baseline("aws:p4d.24xlarge:us-east-1")
    assert seen == ["aws:p4d.24xlarge:us-east-1"]


def test_defaulted_market_is_stated_in_the_report() -> None:
    rec = sample_recommendation()
    base = choose_baseline(rec, "aws:p4d.24xlarge:us-east-1")
    assert base is not None and base.chosen_by.endswith("no market named, so on-demand")
    document = render_recommendation_html(rec, baseline="aws:p4d.24xlarge:us-east-1",
                                          generated_at=GENERATED_AT)
    assert ("Baseline (--baseline aws:p4d.24xlarge:us-east-1; no market named, so on-demand): "
            "aws:p4d.24xlarge:us-east-1:on-demand at $32.77/h (on-demand price)") in document


def test_savings_against_on_demand_p4d() -> None:
    rec = sample_recommendation()
    base = choose_baseline(rec)
    assert base is not None and base.estimate is not None
    top = rec.ranked[0]
    saved = savings(top, base)
    assert saved is not None
    assert saved.run_saved_usd == pytest.approx(base.estimate.run_cost_usd - top.run_cost_usd)
    assert saved.run_saved_fraction == pytest.approx(1 - top.run_cost_usd /
                                                     base.estimate.run_cost_usd)
    # same accelerator and throughput: the per-sample saving is the price ratio
    assert saved.per_sample_fraction == pytest.approx(1 - 12.5 / 32.77)
    assert saved.per_sample_fraction_low < saved.per_sample_fraction < saved.per_sample_fraction_high
