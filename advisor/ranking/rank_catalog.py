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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import numpy as np

from advisor.profiling import WorkloadProfile
from advisor.ranking.columns import RankedOffers, RejectedOffers
from advisor.ranking.cost_estimate import samples_per_dollar_at
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
from advisor.ranking.rejections import reason_text
from advisor.ranking.spot_risk import SpotOverhead, spot_overhead
from advisor.spec import WorkloadSpec
from advisor.throughput import Measurement, ThroughputEstimate, ThroughputModel, WorkloadFeatures
from pricing import Catalog, Cloud, Market, shipped_spot_data
from pricing.offer_table import OfferTable, object_array

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


Figures = Mapping[str, float | int | str]


@dataclass
class _Rejections:
    """Rejected rows of the catalog, gathered as the ranking goes: the rows, their kind, and
    each one's figures (given the catalog row), from which its record, or its ``--json`` row
    straight from the columns, is made."""

    rows: list[np.ndarray] = field(default_factory=list)
    kinds: list[np.ndarray] = field(default_factory=list)
    figures: list[Callable[[int], Figures]] = field(default_factory=list)

    def add(self, rows: np.ndarray, kind: RejectionKind | np.ndarray,
            figures: Callable[[int], Figures]) -> None:
        if not len(rows):
            return
        self.rows.append(rows)
        self.kinds.append(object_array([kind] * len(rows)) if isinstance(kind, RejectionKind)
                          else kind)
        self.figures.append(figures)

    def table(self, offers: OfferTable, order: np.ndarray) -> RejectedOffers:
        """The rejections in offer order (``order``: ``offers.order()``)."""
        if not self.rows:
            return RejectedOffers.of(())
        rows = np.concatenate(self.rows)
        source = np.concatenate([np.full(len(r), i) for i, r in enumerate(self.rows)])
        by = np.argsort(order[rows], kind="stable")
        rows, source, kinds = rows[by], source[by], np.concatenate(self.kinds)[by]
        figures = self.figures

        def make(i: int) -> Rejection:
            row = int(rows[i])
            return Rejection(offers[row], kinds[i], figures[int(source[i])](row))

        def iterate() -> Iterator[Rejection]:
            for row, src, kind, offer in zip(rows.tolist(), source.tolist(), kinds.tolist(),
                                             offers.take(rows), strict=True):
                yield Rejection(offer, kind, figures[src](row))

        def json_rows(offer_cells: bool) -> Iterator[dict[str, Any]]:
            shown = offers.take(rows)
            cells = zip(shown.keys(), shown.cloud.to_list(), shown.instance_type.to_list(),
                        shown.region.to_list(), shown.market.to_list(),
                        shown.accelerator.to_list(), shown.price_usd_per_hour.tolist(),
                        shown.accelerator_count.tolist(), kinds.tolist(), rows.tolist(),
                        source.tolist(), shown.accelerator_memory_gib.tolist(),
                        shown.observed_at.to_list(), shown.source.to_list(), strict=True)
            for (key, cloud, itype, region, market, accelerator, price, count, kind, row, src,
                 device_gib, observed, price_source) in cells:
                figs = figures[src](row)
                line = {
                    "offer": key, "cloud": cloud, "instance_type": itype, "region": region,
                    "market": market, "accelerator": accelerator, "price_usd_per_hour": price,
                    "reason": reason_text(kind, cloud=cloud, region=region,
                                          accelerator=accelerator, count=count, figures=figs),
                    "reason_kind": str(kind), "figures": dict(figs),
                }
                if offer_cells:
                    line.update(accelerator_count=count, accelerator_memory_gib=device_gib,
                                price_observed_at=observed, price_source=price_source)
                yield line

        return RejectedOffers(kinds, make, iterate, json_rows=json_rows)


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
                instance: np.ndarray, assumptions: CostAssumptions) -> _Bands:
    """The spot band of each of ``rows``, looked up once per instance (``instance``: each
    row's (cloud, type, region) number) and costed once per band."""
    n = len(rows)
    point, low, high = np.zeros(n), np.zeros(n), np.zeros(n)
    band_of_row = np.full(n, -1, dtype=np.int64)
    spot = np.flatnonzero(offers.market.equals(Market.SPOT.value)[rows])
    overheads: list[SpotOverhead] = []
    if not len(spot):
        return _Bands(point, low, high, band_of_row, overheads)
    data = shipped_spot_data()
    _, first, place = np.unique(instance[spot], return_index=True, return_inverse=True)
    bands: dict[object, int] = {}
    band_of_place = []
    firsts = rows[spot[first]]
    clouds = {name: Cloud(name) for name in offers.cloud.values}
    for row, cloud, itype, region in zip(
            firsts.tolist(), offers.cloud.take(firsts).to_list(),
            offers.instance_type.take(firsts).to_list(), offers.region.take(firsts).to_list(),
            strict=True):
        key = (cloud, data.risk(clouds[cloud], itype, region))
        if key not in bands:  # no published band: the cloud's assumed one
            bands[key] = len(overheads)
            overheads.append(spot_overhead(offers[row], 0.0,
                                           checkpoint_minutes=spec.checkpoint_minutes,
                                           restart_hours=assumptions.startup_hours))
        band_of_place.append(bands[key])
    band_of_row[spot] = np.asarray(band_of_place, dtype=np.int64)[place.ravel()]
    for values, name in ((point, "overhead_fraction"), (low, "overhead_fraction_low"),
                         (high, "overhead_fraction_high")):
        values[spot] = np.asarray([getattr(o, name) for o in overheads])[band_of_row[spot]]
    return _Bands(point, low, high, band_of_row, overheads)


def _twins(offers: OfferTable, rows: np.ndarray, place: np.ndarray) -> np.ndarray:
    """Per row of ``rows``: for a spot offer, the position (in ``rows``) of the on-demand offer
    of the same instance (``place``: each row's (cloud, type, region) number); -1 where there
    is none, and on demand."""
    on_demand = offers.market.equals(Market.ON_DEMAND.value)[rows]
    twin_of_place = np.full(int(place.max(initial=-1)) + 1, -1, dtype=np.int64)
    twin_of_place[place[on_demand]] = np.flatnonzero(on_demand)
    twins: np.ndarray = twin_of_place[place]
    twins[on_demand] = -1
    return twins


@dataclass(frozen=True)
class _Costed:
    """The offers that fit, costed: per row (in catalog order) its catalog row, its memory
    question and need, its throughput question, its spot band and its run figures."""

    spec: WorkloadSpec
    assumptions: CostAssumptions
    offers: OfferTable  # the whole catalog
    rows: np.ndarray
    fit_of_row: np.ndarray
    needs: list[MemoryNeed]
    tp_of_row: np.ndarray
    throughputs: list[ThroughputEstimate]
    bands: _Bands
    figures: dict[str, np.ndarray]  # run_figures, plus the conservative and optimistic ends
    twins: np.ndarray

    def estimate(self, place: int) -> CostEstimate:
        """The estimate of one costed row, by the single-offer path (its on-demand twin
        unset)."""
        return cost_of(self.spec, self.offers[int(self.rows[place])],
                       self.throughputs[int(self.tp_of_row[place])], self.assumptions,
                       self.needs[int(self.fit_of_row[place])].gib)

    def ranked_estimate(self, place: int) -> CostEstimate:
        """The estimate of one costed row as the ranking shows it: with its on-demand twin."""
        est, twin = self.estimate(place), int(self.twins[place])
        return replace(est, on_demand=self.estimate(twin)) if twin >= 0 else est

    def json_rows(self, order: np.ndarray) -> Iterator[dict[str, Any]]:
        """``estimate_row`` of the rows ``order`` names, in that order, from the columns (a
        test holds them equal, key order included)."""
        from advisor.ranking.serialize import spot_fields

        f, price = self.figures, self.offers.price_usd_per_hour[self.rows]
        shown = self.offers.take(self.rows[order])
        twin = self.twins[order]
        on_demand_price = np.where(
            shown.market.equals(Market.ON_DEMAND.value), price[order],
            np.where(twin >= 0, price[np.maximum(twin, 0)], np.nan))
        per_band = [spot_fields(o) for o in self.bands.overheads]
        off_spot = spot_fields(None)
        cost_low, cost_high = f["run_cost_usd_low"][order], f["run_cost_usd_high"][order]
        cells = zip(
            shown.keys(), shown.cloud.to_list(), shown.region.to_list(),
            shown.instance_type.to_list(), shown.accelerator.to_list(),
            shown.accelerator_count.tolist(), shown.market.to_list(), price[order].tolist(),
            self.tp_of_row[order].tolist(), f["samples_per_dollar"][order].tolist(),
            f["samples_per_dollar_low"][order].tolist(),
            f["samples_per_dollar_high"][order].tolist(), f["run_hours"][order].tolist(),
            (cost_low / price[order]).tolist(), (cost_high / price[order]).tolist(),
            f["run_cost_usd"][order].tolist(), cost_low.tolist(), cost_high.tolist(),
            self.fit_of_row[order].tolist(), shown.accelerator_memory_gib.tolist(),
            self.bands.band[order].tolist(), on_demand_price.tolist(),
            shown.observed_at.to_list(), shown.source.to_list(), strict=True)
        for (key, cloud, region, itype, accelerator, count, market, dollars, q, point, low,
             high, hours, hours_low, hours_high, cost, run_low, run_high, fit, device_gib,
             band, od_price, observed, source) in cells:
            t = self.throughputs[q]
            yield {
                "offer": key, "cloud": cloud, "region": region, "instance_type": itype,
                "accelerator": accelerator, "accelerator_count": count, "market": market,
                "price_usd_per_hour": dollars, "samples_per_second": t.samples_per_second,
                "samples_per_second_low": t.samples_per_second_low,
                "samples_per_second_high": t.samples_per_second_high,
                "samples_per_dollar": point, "samples_per_dollar_low": low,
                "samples_per_dollar_high": high, "run_hours": hours, "run_hours_low": hours_low,
                "run_hours_high": _finite(hours_high), "run_cost_usd": cost,
                "run_cost_usd_low": run_low, "run_cost_usd_high": _finite(run_high),
                "memory_needed_gib_per_device": self.needs[fit].gib,
                "accelerator_memory_gib": device_gib, "basis": str(t.basis),
                **(per_band[band] if band >= 0 else off_spot),
                "on_demand_price_usd_per_hour": None if od_price != od_price else od_price,
                "price_observed_at": observed, "price_source": source,
            }


def _fitting(spec: WorkloadSpec, catalog: Catalog, rows: np.ndarray, rejected: _Rejections, *,
             profile: WorkloadProfile, assumptions: CostAssumptions,
             memory: Mapping[str, MeasuredMemory]) -> tuple[np.ndarray, np.ndarray,
                                                             list[MemoryNeed]]:
    """The ``rows`` whose step fits the device (the others rejected), each one's memory
    question (accelerator, device count, device memory) and each question's need."""
    offers = catalog.offers
    first, fit_of_row = _factorize(offers.accelerator.codes[rows],
                                   offers.accelerator_count[rows],
                                   offers.accelerator_memory_gib[rows])
    needs = []
    for f in first.tolist():
        offer = offers[int(rows[f])]
        needs.append(memory_need(spec, profile, offer, assumptions,
                                 memory.get(offer.accelerator)))
    no_fit = [n.rejection for n in needs]
    kinds = object_array([r.kind if r is not None else None for r in no_fit])
    no_room = np.asarray([r is not None for r in no_fit], dtype=bool)[fit_of_row]
    figures = [r.figures if r is not None else {} for r in no_fit]
    question = np.full(len(offers), -1, dtype=np.int64)  # a rejected catalog row's question
    question[rows[no_room]] = fit_of_row[no_room]
    rejected.add(rows[no_room], kinds[fit_of_row[no_room]], lambda row: figures[question[row]])
    return rows[~no_room], fit_of_row[~no_room], needs


def _throughputs(spec: WorkloadSpec, catalog: Catalog, rows: np.ndarray, *,
                 model: ThroughputModel, features: WorkloadFeatures,
                 measurements: Sequence[Measurement]) -> tuple[np.ndarray,
                                                               list[ThroughputEstimate]]:
    """Each row's throughput question (accelerator, device count: the count fixes the batch
    split) and each question's estimate."""
    offers = catalog.offers
    first, tp_of_row = _factorize(offers.accelerator.codes[rows], offers.accelerator_count[rows])
    throughputs = []
    for f in first.tolist():
        offer = offers[int(rows[f])]
        # The operator prior splits per-step work over the samples each device holds.
        on_offer = replace(features, batch_size_per_device=samples_per_device(spec, offer))
        throughputs.append(model.estimate(
            on_offer, catalog.accelerators[offer.accelerator], count=offer.accelerator_count,
            measurements=measurements).step_capped(spec.batch_size))
    return tp_of_row, throughputs


def rank_catalog(
    spec: WorkloadSpec, catalog: Catalog, *, profile: WorkloadProfile, model: ThroughputModel,
    features: WorkloadFeatures, measurements: Sequence[Measurement],
    memory: Mapping[str, MeasuredMemory], assumptions: CostAssumptions, include_flagged: bool,
    rank_by: RankBy, portability: Callable[[str], Portability | None], strict: bool,
) -> tuple[RankedOffers, RejectedOffers]:
    """Every offer of ``catalog`` ranked for ``spec`` (best first by ``rank_by``, ties by
    samples per dollar, then offer order) or rejected with its reason, in offer order. With
    ``strict``, offers whose accelerator ``portability`` blocks are rejected."""
    offers = catalog.offers
    rejected = _Rejections()
    failed, rules = static_failures(spec, offers, catalog.accelerators,
                                    include_flagged=include_flagged)
    rule_kinds = object_array([r.kind for r in rules])
    failing = np.flatnonzero(failed >= 0)
    rejected.add(failing, rule_kinds[failed[failing]],
                 lambda row: rules[failed[row]].figures(offers, row))
    rows = np.flatnonzero(failed < 0)
    if strict:
        rows = _portable(offers, rows, rejected, portability)
    rows, fit_of_row, needs = _fitting(spec, catalog, rows, rejected, profile=profile,
                                       assumptions=assumptions, memory=memory)
    tp_of_row, throughputs = _throughputs(spec, catalog, rows, model=model, features=features,
                                          measurements=measurements)

    def per_row(field: str) -> np.ndarray:
        values: np.ndarray = np.asarray([getattr(t, field) for t in throughputs],
                                        dtype=float)[tp_of_row]
        return values

    # each row's instance (cloud, type, region): its spot band and its on-demand twin
    _, instance = _factorize(offers.cloud.codes[rows], offers.instance_type.codes[rows],
                             offers.region.codes[rows])
    bands = _spot_bands(spec, offers, rows, instance, assumptions)
    price = offers.price_usd_per_hour[rows]
    sps, sps_low, sps_high = (per_row("samples_per_second"), per_row("samples_per_second_low"),
                              per_row("samples_per_second_high"))
    figures = run_figures(spec.total_samples, price, samples_per_second=sps,
                          samples_per_second_low=sps_low, samples_per_second_high=sps_high,
                          overhead=bands.point, overhead_low=bands.low,
                          overhead_high=bands.high, startup_hours=assumptions.startup_hours)
    # the conservative and optimistic ends, as CostEstimate's properties compute them
    figures["samples_per_dollar_low"] = samples_per_dollar_at(sps_low, price, bands.high)
    figures["samples_per_dollar_high"] = samples_per_dollar_at(sps_high, price, bands.low)
    costed = _Costed(spec, assumptions, offers, rows, fit_of_row, needs, tp_of_row, throughputs,
                     bands, figures, _twins(offers, rows, instance))  # before the deadline cut

    kept = _within_deadline_and_budget(spec, costed, rejected)
    spd = figures["samples_per_dollar"]
    ranked_by = figures["samples_per_dollar_low"] if rank_by is RankBy.CONSERVATIVE else spd
    order = offers.order()  # ties, and the rejections, in offer order
    best_first = kept[np.lexsort((order[rows][kept], -spd[kept], -ranked_by[kept]))]
    bases = object_array([t.basis for t in throughputs])
    ranked = RankedOffers(
        offers.take(rows[best_first]), samples_per_dollar=spd[best_first],
        samples_per_dollar_low=figures["samples_per_dollar_low"][best_first],
        samples_per_dollar_high=figures["samples_per_dollar_high"][best_first],
        run_cost_usd=figures["run_cost_usd"][best_first], basis=bases[tp_of_row[best_first]],
        make=lambda i: costed.ranked_estimate(int(best_first[i])),
        json_rows=lambda: costed.json_rows(best_first))
    return ranked, rejected.table(offers, order)


def _portable(offers: OfferTable, rows: np.ndarray, rejected: _Rejections,
              portability: Callable[[str], Portability | None]) -> np.ndarray:
    """The ``rows`` whose accelerator runs the step's operators (the others rejected)."""
    accelerators = offers.accelerator.take(rows)
    codes = accelerators.codes
    blocked: list[int] = []
    for name in accelerators.present():
        port = portability(name)
        if port is not None and port.blocked_operators:
            code = accelerators.values.index(name)
            blocked.append(code)
            rejected.add(rows[codes == code], RejectionKind.PORTABILITY,
                         partial(_unportable, figures=port.rejection_figures()))
    return rows[~np.isin(codes, blocked)]


def _unportable(_row: int, *, figures: Figures) -> Figures:
    return figures


def _within_deadline_and_budget(spec: WorkloadSpec, costed: _Costed,
                                rejected: _Rejections) -> np.ndarray:
    """The places (among the costed rows) of runs within the deadline and the budget; the
    others rejected, the deadline checked first."""
    cons, n = spec.constraints, len(costed.rows)
    hours, cost = costed.figures["run_hours"], costed.figures["run_cost_usd"]
    late = hours > cons.deadline_hours if cons.deadline_hours is not None else np.zeros(n, bool)
    dear = (~late & (cost > cons.budget_usd) if cons.budget_usd is not None
            else np.zeros(n, bool))
    place_of = {row: place for mask in (late, dear)  # a rejected catalog row's place
                for row, place in zip(costed.rows[mask].tolist(), np.flatnonzero(mask).tolist(),
                                      strict=True)}
    rejected.add(costed.rows[late], RejectionKind.DEADLINE, lambda row: {
        "run_hours": float(hours[place_of[row]]), "deadline_hours": cons.deadline_hours or 0.0,
        "spot": costed.bands.text(place_of[row])})
    rejected.add(costed.rows[dear], RejectionKind.BUDGET, lambda row: {
        "run_cost_usd": float(cost[place_of[row]]), "budget_usd": cons.budget_usd or 0.0,
        "spot": costed.bands.text(place_of[row])})
    return np.flatnonzero(~late & ~dear)


def _finite(value: float) -> float | None:
    """None for an infinite figure (a run that never finishes), as ``estimate_row`` says it."""
    return value if math.isfinite(value) else None
