"""Deciding under uncertainty: what the pick rests on, what a probe could overturn, and the
ranking folded to one row per choice.

The ranking (``advisor.ranking.offers.rank``) orders offers by a conservative figure of samples per
dollar, so a guess outranks evidence only when even its pessimistic end is better. What is
left is said here: each basis's meaning (defined once), the offers whose optimistic end beats
the pick with what a probe of them costs and is expected to save (the planner's knowledge
gradient), and the one-line headline every renderer leads with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from advisor.formatting import fmt_money
from advisor.ranking.columns import RankedOffers
from advisor.ranking.offers import CONSERVATIVE_QUANTILE, CostEstimate, Opportunity, RankBy, Recommendation
from advisor.ranking.planner import candidates_from, plan
from advisor.throughput import Basis
from pricing import Market
from pricing.offer_table import LazyRows
from probes import DEFAULT_PROBE_TIME_BOX_S, quote_probe, quote_text

__all__ = [
    "BASIS_LABEL",
    "BASIS_MEANING",
    "OfferGroup",
    "could_be_better",
    "describe_opportunity",
    "group_regions",
    "headline",
    "headline_note",
    "rank_by_assumption",
    "spot_lead",
]

# What each basis means, the one text every renderer uses.
BASIS_MEANING = {
    Basis.MEASURED: "a probe of this workload on this accelerator",
    Basis.TUNED: "a probe of this workload on this accelerator in the best configuration "
                 "'advisor probe --tune' measured (same numerics unless numerics-changing "
                 "settings were allowed)",
    Basis.PREDICTED: "scaled from reference or published measurements of other models on this accelerator",
    Basis.PRIOR: "no measurement of this accelerator: extrapolated from its datasheet; "
                 "probe it before trusting it",
}
# The same, in a few words for a headline.
BASIS_LABEL = {
    Basis.MEASURED: "measured",
    Basis.TUNED: "measured, tuned configuration",
    Basis.PREDICTED: "a prediction from other models",
    Basis.PRIOR: "a datasheet guess",
}
COULD_BE_BETTER_LIMIT = 5


def rank_by_assumption(rank_by: RankBy) -> str:
    """The assumption line that says how the ranking is ordered."""
    if rank_by is RankBy.CONSERVATIVE:
        return (f"order: by conservative samples per dollar, the {CONSERVATIVE_QUANTILE:.0%} "
                "quantile (the low end of the 90% throughput interval), so a guess ranks above "
                "evidence only when its pessimistic end is better; --rank-by estimate orders by "
                "the point estimate")
    return ("order: by the point estimate of samples per dollar, however weak its basis "
            "(--rank-by conservative orders by the low end of the interval)")


def could_be_better(ranked: Sequence[CostEstimate], *,
                    time_box_s: float = DEFAULT_PROBE_TIME_BOX_S,
                    limit: int = COULD_BE_BETTER_LIMIT) -> tuple[Opportunity, ...]:
    """Accelerator types, other than the pick's and not yet measured, whose best offer's
    optimistic samples per dollar beats the pick's estimate, and which the probe planner finds
    worth a probe (quoted by its launcher for a ``time_box_s`` probe): largest expected saving
    per probe dollar first, at most ``limit``."""
    if not ranked:
        return ()
    ranked = RankedOffers.of(ranked)
    pick = ranked[0]
    names = ranked.offers.accelerator
    rows = ((names.codes != names.codes[0]) & ~ranked.measured()
            & (ranked.samples_per_dollar_high > pick.samples_per_dollar))
    best = {names.values[code]: ranked[row] for code, row in
            ranked.first_per(names.codes, -ranked.samples_per_dollar_high, rows=rows).items()}
    if not best:
        return ()
    candidates = candidates_from(ranked)
    suggestions = plan(candidates, len(candidates), time_box_s=time_box_s,
                       run_cost_usd=pick.run_cost_usd)
    found = []
    for s in suggestions:
        if s.accelerator in best:
            est = best[s.accelerator]
            found.append(Opportunity(
                estimate=est, probe_offer_key=s.offer_key, probe_cost_usd=s.probe_cost_usd,
                expected_saving_usd=s.expected_saving_usd or 0.0,
                up_to_times_pick=est.samples_per_dollar_high / pick.samples_per_dollar))
    return tuple(found[:limit])


def describe_opportunity(opp: Opportunity) -> str:
    """One line: what the offer could reach, what its probe costs and is expected to save."""
    o = opp.estimate.offer
    return (f"{o.accelerator_count}x {o.accelerator} ({o.cloud}:{o.instance_type} {o.market}, "
            f"basis {opp.estimate.throughput.basis}): up to {opp.up_to_times_pick:.1f}x the "
            f"pick's samples/$; probe for {quote_text(opp.probe_cost_usd)} "
            f"(--on {opp.probe_offer_key}), expected saving "
            f"{fmt_money(opp.expected_saving_usd)} on the run")


def spot_lead(rec: Recommendation) -> str | None:
    """When the pick is spot and, priced on demand, would not rank first: whose place it takes
    on demand and the discount that puts it ahead (None otherwise, or when the ranking has no
    on-demand offer of the pick's instance or none at all)."""
    if not rec.ranked:
        return None
    pick = rec.ranked[0]
    twin = pick.on_demand
    if pick.offer.market is not Market.SPOT or twin is None:
        return None
    first = rec.ranked.first(rec.ranked.on_demand())
    best = rec.ranked[first] if first is not None else None
    if best is None or best.ranked_by(rec.rank_by) <= twin.ranked_by(rec.rank_by):
        return None
    discount = 1 - pick.offer.price_usd_per_hour / twin.offer.price_usd_per_hour
    b = best.offer
    return (f"its lead comes from the spot discount ({discount:.0%} off "
            f"{fmt_money(twin.offer.price_usd_per_hour)}/h on demand): on demand, "
            f"{b.accelerator_count}x {b.accelerator} on {b.key} ranks first")


def _pick_probe(rec: Recommendation,
                time_box_s: float = DEFAULT_PROBE_TIME_BOX_S) -> tuple[str, float] | None:
    """The offer a probe of the pick's accelerator runs on (its cheapest ranked offer a launcher
    can probe) and that probe's quote; None when no launcher probes any of them."""
    ranked = rec.ranked
    names = ranked.offers.accelerator
    cheapest = ranked.first_per(names.codes, ranked.offers.price_usd_per_hour,
                                ranked.offers.order(),
                                rows=(names.codes == names.codes[0]) & ranked.probeable())
    if not cheapest:
        return None
    offer = ranked.offers[next(iter(cheapest.values()))]
    quote = quote_probe(offer.key, price_usd_per_hour=offer.price_usd_per_hour,
                        time_box_s=time_box_s)
    return offer.key, quote.usd


def headline_note(rec: Recommendation) -> str:
    """The headline clause when the pick (``rec.ranked[0]``) is a TPU, Trainium or Gaudi offer:
    ``needs torch_xla (not CUDA; first compile: ...)[; N operator(s) fall back or fail there]``;
    ``''`` for a CUDA pick, no pick, or a recommendation made without the check."""
    if not rec.ranked:
        return ""
    pick = rec.ranked[0].offer.accelerator
    return next((p.headline_note() for p in rec.portability if p.accelerator == pick), "")


def headline(rec: Recommendation) -> str:
    """What the pick is, its basis, its run cost as a range, and what the next probe would
    settle (both probes, and their total, when neither the pick nor the challenger is
    measured): the first line of the table, the JSON and the reports."""
    if not rec.ranked:
        return "no offer meets every constraint (see the rejected offers)"
    pick = rec.ranked[0]
    o, basis = pick.offer, pick.throughput.basis
    line = (f"pick: {o.accelerator_count}x {o.accelerator} on {o.cloud}:{o.instance_type} "
            f"{o.region} {o.market}, basis {basis} ({BASIS_LABEL[basis]}); run "
            f"{fmt_money(pick.run_cost_usd)} ({fmt_money(pick.run_cost_usd_low)} to "
            f"{fmt_money(pick.run_cost_usd_high)}), {pick.run_hours:,.1f} h")
    lead = spot_lead(rec)
    if lead is not None:
        line += f"; {lead}"
    runtime = headline_note(rec)  # a TPU, Trainium or Gaudi pick: what running there takes
    if runtime:
        line += f"; {runtime}"
    if rec.could_be_better:
        nxt = rec.could_be_better[0]
        n = nxt.estimate.offer
        own = None if basis.is_measured else _pick_probe(rec)
        if own is not None:
            key, quote_usd = own
            return (line + f"; next probes (neither is measured): {o.accelerator} on {key} "
                    f"({quote_text(quote_usd)}) and {n.accelerator} on {nxt.probe_offer_key} "
                    f"({quote_text(nxt.probe_cost_usd)}), "
                    f"{quote_text(quote_usd + nxt.probe_cost_usd)} in all, settle whether it "
                    f"beats the pick (up to {nxt.up_to_times_pick:.1f}x its samples/$)")
        return (line + f"; next probe: {n.accelerator} on {nxt.probe_offer_key} for "
                f"{quote_text(nxt.probe_cost_usd)} settles whether it beats the pick (up "
                f"to {nxt.up_to_times_pick:.1f}x its samples/$)")
    if basis.is_measured:
        return line + "; no unprobed offer could beat it even at its optimistic end"
    return line + f"; probe it to confirm (--on {o.key})"


@dataclass(frozen=True, slots=True)
class OfferGroup:
    """The same choice (cloud, instance type, market) in every region it ranked in: ``rank``
    is the 1-based position of its best region, ``estimates`` best region first."""

    rank: int
    estimates: Sequence[CostEstimate]

    @property
    def best(self) -> CostEstimate:
        """The best-ranked region's estimate (the cheapest where throughput is the same)."""
        return self.estimates[0]

    @property
    def other_regions(self) -> int:
        """How many more regions offer the same choice."""
        return len(self.estimates) - 1


def _member(table: RankedOffers, rows: np.ndarray, i: int) -> CostEstimate:
    return table[int(rows[i])]


def group_regions(ranked: Sequence[CostEstimate]) -> list[OfferGroup]:
    """One group per (cloud, instance type, market), in ranking order of its best region (the
    estimates are built when read)."""
    table = RankedOffers.of(ranked)
    first, group_of = table.choices()
    by_group = np.argsort(group_of, kind="stable")  # each group's rows, in ranking order
    ends = np.cumsum(np.bincount(group_of, minlength=len(first))).tolist()
    groups = []
    for g, start in enumerate(first.tolist()):
        rows = by_group[(ends[g - 1] if g else 0):ends[g]]
        groups.append(OfferGroup(start + 1, LazyRows(len(rows), partial(_member, table, rows))))
    return groups
