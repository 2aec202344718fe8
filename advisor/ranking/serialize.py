"""Plain-data views of results, for ``--json``, CSV and reports."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from advisor.ranking.columns import RankedOffers, RejectedOffers
from advisor.ranking.decision import describe_opportunity, headline
from advisor.ranking.offers import CostEstimate, Opportunity, Recommendation, Rejection
from advisor.ranking.spot_risk import SpotOverhead

__all__ = ["estimate_row", "estimate_rows", "opportunity_row", "recommendation_to_dict", "rejection_row",
           "rejection_rows", "spot_fields"]


def estimate_row(est: CostEstimate) -> dict[str, Any]:
    """One ranked offer as a flat mapping (units in the keys)."""
    o, t = est.offer, est.throughput
    return {
        "offer": o.key,
        "cloud": str(o.cloud),
        "region": o.region,
        "instance_type": o.instance_type,
        "accelerator": o.accelerator,
        "accelerator_count": o.accelerator_count,
        "market": str(o.market),
        "price_usd_per_hour": o.price_usd_per_hour,
        "samples_per_second": t.samples_per_second,
        "samples_per_second_low": t.samples_per_second_low,
        "samples_per_second_high": t.samples_per_second_high,
        "samples_per_dollar": est.samples_per_dollar,
        "samples_per_dollar_low": est.samples_per_dollar_low,
        "samples_per_dollar_high": est.samples_per_dollar_high,
        "run_hours": est.run_hours,
        "run_hours_low": est.run_hours_low,
        "run_hours_high": _finite(est.run_hours_high),
        "run_cost_usd": est.run_cost_usd,
        "run_cost_usd_low": est.run_cost_usd_low,
        "run_cost_usd_high": _finite(est.run_cost_usd_high),
        "memory_needed_gib_per_device": est.memory_needed_gib_per_device,
        "accelerator_memory_gib": o.accelerator_memory_gib,
        "basis": str(t.basis),
        **_spot_fields(est),
        "price_observed_at": o.observed_at.isoformat(),
        "price_source": o.source,
    }


def estimate_rows(ranked: RankedOffers) -> Iterator[dict[str, Any]]:
    """``estimate_row`` of every ranked offer, in order, one at a time: made from the ranking's
    columns where it has them (100,000 rows without building an estimate), else per estimate."""
    rows = ranked.column_rows()
    return rows if rows is not None else map(estimate_row, ranked)


def _finite(value: float) -> float | None:
    """None for a figure that is infinite (a run that never finishes), so JSON stays JSON."""
    return value if math.isfinite(value) else None


def _spot_fields(est: CostEstimate) -> dict[str, Any]:
    """The interruption band of a spot offer, its basis and source, the pessimistic overhead
    and what it rests on, and the on-demand price of the same instance (its own on demand)."""
    return {**spot_fields(est.spot),
            "on_demand_price_usd_per_hour": est.on_demand_price_usd_per_hour}


def spot_fields(spot: SpotOverhead | None) -> dict[str, Any]:
    """A spot offer's band, its basis and source, and the pessimistic overhead and what it
    rests on (every value None off spot): the same for every offer of the band."""
    pessimistic = spot.pessimistic if spot else None
    return {
        "spot_interruption_band": spot.bucket_label if spot else None,
        "spot_band_basis": str(spot.basis) if spot else None,
        "spot_overhead_fraction": spot.overhead_fraction if spot else None,
        "spot_band_source": spot.source if spot else None,
        "spot_band_captured": spot.captured.isoformat() if spot else None,
        "spot_overhead_fraction_low": spot.overhead_fraction_low if spot else None,
        "spot_overhead_fraction_high": _finite(spot.overhead_fraction_high) if spot else None,
        "spot_rate_per_hour_high": spot.rate_per_hour_high if spot else None,
        "spot_pessimistic_source": pessimistic.describe() if pessimistic else None,
    }


def rejection_row(rej: Rejection, *, offer_cells: bool = False) -> dict[str, Any]:
    """One rejected offer with its reason; with ``offer_cells`` also the offer's
    ``accelerator_count``, ``accelerator_memory_gib``, ``price_observed_at`` and
    ``price_source`` (after the rest: the CSV shows them)."""
    o = rej.offer
    row = {
        "offer": o.key,
        "cloud": str(o.cloud),
        "instance_type": o.instance_type,
        "region": o.region,
        "market": str(o.market),
        "accelerator": o.accelerator,
        "price_usd_per_hour": o.price_usd_per_hour,
        "reason": rej.reason,
        "reason_kind": str(rej.kind),
        "figures": dict(rej.figures),
    }
    if offer_cells:
        row.update(accelerator_count=o.accelerator_count,
                   accelerator_memory_gib=o.accelerator_memory_gib,
                   price_observed_at=o.observed_at.isoformat(), price_source=o.source)
    return row


def rejection_rows(rejected: RejectedOffers, *,
                   offer_cells: bool = False) -> Iterator[dict[str, Any]]:
    """``rejection_row`` of every rejected offer, in order, one at a time: made from the
    ranking's columns where it has them (no offer built), else per rejection."""
    rows = rejected.column_rows(offer_cells=offer_cells)
    return rows if rows is not None else (rejection_row(r, offer_cells=offer_cells)
                                          for r in rejected)


def opportunity_row(opp: Opportunity) -> dict[str, Any]:
    """One "could be better" offer: its estimate, the probe that settles it, its line."""
    return {**estimate_row(opp.estimate), "probe_offer": opp.probe_offer_key,
            "probe_cost_usd": opp.probe_cost_usd, "expected_saving_usd": opp.expected_saving_usd,
            "up_to_times_pick": opp.up_to_times_pick, "text": describe_opportunity(opp)}


def recommendation_to_dict(rec: Recommendation, *, stream: bool = False) -> dict[str, Any]:
    """The ``--json`` object of ``advisor recommend``. With ``stream`` the ranked and rejected
    rows are iterators, each row made when a writer asks for it (100,000 offers never sit in
    memory as rows at once)."""
    return {
        "workload": rec.workload,
        "headline": headline(rec),
        "rank_by": str(rec.rank_by),
        "prices_captured_at": rec.prices_captured_at.isoformat(),
        "ranked": estimate_rows(rec.ranked) if stream else list(estimate_rows(rec.ranked)),
        "could_be_better": [opportunity_row(o) for o in rec.could_be_better],
        "rejected": (rejection_rows(rec.rejected) if stream
                     else list(rejection_rows(rec.rejected))),
        "assumptions": list(rec.assumptions),
        "advice": list(rec.advice),
        "warnings": list(rec.warnings),
        **({"portability": [p.to_dict() for p in rec.portability]} if rec.portability else {}),
        **rec.extra,
    }
