"""Deciding under uncertainty: conservative order, "could be better", one row per choice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.ranking.decision import BASIS_LABEL, could_be_better, group_regions, headline
from advisor.ranking.offers import CostAssumptions, CostEstimate, RankBy, Recommendation, cost_of, rank
from advisor.ranking.serialize import estimate_row
from advisor.throughput.estimate import Basis, ThroughputEstimate
from pricing import Market
from probes.launchers.quote import quote_probe, quote_text
from tests.advisor.test_ranking import offer, spec

SPEC = spec()
ASSUMPTIONS = CostAssumptions()


def estimate(itype: str, accel: str, sps: float, *, width: float, basis: Basis,
             price: float = 1.0, region: str = "us-east-1",
             market: Market = Market.ON_DEMAND) -> CostEstimate:
    """An estimate whose interval is ``sps / width`` to ``sps * width``."""
    throughput = ThroughputEstimate(sps, sps / width, sps * width, basis)
    return cost_of(SPEC, offer(itype, accel=accel, price=price, region=region, market=market),
                   throughput, ASSUMPTIONS)


MEASURED = estimate("g5.xlarge", "A10G", 1000.0, width=1.02, basis=Basis.MEASURED)
# Twice the point estimate of the measured offer, but 5x wide: its low end is below it.
WIDE_PRIOR = estimate("trn1.2xlarge", "Trainium1", 2000.0, width=2.5, basis=Basis.PRIOR)
# Four times the measured offer: even its pessimistic end (1,600) beats the measured 1,000.
STRONG_PRIOR = estimate("dl1.24xlarge", "Gaudi", 4000.0, width=2.5, basis=Basis.PRIOR)


def test_conservative_order_puts_evidence_before_a_wide_guess() -> None:
    ranked, _ = rank(SPEC, [WIDE_PRIOR, MEASURED])
    assert [e.offer.accelerator for e in ranked] == ["A10G", "Trainium1"]
    by_estimate, _ = rank(SPEC, [WIDE_PRIOR, MEASURED], rank_by=RankBy.ESTIMATE)
    assert [e.offer.accelerator for e in by_estimate] == ["Trainium1", "A10G"]


def test_a_guess_whose_pessimistic_end_wins_still_ranks_first() -> None:
    ranked, _ = rank(SPEC, [MEASURED, STRONG_PRIOR])
    assert ranked[0] is STRONG_PRIOR


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(10, 1e5), st.floats(1.01, 6.0), st.floats(0.1, 40.0),
                          st.sampled_from(list(Basis))), min_size=2, max_size=12))
def test_prior_above_measured_only_when_its_conservative_figure_is_higher(
        rows: list[tuple[float, float, float, Basis]]) -> None:
    estimates = [estimate(f"t{i}.xlarge", f"X{i}", sps, width=width, basis=basis, price=price)
                 for i, (sps, width, price, basis) in enumerate(rows)]
    ranked, _ = rank(SPEC, estimates)
    for i, above in enumerate(ranked):
        for below in ranked[i + 1:]:
            if above.throughput.basis is Basis.PRIOR and below.throughput.basis is Basis.MEASURED:
                assert above.samples_per_dollar_low >= below.samples_per_dollar_low


def test_cost_range_follows_the_throughput_interval() -> None:
    est = WIDE_PRIOR
    assert est.run_cost_usd_low < est.run_cost_usd < est.run_cost_usd_high
    assert est.samples_per_dollar_low < est.samples_per_dollar < est.samples_per_dollar_high
    assert est.samples_per_dollar_low == est.throughput.samples_per_second_low * 3600


def test_could_be_better_lists_unmeasured_types_whose_optimistic_end_beats_the_pick() -> None:
    slow_prior = estimate("g4dn.xlarge", "T4", 300.0, width=2.0, basis=Basis.PRIOR)
    ranked, _ = rank(SPEC, [MEASURED, WIDE_PRIOR, slow_prior])
    found = could_be_better(ranked)
    assert [o.estimate.offer.accelerator for o in found] == ["Trainium1"]  # T4's 600 < 1,000
    opp = found[0]
    assert opp.up_to_times_pick == WIDE_PRIOR.samples_per_dollar_high / MEASURED.samples_per_dollar
    assert opp.probe_offer_key == WIDE_PRIOR.offer.key
    assert opp.probe_cost_usd > 0 and opp.expected_saving_usd > 0


def test_nothing_could_be_better_than_a_measured_pick_that_dominates() -> None:
    measured_slow = estimate("p3.2xlarge", "V100", 200.0, width=1.02, basis=Basis.MEASURED)
    ranked, _ = rank(SPEC, [MEASURED, measured_slow])
    assert could_be_better(ranked) == ()


def test_headline_states_pick_basis_cost_range_and_next_probe() -> None:
    ranked, _ = rank(SPEC, [MEASURED, WIDE_PRIOR])
    rec = Recommendation("t", MEASURED.offer.observed_at, tuple(ranked), (),
                         could_be_better=could_be_better(ranked))
    line = headline(rec)
    assert line.startswith("pick: 1x A10G on aws:g5.xlarge us-east-1 on-demand, basis measured")
    assert f"({BASIS_LABEL[Basis.MEASURED]})" in line
    assert f"${MEASURED.run_cost_usd_low:,.2f} to ${MEASURED.run_cost_usd_high:,.2f}" in line
    assert f"next probe: Trainium1 on {WIDE_PRIOR.offer.key}" in line
    empty = Recommendation("t", MEASURED.offer.observed_at, (), ())
    assert headline(empty).startswith("no offer meets every constraint")


def test_group_regions_folds_the_same_choice_across_regions() -> None:
    east = estimate("g5.xlarge", "A10G", 1000.0, width=1.5, basis=Basis.PREDICTED, price=1.0)
    west = estimate("g5.xlarge", "A10G", 1000.0, width=1.5, basis=Basis.PREDICTED, price=1.2,
                    region="us-west-2")
    spot = estimate("g5.xlarge", "A10G", 1000.0, width=1.5, basis=Basis.PREDICTED, price=0.5,
                    market=Market.SPOT)
    other = estimate("g4dn.xlarge", "T4", 500.0, width=1.5, basis=Basis.PREDICTED, price=0.7)
    ranked, _ = rank(SPEC, [east, west, spot, other])
    groups = group_regions(ranked)
    assert [(g.rank, g.best.offer.key, g.other_regions) for g in groups] == [
        (1, spot.offer.key, 0),   # spot is another choice, not another region
        (2, east.offer.key, 1),   # the cheaper region first, "+1" beside it
        (4, other.offer.key, 0),
    ]


def test_spot_risk_lowers_the_conservative_figure_and_raises_the_dear_end() -> None:
    # g5.xlarge has no published band: its pessimistic end is the measured GPU preemption
    # rate (about +31% run time with 30-minute checkpoints), not the ">20%/month" band's +0.04%.
    spot = estimate("g5.xlarge", "A10G", 1000.0, width=1.0, basis=Basis.MEASURED, price=1.0,
                    market=Market.SPOT)
    assert spot.spot is not None and spot.spot.overhead_fraction_high > 0.25
    assert spot.samples_per_dollar_low == (
        1000.0 * 3600 / 1.0 / (1 + spot.spot.overhead_fraction_high))
    assert spot.run_cost_usd_high > spot.run_cost_usd * 1.2  # 1 h of training + 0.25 h start-up
    # on demand at 1.2x the spot price, same throughput: ahead on the conservative figure,
    # behind on the point estimate (the band's expected overhead is small)
    on_demand = estimate("g4dn.xlarge", "T4", 1000.0, width=1.0, basis=Basis.MEASURED, price=1.2)
    ranked, _ = rank(SPEC, [spot, on_demand])
    assert [e.offer.market for e in ranked] == [Market.ON_DEMAND, Market.SPOT]
    by_estimate, _ = rank(SPEC, [spot, on_demand], rank_by=RankBy.ESTIMATE)
    assert by_estimate[0].offer.market is Market.SPOT


def test_spot_rows_carry_the_on_demand_price_of_the_same_instance() -> None:
    spot = estimate("g5.xlarge", "A10G", 1000.0, width=1.5, basis=Basis.PREDICTED, price=0.4,
                    market=Market.SPOT)
    twin = estimate("g5.xlarge", "A10G", 1000.0, width=1.5, basis=Basis.PREDICTED, price=1.0)
    elsewhere = estimate("g5.xlarge", "A10G", 1000.0, width=1.5, basis=Basis.PREDICTED,
                         price=0.5, region="us-west-2", market=Market.SPOT)
    ranked, _ = rank(SPEC, [spot, twin, elsewhere])
    rows = {row["offer"]: row for row in map(estimate_row, ranked)}
    assert rows[spot.offer.key]["on_demand_price_usd_per_hour"] == 1.0
    assert rows[twin.offer.key]["on_demand_price_usd_per_hour"] == 1.0      # its own
    assert rows[elsewhere.offer.key]["on_demand_price_usd_per_hour"] is None  # none in us-west-2
    assert rows[spot.offer.key]["spot_overhead_fraction_high"] > 0.25


def test_headline_says_when_the_picks_lead_comes_from_the_spot_discount() -> None:
    # on demand the A10G (1,000 samples/s at $1.00/h) loses to a T4 at 700 samples/s for $0.50
    spot = estimate("g5.xlarge", "A10G", 1000.0, width=1.02, basis=Basis.MEASURED, price=0.2,
                    market=Market.SPOT)
    twin = estimate("g5.xlarge", "A10G", 1000.0, width=1.02, basis=Basis.MEASURED, price=1.0)
    t4 = estimate("g4dn.xlarge", "T4", 700.0, width=1.02, basis=Basis.MEASURED, price=0.5)
    ranked, _ = rank(SPEC, [spot, twin, t4])
    line = headline(Recommendation("t", spot.offer.observed_at, tuple(ranked), ()))
    assert ("its lead comes from the spot discount (80% off $1.00/h on demand): on demand, "
            f"1x T4 on {t4.offer.key} ranks first") in line
    # without the cheaper T4 the A10G leads on demand too: nothing to say
    ranked, _ = rank(SPEC, [spot, twin])
    assert "spot discount" not in headline(Recommendation("t", spot.offer.observed_at,
                                                          tuple(ranked), ()))


def test_headline_names_both_probes_and_their_total_when_neither_is_measured() -> None:
    pick = estimate("dl1.24xlarge", "Gaudi", 4000.0, width=1.2, basis=Basis.PRIOR, price=2.0)
    rival = estimate("trn1.2xlarge", "Trainium1", 3000.0, width=2.0, basis=Basis.PREDICTED)
    ranked, _ = rank(SPEC, [pick, rival])
    rec = Recommendation("t", pick.offer.observed_at, tuple(ranked), (),
                         could_be_better=could_be_better(ranked))
    assert rec.ranked[0] is pick and rec.could_be_better
    pick_usd = quote_probe(pick.offer.key, price_usd_per_hour=2.0).usd
    rival_usd = rec.could_be_better[0].probe_cost_usd
    assert rival_usd == quote_probe(rival.offer.key, price_usd_per_hour=1.0).usd
    line = headline(rec)
    assert (f"next probes (neither is measured): Gaudi on {pick.offer.key} "
            f"({quote_text(pick_usd)}) and Trainium1 on {rival.offer.key} "
            f"({quote_text(rival_usd)}), {quote_text(pick_usd + rival_usd)} in all, settle "
            "whether it beats the pick") in line
    assert "next probe:" not in line
