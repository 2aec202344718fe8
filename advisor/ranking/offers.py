"""Ranking: costs, constraints and the order of offers by samples per dollar (pure)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.errors import NoFeasibleOffer, SpecError
from advisor.profiling import WorkloadProfile, overhead_for_accelerator, overhead_for_vendor
from advisor.ranking.columns import RankedOffers, RejectedOffers
from advisor.ranking.cost_estimate import (
    CONSERVATIVE_QUANTILE,
    CostEstimate,
    RankBy,
    samples_per_dollar_at,
)
from advisor.ranking.rejections import Rejection, RejectionKind
from advisor.ranking.spot_risk import measured_pessimistic_rate, spot_overhead
from advisor.spec import SpotPolicy, WorkloadSpec
from advisor.throughput import ThroughputEstimate
from pricing import AcceleratorSpec, Catalog, Cloud, InstanceOffer, Market, matching_accelerators
from pricing.billing import usd_many
from pricing.offer_table import OfferTable
from probes import search_largest_batch

if TYPE_CHECKING:
    from advisor.ranking.portability import Portability

__all__ = [
    "CONSERVATIVE_QUANTILE",
    "CostAssumptions",
    "CostEstimate",
    "MeasuredMemory",
    "MemoryNeed",
    "Opportunity",
    "RankBy",
    "Recommendation",
    "Rejection",
    "RejectionKind",
    "StaticRule",
    "check_constraint_names",
    "cost_of",
    "filter_offers",
    "memory_need",
    "memory_rejection",
    "per_device_batch",
    "rank",
    "run_figures",
    "samples_per_device",
    "samples_that_fit",
    "static_failures",
    "with_on_demand_twins",
]

_SECONDS_PER_HOUR = 3600.0  # time, not money: dollars come from pricing.billing


@dataclass(frozen=True, slots=True)
class CostAssumptions:
    """Fixed overheads added to every run (stated under every ranking).

    ``runtime_memory_overhead_gib`` None adds, per device, the overhead of the offer's
    accelerator vendor from ``advisor/data/runtime_overhead.csv`` (CUDA context, cuBLAS
    workspaces, allocator slack); a number adds that many GiB on every device instead.
    """

    startup_hours: float = 0.25
    runtime_memory_overhead_gib: float | None = None

    def memory_overhead(self, accelerator: str, step_gib: float) -> tuple[float, str]:
        """GiB the runtime adds on one ``accelerator`` to a step needing ``step_gib``, and
        what messages call it (``CUDA runtime``)."""
        if self.runtime_memory_overhead_gib is not None:
            return self.runtime_memory_overhead_gib, "runtime overhead"
        overhead = overhead_for_accelerator(accelerator)
        return overhead.gib(step_gib), overhead.name

    def describe(self) -> list[str]:
        """One sentence per assumption."""
        if self.runtime_memory_overhead_gib is not None:
            overhead = f"{self.runtime_memory_overhead_gib:g} GiB runtime overhead per device"
        else:
            cuda = overhead_for_vendor("NVIDIA").describe()
            other = overhead_for_vendor(None).describe()
            overhead = (f"the runtime's overhead per device (CUDA: {cuda} for the context, "
                        f"cuBLAS workspaces and allocator slack; {other} elsewhere; "
                        "advisor/data/runtime_overhead.csv)")
        return [
            f"start-up (provisioning, image, data staging): {self.startup_hours:g} h per run",
            "spot: expected run time lost to interruptions = interruptions expected from the "
            "instance type's published monthly interruption band (AWS Spot Advisor; the top band "
            "where none is published: GCP, Azure and unlisted types) x (half of "
            "checkpoint_minutes + the start-up time to restart); a monthly band read as a "
            "constant hourly rate is a lower bound for runs much shorter than a month "
            "(pricing/data/spot_interruption.csv; the table shows the band beside 'spot', "
            "'?' where it is assumed). The pessimistic end of a spot run (its dearest run cost, "
            "and the conservative samples per dollar the order uses) takes the band's top where "
            "the band is closed, and where it is open (>20%) or unpublished the "
            f"{measured_pessimistic_rate().describe()} "
            "(advisor/data/spot_preemption_measured.csv)",
            "memory: the peak of one training step (AdamW, autocast at the spec's precision) "
            "traced on fake tensors as CUDA's caching allocator counts it, or a probe's measured "
            "peak on that accelerator, or profile.memory_gib from model.yaml; plus " + overhead,
        ]


@dataclass(frozen=True, slots=True)
class Opportunity:
    """An accelerator type whose optimistic end beats the pick: what its best offer could
    reach, and what a probe of it (on its cheapest offer) costs and is expected to save."""

    estimate: CostEstimate
    probe_offer_key: str
    probe_cost_usd: float
    expected_saving_usd: float
    up_to_times_pick: float


@dataclass(frozen=True)
class Recommendation:
    """A ranked answer for one workload: best samples per dollar (by ``rank_by``) first;
    ``could_be_better`` lists what a probe could overturn, largest expected saving per probe
    dollar first."""

    workload: str
    prices_captured_at: date
    ranked: RankedOffers  # any sequence of estimates given is held as RankedOffers
    rejected: RejectedOffers  # likewise, any sequence of rejections
    assumptions: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    extra: dict[str, object] = field(default_factory=dict)
    rank_by: RankBy = RankBy.CONSERVATIVE
    could_be_better: tuple[Opportunity, ...] = ()
    portability: tuple[Portability, ...] = ()  # of the pick and the challengers off CUDA

    def __post_init__(self) -> None:
        object.__setattr__(self, "ranked", RankedOffers.of(self.ranked))
        object.__setattr__(self, "rejected", RejectedOffers.of(self.rejected))

    def pick(self) -> CostEstimate:
        """The top-ranked offer's estimate; NoFeasibleOffer when no offer meets every
        constraint (its message is the advice's first line: how many were rejected, why)."""
        if not self.ranked:
            why = self.advice[0] if self.advice else "no offer meets every constraint"
            raise NoFeasibleOffer(f"{self.workload}: {why}", workload=self.workload,
                                  rejected=len(self.rejected))
        return self.ranked[0]


def _accelerator_set(names: Sequence[str], accelerators: dict[str, AcceleratorSpec],
                     key: str) -> set[str]:
    """Every accelerator the names stand for (``A100`` is all its variants); UnknownNameError
    names ``constraints.accelerators.<key>``."""
    field_name = f"constraints.accelerators.{key}"
    return {match for name in names
            for match in matching_accelerators(name, accelerators, field=field_name)}


def _check_regions_of_clouds(regions: Sequence[str], clouds: Sequence[Cloud],
                             catalog: Catalog) -> None:
    """SpecError for a region with offers on none of ``clouds`` (none given: any cloud)."""
    for region in regions if clouds else ():
        if not any(region in catalog.regions(cloud) for cloud in clouds):
            owners = ", ".join(c.value for c in Cloud if region in catalog.regions(c))
            raise SpecError("constraints.regions", f"{region!r} has offers only on {owners}, "
                            f"which constraints.clouds leaves out; add {owners} to "
                            "constraints.clouds or name a region of "
                            f"{', '.join(c.value for c in clouds)}")


def check_constraint_names(spec: WorkloadSpec, catalog: Catalog) -> None:
    """Raise UnknownNameError naming the constraints field of any region or accelerator the
    catalog does not know, with close matches, and SpecError for a region of no cloud
    ``constraints.clouds`` allows (call before ranking)."""
    cons = spec.constraints
    catalog.check_regions(cons.regions, field="constraints.regions")
    _check_regions_of_clouds(cons.regions, cons.clouds, catalog)
    _accelerator_set(cons.accelerators_include, catalog.accelerators, "include")
    _accelerator_set(cons.accelerators_exclude, catalog.accelerators, "exclude")


@dataclass(frozen=True, slots=True)
class StaticRule:
    """A constraint an offer fails by its own fields: which rows fail it (over a table), the
    kind of its rejection and the figures that rejection states (from a table's row: a ranking
    of 100,000 offers states them without building the offers)."""

    kind: RejectionKind
    fails: Callable[[OfferTable], np.ndarray]
    figures: Callable[[OfferTable, int], dict[str, float | int | str]]  # (table, row)


def static_failures(spec: WorkloadSpec, offers: OfferTable,
                    accelerators: dict[str, AcceleratorSpec], *,
                    include_flagged: bool = False) -> tuple[np.ndarray, list[StaticRule]]:
    """Per offer, the index of the first rule in the returned list it fails (-1: none), by the
    spec's static constraints.

    An accelerator family in the constraints (``A100``, ``H100``) covers all its variants; an
    exact name (``H100-SXM``) just itself. Offers whose price a consistency check doubts are
    rejected unless ``include_flagged``. Rules the spec does not set are not in the list.
    """
    cons = spec.constraints
    include = _accelerator_set(cons.accelerators_include, accelerators, "include")
    exclude = _accelerator_set(cons.accelerators_exclude, accelerators, "exclude")
    kind = RejectionKind
    none: dict[str, float | int | str] = {}
    max_count = cons.max_accelerators
    spot, on_demand = Market.SPOT.value, Market.ON_DEMAND.value
    inference = [name for name, acc in accelerators.items() if not acc.training]
    # (applies: the spec sets the constraint, rule); the first failure wins
    rules: list[tuple[bool, StaticRule]] = [
        (bool(cons.clouds), StaticRule(
            kind.CLOUD, lambda t: ~t.cloud.isin(c.value for c in cons.clouds), lambda _t, _r: none)),
        (bool(cons.regions), StaticRule(
            kind.REGION, lambda t: ~t.region.isin(cons.regions), lambda _t, _r: none)),
        (bool(include), StaticRule(kind.ACCELERATOR_NOT_INCLUDED,
                                   lambda t: ~t.accelerator.isin(include), lambda _t, _r: none)),
        (bool(exclude), StaticRule(kind.ACCELERATOR_EXCLUDED,
                                   lambda t: t.accelerator.isin(exclude), lambda _t, _r: none)),
        (cons.spot is SpotPolicy.NEVER, StaticRule(
            kind.SPOT_NOT_ALLOWED, lambda t: t.market.equals(spot), lambda _t, _r: none)),
        (cons.spot is SpotPolicy.ONLY, StaticRule(
            kind.ON_DEMAND_LEFT_OUT, lambda t: t.market.equals(on_demand), lambda _t, _r: none)),
        (True, StaticRule(kind.INFERENCE_ONLY, lambda t: t.accelerator.isin(inference),
                          lambda _t, _r: none)),
        (max_count is not None, StaticRule(
            kind.TOO_MANY_ACCELERATORS, lambda t: t.accelerator_count > (max_count or 0),
            lambda _t, _r: {"max_accelerators": max_count or 0})),
        (True, StaticRule(kind.BATCH_TOO_SMALL, lambda t: spec.batch_size < t.accelerator_count,
                          lambda _t, _r: {"batch_size": spec.batch_size})),
        (not include_flagged, StaticRule(kind.PRICE_FLAGGED, lambda t: ~t.flagged.equals(""),
                                         lambda t, row: {"flag": t.flagged[row]})),
    ]
    applied = [rule for applies, rule in rules if applies]
    failed = np.full(len(offers), -1, dtype=np.int64)
    for i, rule in enumerate(applied):
        failed[(failed < 0) & rule.fails(offers)] = i
    return failed, applied


def filter_offers(
    spec: WorkloadSpec, offers: Sequence[InstanceOffer], accelerators: dict[str, AcceleratorSpec],
    *, include_flagged: bool = False,
) -> tuple[list[InstanceOffer], list[Rejection]]:
    """Split offers into candidates and rejections by the spec's static constraints
    (``static_failures``)."""
    offers = list(offers)
    table = OfferTable.of(offers)
    failed, rules = static_failures(spec, table, accelerators, include_flagged=include_flagged)
    kept, rejected = [], []
    for row, (offer, rule) in enumerate(zip(offers, failed.tolist(), strict=True)):
        if rule < 0:
            kept.append(offer)
        else:
            rejected.append(Rejection(offer, rules[rule].kind, rules[rule].figures(table, row)))
    return kept, rejected


def per_device_batch(batch_size: int, devices: int) -> int:
    """Samples each device holds per step when a global batch is split across ``devices``."""
    return math.ceil(batch_size / devices)


def samples_per_device(spec: WorkloadSpec, offer: InstanceOffer) -> int:
    """Samples each device holds per step when the global batch is split across the instance."""
    return per_device_batch(spec.batch_size, offer.accelerator_count)


@dataclass(frozen=True, slots=True)
class MeasuredMemory:
    """What probes on one accelerator measured about memory, per device: the largest batch
    seen to fit (with its peak GiB, when known) and the smallest seen to run out of memory."""

    accelerator: str
    fits_batch: int | None = None
    fits_peak_gib: float | None = None
    fails_batch: int | None = None
    probe_id: str = ""


@dataclass(frozen=True, slots=True)
class MemoryNeed:
    """What one device needs for the step: ``gib`` in all (``step_gib`` for the step's tensors,
    ``overhead_gib`` for the runtime), ``basis`` (``traced step``, ``measured by probe p1 at
    batch 64``, ...) and the ``rejection`` when it does not fit the offer (None when it fits)."""

    gib: float
    step_gib: float
    overhead_gib: float
    basis: str
    rejection: Rejection | None


def memory_need(spec: WorkloadSpec, profile: WorkloadProfile, offer: InstanceOffer,
                assumptions: CostAssumptions,
                measured: MeasuredMemory | None = None) -> MemoryNeed:
    """GiB needed per device on ``offer``, on what basis, and why it does not fit.

    A probe on the offer's accelerator decides where it measured: a batch at or above one
    that ran out of memory does not fit, one at or below a batch that ran fits. Its measured
    peak is the need, moved along the profile's line to this batch (above the measured batch
    too, where the fit is then checked). Elsewhere the profile's figure is the need (a traced
    step, ``profile.memory_gib`` or the estimated sum). The runtime's overhead for the offer's
    accelerator comes on top.
    """
    per_device = samples_per_device(spec, offer)
    step, basis = profile.memory_gib(per_device), profile.memory_basis.describe()
    probe = measured if measured is not None and measured.accelerator == offer.accelerator else None
    if probe is not None and probe.fails_batch is not None and per_device >= probe.fails_batch:
        overhead, _ = assumptions.memory_overhead(offer.accelerator, step)
        return MemoryNeed(
            step + overhead, step, overhead, f"probe {probe.probe_id} ran out of memory",
            Rejection(offer, RejectionKind.MEMORY_PROBE_OOM, {
                "memory_gib": offer.accelerator_memory_gib, "batch": per_device,
                "probe_id": probe.probe_id, "failed_batch": probe.fails_batch}))
    if probe is not None and probe.fits_batch is not None:
        if probe.fits_peak_gib is not None:
            step, basis = _moved_peak(profile, probe, per_device)
        elif per_device <= probe.fits_batch:
            basis = f"measured by probe {probe.probe_id}: batch {probe.fits_batch} ran"
        if per_device <= probe.fits_batch:  # it ran: it fits
            overhead, _ = assumptions.memory_overhead(offer.accelerator, step)
            return MemoryNeed(step + overhead, step, overhead, basis, None)
    overhead, runtime = assumptions.memory_overhead(offer.accelerator, step)
    needed = step + overhead
    if needed <= offer.accelerator_memory_gib:
        return MemoryNeed(needed, step, overhead, basis, None)
    short = round(needed, 1) - round(offer.accelerator_memory_gib, 1)  # as the text shows them
    return MemoryNeed(needed, step, overhead, basis, Rejection(offer, RejectionKind.MEMORY, {
        "needed_gib": needed, "batch": per_device, "basis": basis, "step_gib": step,
        "overhead_gib": overhead, "runtime": runtime, "memory_gib": offer.accelerator_memory_gib,
        "short_gib": max(short, 0.1)}))


def _moved_peak(profile: WorkloadProfile, probe: MeasuredMemory,
                per_device: int) -> tuple[float, str]:
    """A probe's measured peak moved along the profile's line to ``per_device`` samples, never
    below proportional scaling when smaller (the fixed part does not shrink), and its basis."""
    assert probe.fits_batch is not None and probe.fits_peak_gib is not None
    peak, batch = probe.fits_peak_gib, probe.fits_batch
    moved = peak + profile.memory_gib(per_device) - profile.memory_gib(batch)
    if per_device < batch:
        moved = max(moved, peak * per_device / batch)
    return moved, (f"measured by probe {probe.probe_id}: {peak:.1f} GiB at batch {batch}"
                   + ("" if per_device == batch else f", moved to batch {per_device}"))


def memory_rejection(spec: WorkloadSpec, profile: WorkloadProfile, offer: InstanceOffer,
                     assumptions: CostAssumptions,
                     measured: MeasuredMemory | None = None) -> tuple[float, Rejection | None]:
    """GiB needed per device, and the rejection when it does not fit (None when it fits); see
    ``memory_need``."""
    need = memory_need(spec, profile, offer, assumptions, measured)
    return need.gib, need.rejection


def samples_that_fit(profile: WorkloadProfile, offer: InstanceOffer,
                     assumptions: CostAssumptions, *, limit: int = 2**24) -> int:
    """The most samples per device whose step and runtime overhead fit ``offer``'s device
    memory by the profile's figure (0: not even one; at most ``limit``): the probes' batch
    search, run exactly over the memory model."""
    def try_batch(samples: int) -> tuple[bool, float]:
        step = profile.memory_gib(samples)
        need = step + assumptions.memory_overhead(offer.accelerator, step)[0]
        return need <= offer.accelerator_memory_gib, need

    found = search_largest_batch(try_batch, start=1, start_fits=try_batch(1)[0],
                                 limit_gib=offer.accelerator_memory_gib, max_batch=limit,
                                 exact=True)
    return found.largest_fit or 0


def run_figures(total_samples: int, price_usd_per_hour: Any, *, samples_per_second: Any,
                samples_per_second_low: Any, samples_per_second_high: Any, overhead: Any,
                overhead_low: Any, overhead_high: Any, startup_hours: float) -> dict[str, Any]:
    """Samples per dollar, run hours and run costs (point, cheap and dear end) of a run of
    ``total_samples``: floats for one offer, numpy arrays for many (the same formulas). The
    interruption overheads are fractions of the training time (0 off spot): the point at the
    point, the cheap end at the band's low end, the dear end at its pessimistic one."""
    def hours_at(samples_per_second: Any, overhead: Any) -> Any:
        return (total_samples / samples_per_second / _SECONDS_PER_HOUR * (1 + overhead)
                + startup_hours)

    def run_usd(hours: Any) -> Any:
        # pro-rata: a training run lasts hours, so the cloud's billing minimum never binds
        return usd_many(hours * _SECONDS_PER_HOUR, price_usd_per_hour)

    hours = hours_at(samples_per_second, overhead)
    return {
        "samples_per_dollar": samples_per_dollar_at(samples_per_second, price_usd_per_hour,
                                                    overhead),
        "run_hours": hours,
        "run_cost_usd": run_usd(hours),
        "run_cost_usd_low": run_usd(hours_at(samples_per_second_high, overhead_low)),
        "run_cost_usd_high": run_usd(hours_at(samples_per_second_low, overhead_high)),
    }


def cost_of(spec: WorkloadSpec, offer: InstanceOffer, throughput: ThroughputEstimate,
            assumptions: CostAssumptions, memory_gib: float | None = None) -> CostEstimate:
    """Samples per dollar, run hours and run cost of the whole job on one offer
    (``run_figures``); on spot, with the interruption overhead of its band."""
    # The interruption overhead is a fraction of the training time, whatever its length.
    training_hours = spec.total_samples / throughput.samples_per_second / _SECONDS_PER_HOUR
    spot = (spot_overhead(offer, training_hours, checkpoint_minutes=spec.checkpoint_minutes,
                          restart_hours=assumptions.startup_hours)
            if offer.market is Market.SPOT else None)
    return CostEstimate(
        offer=offer, throughput=throughput, memory_needed_gib_per_device=memory_gib, spot=spot,
        **run_figures(spec.total_samples, offer.price_usd_per_hour,
                      samples_per_second=throughput.samples_per_second,
                      samples_per_second_low=throughput.samples_per_second_low,
                      samples_per_second_high=throughput.samples_per_second_high,
                      overhead=spot.overhead_fraction if spot else 0.0,
                      overhead_low=spot.overhead_fraction_low if spot else 0.0,
                      overhead_high=spot.overhead_fraction_high if spot else 0.0,
                      startup_hours=assumptions.startup_hours))


def with_on_demand_twins(estimates: Sequence[CostEstimate]) -> list[CostEstimate]:
    """``estimates`` with each spot estimate's ``on_demand`` set to the on-demand estimate of
    the same instance (cloud, type, region) among them, where there is one."""
    on_demand = {(e.offer.cloud, e.offer.instance_type, e.offer.region): e for e in estimates
                 if e.offer.market is Market.ON_DEMAND}
    out = []
    for est in estimates:
        twin = (on_demand.get((est.offer.cloud, est.offer.instance_type, est.offer.region))
                if est.offer.market is Market.SPOT and est.on_demand is None else None)
        out.append(replace(est, on_demand=twin) if twin is not None else est)
    return out


def rank(spec: WorkloadSpec, estimates: Sequence[CostEstimate], *,
         rank_by: RankBy = RankBy.CONSERVATIVE) -> tuple[list[CostEstimate], list[Rejection]]:
    """Apply deadline and budget, then order by samples per dollar, best first: by the low
    end of its interval (``RankBy.CONSERVATIVE``: a guess ranks above evidence only when even
    its pessimistic end is better) or by the point estimate. Spot estimates get their
    on-demand twin (``with_on_demand_twins``)."""
    cons = spec.constraints
    ranked, rejected = [], []

    def band(est: CostEstimate) -> str:  # said only where an offer is rejected
        spot = est.spot
        return f" (spot, interruption band {spot.bucket_label} {spot.basis})" if spot else ""

    for est in with_on_demand_twins(estimates):
        if cons.deadline_hours is not None and est.run_hours > cons.deadline_hours:
            rejected.append(Rejection(est.offer, RejectionKind.DEADLINE, {
                "run_hours": est.run_hours, "deadline_hours": cons.deadline_hours,
                "spot": band(est)}))
        elif cons.budget_usd is not None and est.run_cost_usd > cons.budget_usd:
            rejected.append(Rejection(est.offer, RejectionKind.BUDGET, {
                "run_cost_usd": est.run_cost_usd, "budget_usd": cons.budget_usd,
                "spot": band(est)}))
        else:
            ranked.append(est)
    ranked.sort(key=lambda e: (-e.ranked_by(rank_by), -e.samples_per_dollar,
                               e.offer.sort_key))
    return ranked, rejected
