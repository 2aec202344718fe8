"""The instances a sweep pays for: the one its trials are charged at, and its launched workers.

``resolve_instance`` gives the instance named in sweep.yaml (``local``, ``recommended`` or an
offer key) and the hourly price every trial is charged at.

A cloud bills an instance from launch to termination, not only while a trial runs: boot,
package install, idle time between trials and shut-down are paid too. So a worker's spend is
the larger of the charges of the trials it ran and its billed instance time, and the
difference, the *instance overhead*, is charged beside the trials (``overhead_usd``). An
instance still running accrues until it is terminated. How a cloud rounds instance time is
``pricing.billing`` (its ``BILLING_RULES``, each with its source), for the clouds sweep
workers are launched on (``SWEEP_CLOUDS``).

The worker records are stored on the study (``advisor.sweep.accounting.records``) by the
launcher (``advisor.sweep.run.launch``) and read by the ledger.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from advisor.errors import AdvisorError, NoFeasibleOffer
from advisor.sweep.spec.sweep_spec import SweepSpec
from pricing import (
    Catalog,
    InstanceOffer,
    OfferKeyError,
    PricingError,
    find_catalog_offer,
    parse_offer_key,
    shipped_catalog,
)
from pricing.billing import BillingRule, billing_rule, usd
from pricing.records import Record
from pricing.types import Cloud

__all__ = ["SWEEP_CLOUDS", "InstanceChoice", "WorkerInstance", "find_offer", "overhead_usd",
           "resolve_instance", "transition_time_s"]

SWEEP_CLOUDS = (Cloud.AWS,)  # the clouds sweep workers are launched on (advisor.sweep.run.launch)


@dataclass(frozen=True)
class WorkerInstance(Record):
    """One launched worker: its instance, offer and price, and when it ran (Unix seconds).

    ``ended_at_s`` is None while the instance runs (it accrues until ``now_s``). Stored on
    the study as its fields' plain values (a ``Record``).
    """

    _error = AdvisorError

    worker_id: str
    instance_id: str
    offer_key: str
    price_usd_per_hour: float
    launched_at_s: float
    ended_at_s: float | None = None

    def __post_init__(self) -> None:
        if not math.isfinite(self.price_usd_per_hour) or self.price_usd_per_hour < 0:
            raise AdvisorError(f"worker instance {self.instance_id}: price_usd_per_hour must "
                               f"be >= 0, got {self.price_usd_per_hour}")
        if self.ended_at_s is not None and self.ended_at_s < self.launched_at_s:
            raise AdvisorError(f"worker instance {self.instance_id}: ended_at_s "
                               f"{self.ended_at_s} is before launched_at_s {self.launched_at_s}")

    @property
    def rule(self) -> BillingRule:
        """The billing rule of the instance's cloud."""
        cloud = self.offer_key.split(":")[0]
        if cloud not in {c.value for c in SWEEP_CLOUDS}:
            raise AdvisorError(f"worker instance {self.instance_id}: no billing rule for cloud "
                               f"{cloud!r} (known: {', '.join(c.value for c in SWEEP_CLOUDS)})")
        return billing_rule(cloud)

    def billed_s(self, now_s: float) -> float:
        """Seconds the cloud bills from launch to termination (or ``now_s`` while running)."""
        end = now_s if self.ended_at_s is None else self.ended_at_s
        return self.rule.billed_s(end - self.launched_at_s)

    def billed_usd(self, now_s: float) -> float:
        """Dollars the cloud bills for the instance so far."""
        return usd(self.billed_s(now_s), self.price_usd_per_hour)


def overhead_usd(instances: Iterable[WorkerInstance], trial_usd_by_worker: Mapping[str, float],
                 *, now_s: float) -> float:
    """Instance time billed beyond the trials, summed over workers: for each, its billed
    dollars less the charges of the trials it ran (running ones at what they cost so far),
    never below zero. Added to the trial charges it makes each worker's spend
    ``max(trial charges, billed instance time)``."""
    return sum(max(i.billed_usd(now_s) - trial_usd_by_worker.get(i.worker_id, 0.0), 0.0)
               for i in instances)


_TRANSITION = re.compile(r"\((\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?:GMT|UTC)\)")


def transition_time_s(reason: str) -> float | None:
    """The time in an EC2 ``StateTransitionReason`` such as ``User initiated (2025-05-01
    12:00:00 GMT)``, in Unix seconds; None when it names none."""
    found = _TRANSITION.search(reason or "")
    if found is None:
        return None
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class InstanceChoice:
    """The instance trials run on and its price; ``offer`` is None for ``local``."""

    label: str
    price_usd_per_hour: float
    offer: InstanceOffer | None = None

    @property
    def prices_captured_at(self) -> str | None:
        """ISO date the catalog observed the price (None for ``local``, priced by the user)."""
        return self.offer.observed_at.isoformat() if self.offer is not None else None


def _catalog() -> Catalog:
    """The newest refreshed snapshot per cloud, else the shipped catalog."""
    try:
        from advisor.ranking import current_catalog
    except ImportError:  # pragma: no cover - the service module lands with recommend
        return shipped_catalog()
    return current_catalog()


def find_offer(key: str, catalog: Catalog | None = None) -> InstanceOffer:
    """The catalog offer a key names (``aws:g5.xlarge:us-east-1:spot``; no market means
    on-demand, as everywhere). AdvisorError names ``instance`` and the nearest keys."""
    catalog = catalog or _catalog()
    try:
        return find_catalog_offer(parse_offer_key(key, field="instance"), catalog.offers,
                                  field="instance")
    except OfferKeyError as exc:
        raise AdvisorError(str(exc)) from exc


def _recommended(spec: SweepSpec) -> InstanceOffer:
    assert spec.model is not None
    path = Path(spec.model)
    if not path.is_absolute() and spec.source_dir:
        path = Path(spec.source_dir) / path
    if not path.is_file():  # named as the sweep.yaml field, not as a bare file
        raise AdvisorError(f"model: {spec.model!r} is not a file (looked for {path}); give the "
                           "path of the model.yaml whose ranking picks the instance, relative "
                           "to the sweep.yaml's folder")
    from advisor.ranking import recommend_for_file

    rec = recommend_for_file(path)
    if not rec.ranked:
        raise NoFeasibleOffer(f"instance: recommended, but the ranking for {path} is empty; "
                              "loosen its constraints or give an offer key",
                              workload=rec.workload, rejected=len(rec.rejected))
    return rec.pick().offer


def resolve_instance(spec: SweepSpec) -> InstanceChoice:
    """The instance and hourly price trials are charged at (raises AdvisorError)."""
    if spec.instance == "local":
        return InstanceChoice("local", spec.price_usd_per_hour)
    try:
        offer = _recommended(spec) if spec.instance == "recommended" else find_offer(spec.instance)
    except PricingError as exc:
        raise AdvisorError(f"instance: {exc}") from exc
    return InstanceChoice(offer.key, offer.price_usd_per_hour, offer)
