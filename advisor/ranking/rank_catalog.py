"""Rank a whole catalog in arrays: each distinct question answered once, each offer priced from it.

Memory fit and throughput depend on the accelerator, its memory and how many devices split the
batch, not on the region or market; the interruption overhead depends on the spot band, not on
the offer. So they are computed once per distinct key (a few hundred calls for 100,000 offers),
and the offers are priced, filtered and ordered as numpy arrays with the formulas the single
offer path uses (``run_figures``). The records (``CostEstimate``, ``Rejection``) of a row are
built by that path (``cost_of``) when a reader asks for the row, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from advisor.ranking.spot_risk import spot_overhead
from advisor.spec import WorkloadSpec
from advisor.throughput import Measurement, ThroughputEstimate, ThroughputModel, WorkloadFeatures
from pricing import Catalog, InstanceOffer, Market, shipped_spot_data
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

        return RejectedOffers(kinds, make)


def _spot_overheads(spec: WorkloadSpec, offers: OfferTable, rows: np.ndarray,
                    assumptions: CostAssumptions) -> tuple[np.ndarray, ...]:
    """Per row of ``rows``: the interruption overhead (point, low end, pessimistic end) of its
    spot band, 0 on demand; and per row the band's text for rejections (``''`` on demand)."""
    n = len(rows)
    point, low, high = np.zeros(n), np.zeros(n), np.zeros(n)
    band_text = np.empty(n, dtype=object)
    band_text[:] = ""
    spot = np.flatnonzero(offers.market.codes[rows] ==
                          offers.market.values.index(Market.SPOT.value)
                          if Market.SPOT.value in offers.market.values else np.zeros(n, bool))
    if not len(spot):
        return point, low, high, band_text
    data = shipped_spot_data()
    first, place = _factorize(offers.cloud.codes[rows[spot]],
                              offers.instance_type.codes[rows[spot]],
                              offers.region.codes[rows[spot]])
    # the band of each distinct (cloud, type, region), and one overhead per distinct band
    figures: dict[object, tuple[float, float, float, str]] = {}
    per_place = []
    for f in first.tolist():
        offer = offers[int(rows[spot[f]])]
        risk = data.risk(offer.cloud, offer.instance_type, offer.region)
        band = (offer.cloud, risk)  # no published band: the cloud's assumed one
        if band not in figures:
            s = spot_overhead(offer, 0.0, checkpoint_minutes=spec.checkpoint_minutes,
                              restart_hours=assumptions.startup_hours)
            figures[band] = (s.overhead_fraction, s.overhead_fraction_low,
                             s.overhead_fraction_high,
                             f" (spot, interruption band {s.bucket_label} {s.basis})")
        per_place.append(figures[band])
    values = list(zip(*per_place, strict=True))
    point[spot] = np.asarray(values[0])[place]
    low[spot] = np.asarray(values[1])[place]
    high[spot] = np.asarray(values[2])[place]
    band_text[spot] = np.asarray(values[3], dtype=object)[place]
    return point, low, high, band_text


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

    overhead, overhead_low, overhead_high, band_text = _spot_overheads(
        spec, offers, rows, assumptions)
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

    def place_of(row: int) -> int:  # a catalog row's place among the costed rows
        return int(np.searchsorted(rows, row))

    rejected.add(rows[late], RejectionKind.DEADLINE, lambda row, offer: Rejection(
        offer, RejectionKind.DEADLINE, {
            "run_hours": float(run_hours[place_of(row)]),
            "deadline_hours": cons.deadline_hours or 0.0, "spot": band_text[place_of(row)]}))
    rejected.add(rows[dear], RejectionKind.BUDGET, lambda row, offer: Rejection(
        offer, RejectionKind.BUDGET, {
            "run_cost_usd": float(run_cost[place_of(row)]),
            "budget_usd": cons.budget_usd or 0.0, "spot": band_text[place_of(row)]}))

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

    ranked = RankedOffers(
        offers.take(rows[best_first]), samples_per_dollar=spd[best_first],
        samples_per_dollar_low=spd_low[best_first], samples_per_dollar_high=spd_high[best_first],
        run_cost_usd=run_cost[best_first], basis=bases[tp_of_row[best_first]], make=make)
    return ranked, rejected.table(offers)
