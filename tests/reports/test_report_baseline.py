"""Choosing the savings baseline and computing the top pick's savings."""

from __future__ import annotations

import csv
import html
import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from report_samples import (
    A2,
    EURO,
    GENERATED_AT,
    P4D_OD,
    P4D_SPOT,
    P4D_WEST,
    estimate,
    sample_recommendation,
)

import advisor.ranking.service
import reports.baseline
from advisor.ranking.offers import with_on_demand_twins
from advisor.throughput.estimate import Basis
from cli.main import advisor as advisor_cli
from pricing import Market, OfferRef, parse_offer_key
from reports.baseline import (
    DEFAULT_BASELINE_TEXT,
    Baseline,
    CompareMarket,
    choose_baseline,
    parse_baseline,
    savings,
)
from reports.errors import ReportError
from reports.formatting import fmt_money
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
    # same accelerator and throughput: the per-sample saving is the price ratio, at either
    # end of the one interval both sides share (not a spread of two independent guesses)
    assert saved.per_sample_fraction == pytest.approx(1 - 12.5 / 32.77)
    assert saved.per_sample_fraction_low == pytest.approx(saved.per_sample_fraction)
    assert saved.per_sample_fraction_high == pytest.approx(saved.per_sample_fraction)


def test_the_same_hardware_elsewhere_saves_its_price_difference_without_a_guess() -> None:
    # the pick against itself in another region read "saves -$14.84 to $5.46 (point
    # estimate $0.00)": two independent errors of what is one throughput estimate
    rec = sample_recommendation()
    top = next(e for e in rec.ranked if e.offer == P4D_OD)
    west = next(e for e in rec.ranked if e.offer == P4D_WEST)
    saved = savings(top, Baseline(P4D_WEST, west, None, "test"))
    assert saved is not None
    assert saved.run_saved_usd == pytest.approx(west.run_cost_usd - top.run_cost_usd)
    assert saved.run_saved_usd_low == pytest.approx(saved.run_saved_usd)
    assert saved.run_saved_usd_high == pytest.approx(saved.run_saved_usd)
    assert saved.describe().startswith(f"saves {fmt_money(saved.run_saved_usd)} on the run ")
    itself = savings(top, Baseline(P4D_OD, top, None, "test"))
    assert itself is not None and itself.run_saved_usd_low == itself.run_saved_usd_high == 0


def test_other_hardware_keeps_the_range_of_both_intervals() -> None:
    rec = sample_recommendation()
    a2 = next(e for e in rec.ranked if e.offer == A2)  # measured, another device count
    p4d = next(e for e in rec.ranked if e.offer == P4D_OD)
    saved = savings(a2, Baseline(P4D_OD, p4d, None, "test"))
    assert saved is not None
    assert saved.run_saved_usd_low < saved.run_saved_usd < saved.run_saved_usd_high
    assert saved.per_sample_fraction_low < saved.per_sample_fraction < saved.per_sample_fraction_high
    assert (f"saves {fmt_money(saved.run_saved_usd_low)} to "
            f"{fmt_money(saved.run_saved_usd_high)} on the run") in saved.describe()


def _twinned_recommendation():  # type: ignore[no-untyped-def]
    """The sample recommendation with each spot row's on-demand twin filled in, as ``rank``
    does (the spot p4d gets the on-demand p4d of us-east-1)."""
    rec = sample_recommendation()
    return replace(rec, ranked=tuple(with_on_demand_twins(rec.ranked)))


def test_saving_compares_like_for_like_and_shows_the_spot_discount_apart() -> None:
    rec = _twinned_recommendation()
    top = rec.ranked[0]
    assert top.offer == P4D_SPOT and top.on_demand is not None
    base = choose_baseline(rec, "aws:p4d.24xlarge:us-east-1")
    assert base is not None and base.estimate is not None
    saved = savings(top, base)
    assert saved is not None and saved.compare_market is CompareMarket.SAME
    # the same instance on demand against itself: the hardware choice saves nothing ...
    assert saved.pick_side.offer == P4D_OD and not saved.mixed_markets
    assert saved.run_saved_usd == pytest.approx(0.0)
    # ... and the whole difference is the spot discount, shown apart
    assert saved.spot_discount_usd == pytest.approx(base.estimate.run_cost_usd - top.run_cost_usd)
    text = saved.describe()
    assert "both on-demand (the pick at its on-demand price $32.77/h)" in text
    assert f"the spot discount saves ${saved.spot_discount_usd:,.2f} more" in text


def test_compare_market_any_counts_the_spot_discount_and_names_its_share() -> None:
    rec = _twinned_recommendation()
    base = choose_baseline(rec, "aws:p4d.24xlarge:us-east-1")
    assert base is not None and base.estimate is not None
    saved = savings(rec.ranked[0], base, CompareMarket.ANY)
    assert saved is not None and saved.mixed_markets
    assert saved.run_saved_usd == pytest.approx(base.estimate.run_cost_usd
                                                - rec.ranked[0].run_cost_usd)
    assert saved.spot_discount_usd == pytest.approx(saved.run_saved_usd)
    assert f"${saved.spot_discount_usd:,.2f} of it is the spot discount" in saved.describe()


@settings(max_examples=200, deadline=None)
@given(pick=st.tuples(st.floats(10, 1e5), st.floats(1.0, 8.0), st.floats(0.1, 50.0)),
       base=st.tuples(st.floats(10, 1e5), st.floats(1.0, 8.0), st.floats(0.1, 50.0)),
       market=st.sampled_from(list(CompareMarket)))
def test_saving_range_never_claims_more_than_the_baselines_run_cost(
        pick: tuple[float, float, float], base: tuple[float, float, float],
        market: CompareMarket) -> None:
    # a wide guess (up to 8x either way) against another: the "saves $30.53 to $204.75"
    # against a baseline whose whole run costs $90.27 cannot happen
    (sps, width, price), (base_sps, base_width, base_price) = pick, base
    top = estimate(replace(P4D_SPOT, price_usd_per_hour=price), sps, sps / width, sps * width,
                   Basis.PRIOR)
    against = estimate(replace(P4D_OD, price_usd_per_hour=base_price), base_sps,
                       base_sps / base_width, base_sps * base_width, Basis.PREDICTED)
    saved = savings(top, Baseline(P4D_OD, against, None, "test"), market)
    assert saved is not None
    assert saved.run_saved_usd_high < against.run_cost_usd
    slack = 1e-9 * against.run_cost_usd  # rounding where both intervals have no width
    assert saved.run_saved_usd_low - slack <= saved.run_saved_usd <= saved.run_saved_usd_high + slack


def test_report_headline_html_csv_and_json_state_one_saving(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file",
                        lambda _path, **_kw: _twinned_recommendation())
    (tmp_path / "model.yaml").write_text("name: stand-in\n")
    monkeypatch.chdir(tmp_path)
    for market in ("same", "any"):
        result = CliRunner().invoke(advisor_cli, [
            "report", "recommend", "model.yaml", "--out", f"r-{market}", "--json",
            "--baseline", "aws:p4d.24xlarge:us-east-1", "--compare-market", market])
        assert result.exit_code == 0, result.stderr
        document = json.loads(result.stdout)
        saving = document["savings"]
        assert saving["compare_market"] == market
        assert f"the top pick {saving['text']}" in result.stderr              # headline
        assert saving["text"] in html.unescape(Path(document["html"]).read_text())  # HTML
        with Path(document["csv"]).open(newline="") as handle:
            top_row = next(csv.DictReader(handle))
        assert float(top_row["saved_vs_baseline_usd"]) == pytest.approx(saving["run_saved_usd"])
        assert float(top_row["saved_vs_baseline_usd_high"]) == pytest.approx(
            saving["run_saved_usd_high"])
        assert float(top_row["spot_discount_saved_usd"]) == pytest.approx(
            saving["spot_discount_usd"])
        assert top_row["compare_market"] == market
