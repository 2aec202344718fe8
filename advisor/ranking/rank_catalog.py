"""Rank a whole catalog in arrays: each distinct question answered once, each offer priced from it.

Memory fit and throughput depend on the accelerator, its memory and how many devices split the
batch, not on the region or market; the interruption overhead depends on the spot band, not on
the offer. So they are computed once per distinct key (a few hundred calls for 100,000 offers),
and the offers are priced, filtered and ordered as numpy arrays with the formulas the single
offer path uses (``run_figures``). The records (``CostEstimate``, ``Rejection``) of a row are
built by that path (``cost_of``) when a reader asks for the row, so the two cannot disagree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from advisor.profiling import WorkloadProfile
from advisor.ranking.columns import RankedOffers, RejectedOffers
from advisor.ranking.offers import (
    CostAssumptions,
    CostEstimate,
    MeasuredMemory,
    MemoryNeed,
    RankBy,
    Rejection,
    RejectionKind,
    cost_of,
    memory_need,
    run_figures,
    samples_per_device,
    static_failures,
)
from advisor.ranking.portability import Portability
from advisor.ranking.spot_risk import SpotOverhead, spot_overhead
from advisor.spec import WorkloadSpec
from advisor.throughput import Measurement, ThroughputEstimate, ThroughputModel, WorkloadFeatures
from pricing import Catalog, Cloud, InstanceOffer, Market, shipped_spot_data
from pricing.billing import samples_per_usd_many
from pricing.offer_table import OfferTable

__all__ = ["rank_catalog"]


def _factorize(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct combinations of ``columns`` (integer codes per row): per combination its
    first row, and per row its combination's number."""
    key = np.zeros(len(columns[0]), dtype=np.int64)
    for col in columns:
        _, codes = np.unique(col, return_inverse=True)
        key = key * (int(codes.max(initial=0)) + 1) + codes.ravel()
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.ravel()


@dataclass
class _Rejections:
    """Rejected rows of the catalog, gathered as the ranking goes: the rows, their kind, and
    how to build each one's record (given the catalog row and the offer)."""

    rows: list[np.ndarray]
    kinds: list[np.ndarray]
    makers: list[Callable[[int, InstanceOffer], Rejection]]

    def add(self, rows: np.ndarray, kind: RejectionKind | np.ndarray,
            make: Callable[[int, InstanceOffer], Rejection]) -> None:
        if not len(rows):
            return
        kinds = np.empty(len(rows), dtype=object)
        kinds[:] = kind if isinstance(kind, RejectionKind) else kind.tolist()
        self.rows.append(rows)
        self.kinds.append(kinds)
        self.makers.append(make)

    def table(self, offers: OfferTable) -> RejectedOffers:
        """The rejections in offer order (cloud, instance type, region, market)."""
        if not self.rows:
            return RejectedOffers.of(())
        rows = np.concatenate(self.rows)
        source = np.concatenate([np.full(len(r), i) for i, r in enumerate(self.rows)])
        by = np.argsort(offers.order()[rows], kind="stable")
        rows, source, kinds = rows[by], source[by], np.concatenate(self.kinds)[by]
        makers = self.makers

        def make(i: int) -> Rejection:
            row = int(rows[i])
            return makers[int(source[i])](row, offers[row])

        def iterate() -> Iterator[Rejection]:
            for row, src, offer in zip(rows.tolist(), source.tolist(), offers.take(rows),
                                       strict=True):
                yield makers[src](row, offer)

        return RejectedOffers(kinds, make, iterate)


@dataclass(frozen=True)
class _Bands:
    """The spot band of each costed row: its interruption overheads (point, low end,
    pessimistic end; 0 on demand), the band's number (-1 on demand) and, per band, the
    overhead of one offer in it (its band, source and fractions hold for all of them)."""

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    band: np.ndarray
    overheads: list[SpotOverhead]

    def text(self, place: int) -> str:
        """The band as a rejection states it (``''`` on demand)."""
        band = int(self.band[place])
        if band < 0:
            return ""
        spot = self.overheads[band]
        return f" (spot, interruption band {spot.bucket_label} {spot.basis})"


def _spot_bands(spec: WorkloadSpec, offers: OfferTable, rows: np.ndarray,
                assumptions: CostAssumptions) -> _Bands:
    """The spot band of each of ``rows``, looked up once per (cloud, type, region) and
    costed once per band."""
    n = len(rows)
    point, low, high = np.zeros(n), np.zeros(n), np.zeros(n)
    band_of_row = np.full(n, -1, dtype=np.int64)
    spot = np.flatnonzero(offers.market.equals(Market.SPOT.value)[rows])
    overheads: list[SpotOverhead] = []
    if not len(spot):
        return _Bands(point, low, high, band_of_row, overheads)
    data = shipped_spot_data()
    first, place = _factorize(offers.cloud.codes[rows[spot]],
                              offers.instance_type.codes[rows[spot]],
                              offers.region.codes[rows[spot]])
    bands: dict[object, int] = {}
    band_of_place = []
    firsts = rows[spot[first]]
    for row, cloud, itype, region in zip(
            firsts.tolist(), offers.cloud.take(firsts).to_list(),
            offers.instance_type.take(firsts).to_list(), offers.region.take(firsts).to_list(),
            strict=True):
        key = (cloud, data.risk(Cloud(cloud), itype, region))
        if key not in bands:  # no published band: the cloud's assumed one
            bands[key] = len(overheads)
            overheads.append(spot_overhead(offers[row], 0.0,
                                           checkpoint_minutes=spec.checkpoint_minutes,
                                           restart_hours=assumptions.startup_hours))
        band_of_place.append(bands[key])
    band_of_row[spot] = np.asarray(band_of_place, dtype=np.int64)[place]
    for values, name in ((point, "overhead_fraction"), (low, "overhead_fraction_low"),
                         (high, "overhead_fraction_high")):
        values[spot] = np.asarray([getattr(o, name) for o in overheads])[band_of_row[spot]]
    return _Bands(point, low, high, band_of_row, overheads)


def _twins(offers: OfferTable, rows: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: for a spot offer, the position (in ``rows``) of the on-demand offer
    of the same instance (cloud, type, region); -1 where there is none, and on demand."""
    _, place = _factorize(offers.cloud.codes[rows], offers.instance_type.codes[rows],
                          offers.region.codes[rows])
    on_demand = offers.market.equals(Market.ON_DEMAND.value)[rows]
    twin_of_place = np.full(int(place.max(initial=-1)) + 1, -1, dtype=np.int64)
    twin_of_place[place[on_demand]] = np.flatnonzero(on_demand)
    twins = twin_of_place[place]
    twins[on_demand] = -1
    return twins


def rank_catalog(
    spec: WorkloadSpec, catalog: Catalog, *, profile: WorkloadProfile, model: ThroughputModel,
    features: WorkloadFeatures, measurements: tuple[Measurement, ...] | list[Measurement],
    memory: Mapping[str, MeasuredMemory], assumptions: CostAssumptions, include_flagged: bool,
    rank_by: RankBy, portability: Callable[[str], Portability | None], strict: bool,
) -> tuple[RankedOffers, RejectedOffers]:
    """Every offer of ``catalog`` ranked for ``spec`` (best first by ``rank_by``, ties by
    samples per dollar, then offer order) or rejected with its reason, in offer order."""
    offers = catalog.offers
    rejected = _Rejections([], [], [])
    failed, rules = static_failures(spec, offers, catalog.accelerators,
                                    include_flagged=include_flagged)
    rule_kinds = np.asarray([r.kind for r in rules] + [None], dtype=object)
    failing = np.flatnonzero(failed >= 0)
    rejected.add(failing, rule_kinds[failed[failing]],
                 lambda row, offer: Rejection(offer, rules[failed[row]].kind,
                                              rules[failed[row]].figures(offer)))
    rows = np.flatnonzero(failed < 0)

    accelerator_codes = offers.accelerator.codes[rows]
    if strict:
        blocked: list[int] = []
        for code in np.unique(accelerator_codes).tolist():
            port = portability(offers.accelerator.values[code])
            if port is not None and port.blocked_operators:
                blocked.append(code)
                figures = port.rejection_figures()
                rejected.add(rows[accelerator_codes == code], RejectionKind.PORTABILITY,
                             lambda _, offer, f=figures: Rejection(
                                 offer, RejectionKind.PORTABILITY, f))
        keep = ~np.isin(accelerator_codes, blocked)
        rows, accelerator_codes = rows[keep], accelerator_codes[keep]

    # Memory fit per (accelerator, device count, device memory).
    counts = offers.accelerator_count[rows]
    fit_first, fit_of_row = _factorize(accelerator_codes, counts,
                                       offers.accelerator_memory_gib[rows])
    needs: list[MemoryNeed] = []
    for f in fit_first.tolist():
        offer = offers[int(rows[f])]
        needs.append(memory_need(spec, profile, offer, assumptions,
                                 memory.get(offer.accelerator)))
    no_room = np.asarray([n.rejection is not None for n in needs], dtype=bool)[fit_of_row]
    fit_rejections = [n.rejection for n in needs]
    rejected.add(rows[no_room],
                 np.asarray([r.kind if r else None for r in fit_rejections],
                            dtype=object)[fit_of_row[no_room]],
                 # rows ascend, so a catalog row's place among them is a binary search
                 lambda row, offer, at=rows, fit=fit_of_row: replace(
                     fit_rejections[fit[np.searchsorted(at, row)]], offer=offer))
    rows, fit_of_row = rows[~no_room], fit_of_row[~no_room]

    # Throughput per (accelerator, device count): the batch split is fixed by the count.
    tp_first, tp_of_row = _factorize(offers.accelerator.codes[rows],
                                     offers.accelerator_count[rows])
    throughputs: list[ThroughputEstimate] = []
    for f in tp_first.tolist():
        offer = offers[int(rows[f])]
        # The operator prior splits per-step work over the samples each device holds.
        on_offer = replace(features, batch_size_per_device=samples_per_device(spec, offer))
        throughputs.append(model.estimate(
            on_offer, catalog.accelerators[offer.accelerator], count=offer.accelerator_count,
            measurements=measurements).step_capped(spec.batch_size))

    def per_row(values: list[Any]) -> np.ndarray:
        return np.asarray(values, dtype=float)[tp_of_row]

    bands = _spot_bands(spec, offers, rows, assumptions)
    overhead, overhead_low, overhead_high = bands.point, bands.low, bands.high
    price = offers.price_usd_per_hour[rows]
    figures = run_figures(
        spec.total_samples, price,
        samples_per_second=per_row([t.samples_per_second for t in throughputs]),
        samples_per_second_low=per_row([t.samples_per_second_low for t in throughputs]),
        samples_per_second_high=per_row([t.samples_per_second_high for t in throughputs]),
        overhead=overhead, overhead_low=overhead_low, overhead_high=overhead_high,
        startup_hours=assumptions.startup_hours)
    # the conservative and optimistic ends, as CostEstimate's properties compute them
    spd_low = (samples_per_usd_many(per_row([t.samples_per_second_low for t in throughputs]),
                                    price) / (1 + overhead_high))
    spd_high = (samples_per_usd_many(per_row([t.samples_per_second_high for t in throughputs]),
                                     price) / (1 + overhead_low))
    spd = figures["samples_per_dollar"]
    twins = _twins(offers, rows)  # among every costed offer, as the on-demand twin may be over

    cons = spec.constraints
    late = (figures["run_hours"] > cons.deadline_hours if cons.deadline_hours is not None
            else np.zeros(len(rows), bool))
    dear = (~late & (figures["run_cost_usd"] > cons.budget_usd) if cons.budget_usd is not None
            else np.zeros(len(rows), bool))
    run_hours, run_cost = figures["run_hours"], figures["run_cost_usd"]

    # a rejected catalog row's place among the costed rows
    place_of = {row: place for mask in (late, dear)
                for row, place in zip(rows[mask].tolist(), np.flatnonzero(mask).tolist(),
                                      strict=True)}
    rejected.add(rows[late], RejectionKind.DEADLINE, lambda row, offer: Rejection(
        offer, RejectionKind.DEADLINE, {
            "run_hours": float(run_hours[place_of[row]]),
            "deadline_hours": cons.deadline_hours or 0.0, "spot": bands.text(place_of[row])}))
    rejected.add(rows[dear], RejectionKind.BUDGET, lambda row, offer: Rejection(
        offer, RejectionKind.BUDGET, {
            "run_cost_usd": float(run_cost[place_of[row]]),
            "budget_usd": cons.budget_usd or 0.0, "spot": bands.text(place_of[row])}))

    kept = np.flatnonzero(~late & ~dear)
    ranked_by = spd_low if rank_by is RankBy.CONSERVATIVE else spd
    order_of_offer = offers.order()[rows]
    best_first = kept[np.lexsort((order_of_offer[kept], -spd[kept], -ranked_by[kept]))]
    bases = np.empty(len(throughputs), dtype=object)
    bases[:] = [t.basis for t in throughputs]

    def estimate(place: int) -> CostEstimate:
        q = int(fit_of_row[place])
        return cost_of(spec, offers[int(rows[place])], throughputs[int(tp_of_row[place])],
                       assumptions, needs[q].gib)

    def make(i: int) -> CostEstimate:
        place = int(best_first[i])
        est = estimate(place)
        twin = int(twins[place])
        return replace(est, on_demand=estimate(twin)) if twin >= 0 else est

    shown = offers.take(rows[best_first])

    def json_rows() -> Iterator[dict[str, Any]]:
        """``estimate_row`` of each ranked row, from the columns (a test holds them equal)."""
        from advisor.ranking.serialize import spot_fields

        at = best_first
        twin = twins[at]
        on_demand_price = np.where(shown.market.equals(Market.ON_DEMAND.value), price[at],
                                   np.where(twin >= 0, price[np.maximum(twin, 0)], np.nan))
        per_band = [spot_fields(o) for o in bands.overheads]
        off_spot = spot_fields(None)
        run_cost_low, run_cost_high = figures["run_cost_usd_low"][at], figures["run_cost_usd_high"][at]
        cells = zip(
            shown.keys(), shown.cloud.to_list(), shown.region.to_list(),
            shown.instance_type.to_list(), shown.accelerator.to_list(),
            shown.accelerator_count.tolist(), shown.market.to_list(), price[at].tolist(),
            tp_of_row[at].tolist(), spd[at].tolist(), spd_low[at].tolist(),
            spd_high[at].tolist(), run_hours[at].tolist(), (run_cost_low / price[at]).tolist(),
            (run_cost_high / price[at]).tolist(), run_cost[at].tolist(), run_cost_low.tolist(),
            run_cost_high.tolist(), fit_of_row[at].tolist(),
            shown.accelerator_memory_gib.tolist(), bands.band[at].tolist(),
            on_demand_price.tolist(), shown.observed_at.to_list(), shown.source.to_list(),
            strict=True)
        for (key, cloud, region, itype, accelerator, count, market, dollars, q, point, low,
             high, hours, hours_low, hours_high, cost, cost_low, cost_high, fit, device_gib,
             band, od_price, observed, source) in cells:
            t = throughputs[q]
            yield {
                "offer": key, "cloud": cloud, "region": region, "instance_type": itype,
                "accelerator": accelerator, "accelerator_count": count, "market": market,
                "price_usd_per_hour": dollars, "samples_per_second": t.samples_per_second,
                "samples_per_second_low": t.samples_per_second_low,
                "samples_per_second_high": t.samples_per_second_high,
                "samples_per_dollar": point, "samples_per_dollar_low": low,
                "samples_per_dollar_high": high, "run_hours": hours, "run_hours_low": hours_low,
                "run_hours_high": _finite(hours_high), "run_cost_usd": cost,
                "run_cost_usd_low": cost_low, "run_cost_usd_high": _finite(cost_high),
                "memory_needed_gib_per_device": needs[fit].gib,
                "accelerator_memory_gib": device_gib, "basis": str(t.basis),
                **(per_band[band] if band >= 0 else off_spot),
                "on_demand_price_usd_per_hour": None if od_price != od_price else od_price,
                "price_observed_at": observed, "price_source": source,
            }

    ranked = RankedOffers(
        shown, samples_per_dollar=spd[best_first], samples_per_dollar_low=spd_low[best_first],
        samples_per_dollar_high=spd_high[best_first], run_cost_usd=run_cost[best_first],
        basis=bases[tp_of_row[best_first]], make=make, json_rows=json_rows)
    return ranked, rejected.table(offers)


def _finite(value: float) -> float | None:
    """None for an infinite figure (a run that never finishes), as ``estimate_row`` says it."""
    return value if math.isfinite(value) else None
