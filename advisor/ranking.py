"""Ranking: costs, constraints and the order of offers by samples per dollar (pure)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from advisor.profile import WorkloadProfile
from advisor.spec import SpotPolicy, WorkloadSpec
from advisor.throughput import ThroughputEstimate
from pricing import AcceleratorSpec, Catalog, InstanceOffer, Market, matching_accelerators

__all__ = [
    "CostAssumptions",
    "CostEstimate",
    "MeasuredMemory",
    "Recommendation",
    "Rejection",
    "check_constraint_names",
    "cost_of",
    "filter_offers",
    "memory_rejection",
    "rank",
]


@dataclass(frozen=True, slots=True)
class CostAssumptions:
    """Fixed overheads added to every run (stated under every ranking)."""

    startup_hours: float = 0.25
    spot_overhead_fraction: float = 0.10
    runtime_memory_overhead_gib: float = 1.0

    def describe(self) -> list[str]:
        """One sentence per assumption."""
        return [
            f"start-up (provisioning, image, data staging): {self.startup_hours:g} h per run",
            f"spot: +{self.spot_overhead_fraction:.0%} run time for interruptions and restarts "
            "from checkpoints",
            f"memory: weights + gradients + Adam state (fp32) + activations, plus "
            f"{self.runtime_memory_overhead_gib:g} GiB runtime overhead per device",
        ]


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """One feasible offer: how fast, how much per sample, and the whole run's time and cost."""

    offer: InstanceOffer
    throughput: ThroughputEstimate
    samples_per_dollar: float
    run_hours: float
    run_cost_usd: float
    memory_needed_gib_per_device: float | None


@dataclass(frozen=True, slots=True)
class Rejection:
    """An offer left out, and why."""

    offer: InstanceOffer
    reason: str


@dataclass(frozen=True)
class Recommendation:
    """A ranked answer for one workload: best samples per dollar first."""

    workload: str
    prices_captured_at: date
    ranked: tuple[CostEstimate, ...]
    rejected: tuple[Rejection, ...]
    assumptions: tuple[str, ...] = ()
    advice: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    extra: dict[str, object] = field(default_factory=dict)


def _accelerator_set(names: Sequence[str], accelerators: dict[str, AcceleratorSpec],
                     key: str) -> set[str]:
    """Every accelerator the names stand for (``A100`` is all its variants); UnknownNameError
    names ``constraints.accelerators.<key>``."""
    field_name = f"constraints.accelerators.{key}"
    return {match for name in names
            for match in matching_accelerators(name, accelerators, field=field_name)}


def check_constraint_names(spec: WorkloadSpec, catalog: Catalog) -> None:
    """Raise UnknownNameError naming the constraints field of any region or accelerator the
    catalog does not know, with close matches (call before ranking)."""
    cons = spec.constraints
    catalog.check_regions(cons.regions, field="constraints.regions")
    _accelerator_set(cons.accelerators_include, catalog.accelerators, "include")
    _accelerator_set(cons.accelerators_exclude, catalog.accelerators, "exclude")


def filter_offers(
    spec: WorkloadSpec, offers: Sequence[InstanceOffer], accelerators: dict[str, AcceleratorSpec],
    *, include_flagged: bool = False,
) -> tuple[list[InstanceOffer], list[Rejection]]:
    """Split offers into candidates and rejections by the spec's static constraints.

    An accelerator family in the constraints (``A100``, ``H100``) covers all its variants; an
    exact name (``H100-SXM``) just itself. Offers whose price a consistency check doubts are
    rejected unless ``include_flagged``.
    """
    cons = spec.constraints
    include = _accelerator_set(cons.accelerators_include, accelerators, "include")
    exclude = _accelerator_set(cons.accelerators_exclude, accelerators, "exclude")
    checks: list[tuple[Callable[[InstanceOffer], bool], Callable[[InstanceOffer], str]]] = [
        (lambda o: bool(cons.clouds) and o.cloud not in cons.clouds,
         lambda o: f"cloud {o.cloud} not in constraints.clouds"),
        (lambda o: bool(cons.regions) and o.region not in cons.regions,
         lambda o: f"region {o.region} not in constraints.regions"),
        (lambda o: bool(include) and o.accelerator not in include,
         lambda o: f"{o.accelerator} not in constraints.accelerators.include"),
        (lambda o: o.accelerator in exclude,
         lambda o: f"{o.accelerator} in constraints.accelerators.exclude"),
        (lambda o: cons.spot is SpotPolicy.NEVER and o.market is Market.SPOT,
         lambda _: "spot not allowed (constraints.spot: never)"),
        (lambda o: cons.spot is SpotPolicy.ONLY and o.market is Market.ON_DEMAND,
         lambda _: "on-demand left out (constraints.spot: only)"),
        (lambda o: not accelerators[o.accelerator].training,
         lambda o: f"{o.accelerator} is an inference accelerator, not for training"),
        (lambda o: cons.max_accelerators is not None and o.accelerator_count > cons.max_accelerators,
         lambda o: f"{o.accelerator_count} accelerators > constraints.max_accelerators "
                   f"{cons.max_accelerators}"),
        (lambda o: spec.batch_size < o.accelerator_count,
         lambda o: f"batch_size {spec.batch_size} < {o.accelerator_count} accelerators "
                   "(data parallel needs a sample per device)"),
        (lambda o: bool(o.flagged) and not include_flagged,
         lambda o: f"price flagged: {o.flagged} (--include-flagged ranks it)"),
    ]
    kept, rejected = [], []
    for offer in offers:
        reason = next((why(offer) for failed, why in checks if failed(offer)), None)
        if reason is None:
            kept.append(offer)
        else:
            rejected.append(Rejection(offer, reason))
    return kept, rejected


def samples_per_device(spec: WorkloadSpec, offer: InstanceOffer) -> int:
    """Samples each device holds per step when the global batch is split across the instance."""
    return math.ceil(spec.batch_size / offer.accelerator_count)


@dataclass(frozen=True, slots=True)
class MeasuredMemory:
    """What probes on one accelerator measured about memory, per device: the largest batch
    seen to fit (with its peak GiB, when known) and the smallest seen to run out of memory."""

    accelerator: str
    fits_batch: int | None = None
    fits_peak_gib: float | None = None
    fails_batch: int | None = None
    probe_id: str = ""


def memory_rejection(spec: WorkloadSpec, profile: WorkloadProfile, offer: InstanceOffer,
                     assumptions: CostAssumptions,
                     measured: MeasuredMemory | None = None) -> tuple[float, str | None]:
    """GiB needed per device, and the reason it does not fit (None when it fits).

    A probe on the offer's accelerator decides where it measured: a batch at or above one
    that ran out of memory does not fit, one at or below a batch that ran fits (its GiB the
    measured peak, moved along the profile's slope). Elsewhere the profile's estimate does.
    """
    per_device = samples_per_device(spec, offer)
    needed = profile.memory_gib(per_device) + assumptions.runtime_memory_overhead_gib
    if measured is not None and measured.accelerator == offer.accelerator:
        if measured.fails_batch is not None and per_device >= measured.fails_batch:
            return needed, (f"needs more than {offer.accelerator_memory_gib:.1f} GiB per device "
                            f"at batch {per_device}: probe {measured.probe_id} ran out of "
                            f"memory at batch {measured.fails_batch} on {offer.accelerator}")
        if measured.fits_batch is not None and per_device <= measured.fits_batch:
            if measured.fits_peak_gib is not None:
                # Along the profile's slope, but never below proportional scaling (the
                # fixed part of the memory does not shrink with the batch).
                peak = measured.fits_peak_gib
                moved = peak + profile.memory_gib(per_device) - profile.memory_gib(measured.fits_batch)
                needed = (max(moved, peak * per_device / measured.fits_batch)
                          + assumptions.runtime_memory_overhead_gib)
            return needed, None
    if needed <= offer.accelerator_memory_gib:
        return needed, None
    return needed, (f"needs {needed:.1f} GiB per device at batch {per_device}, "
                    f"{offer.accelerator} has {offer.accelerator_memory_gib:.1f} GiB")


def cost_of(spec: WorkloadSpec, offer: InstanceOffer, throughput: ThroughputEstimate,
            assumptions: CostAssumptions, memory_gib: float | None = None) -> CostEstimate:
    """Samples per dollar, run hours and run cost of the whole job on one offer."""
    hours = spec.total_samples / throughput.samples_per_second / 3600
    if offer.market is Market.SPOT:
        hours *= 1 + assumptions.spot_overhead_fraction
    hours += assumptions.startup_hours
    return CostEstimate(
        offer=offer,
        throughput=throughput,
        samples_per_dollar=throughput.samples_per_second * 3600 / offer.price_usd_per_hour,
        run_hours=hours,
        run_cost_usd=hours * offer.price_usd_per_hour,
        memory_needed_gib_per_device=memory_gib,
    )


def rank(spec: WorkloadSpec, estimates: Sequence[CostEstimate]) -> tuple[list[CostEstimate], list[Rejection]]:
    """Apply deadline and budget, then order by samples per dollar (best first)."""
    cons = spec.constraints
    ranked, rejected = [], []
    for est in estimates:
        if cons.deadline_hours is not None and est.run_hours > cons.deadline_hours:
            rejected.append(Rejection(est.offer, f"run takes {est.run_hours:,.1f} h > "
                                      f"constraints.deadline_hours {cons.deadline_hours:g}"))
        elif cons.budget_usd is not None and est.run_cost_usd > cons.budget_usd:
            rejected.append(Rejection(est.offer, f"run costs ${est.run_cost_usd:,.2f} > "
                                      f"constraints.budget_usd {cons.budget_usd:,g}"))
        else:
            ranked.append(est)
    ranked.sort(key=lambda e: (-e.samples_per_dollar, e.offer.key))
    return ranked, rejected
