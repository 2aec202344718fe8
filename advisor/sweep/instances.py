"""Cloud worker instances of a launched sweep and the instance time their cloud bills.

A cloud bills an instance from launch to termination, not only while a trial runs: boot,
package install, idle time between trials and shut-down are paid too. So a worker's spend is
the larger of the charges of the trials it ran and its billed instance time, and the
difference, the *instance overhead*, is charged beside the trials (``overhead_usd``). An
instance still running accrues until it is terminated. How a cloud rounds instance time is
data (``BILLING_RULES``) with its source.

Pure values and arithmetic; the records are stored on the study by
``advisor.sweep.ledger`` and written by the launcher (``advisor.sweep.launch``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from advisor.errors import AdvisorError
from pricing.types import Cloud

__all__ = ["BILLING_RULES", "BillingRule", "WorkerInstance", "overhead_usd",
           "transition_time_s"]


@dataclass(frozen=True)
class BillingRule:
    """How a cloud bills instance time: in ``increment_s`` steps, at least ``minimum_s``."""

    increment_s: float
    minimum_s: float
    source: str

    def billed_s(self, run_s: float) -> float:
        """Billed seconds for an instance that ran ``run_s`` seconds (launched: at least the
        minimum, then rounded up to the increment)."""
        steps = math.ceil(max(run_s, 0.0) / self.increment_s - 1e-9)
        return max(steps * self.increment_s, self.minimum_s)


BILLING_RULES: Mapping[Cloud, BillingRule] = {
    Cloud.AWS: BillingRule(
        increment_s=1.0, minimum_s=60.0,
        source="Linux on-demand, reserved and spot instances: 'billed on one second "
               "increments, with a minimum of 60 seconds' (https://aws.amazon.com/about-aws/"
               "whats-new/2017/10/announcing-amazon-ec2-per-second-billing/); counted from "
               "LaunchTime (pending, not yet billed: an over-count of seconds) to termination"),
}


@dataclass(frozen=True)
class WorkerInstance:
    """One launched worker: its instance, offer and price, and when it ran (Unix seconds).

    ``ended_at_s`` is None while the instance runs (it accrues until ``now_s``).
    """

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
        rule = next((r for c, r in BILLING_RULES.items() if c.value == cloud), None)
        if rule is None:
            raise AdvisorError(f"worker instance {self.instance_id}: no billing rule for cloud "
                               f"{cloud!r} (known: {', '.join(c.value for c in BILLING_RULES)})")
        return rule

    def billed_s(self, now_s: float) -> float:
        """Seconds the cloud bills from launch to termination (or ``now_s`` while running)."""
        end = now_s if self.ended_at_s is None else self.ended_at_s
        return self.rule.billed_s(end - self.launched_at_s)

    def billed_usd(self, now_s: float) -> float:
        """Dollars the cloud bills for the instance so far."""
        return self.billed_s(now_s) / 3600.0 * self.price_usd_per_hour

    def to_json(self) -> dict[str, Any]:
        """Plain values, as stored on the study."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> WorkerInstance:
        """The record ``to_json`` wrote."""
        ended = data.get("ended_at_s")
        return cls(worker_id=str(data["worker_id"]), instance_id=str(data["instance_id"]),
                   offer_key=str(data["offer_key"]),
                   price_usd_per_hour=float(data["price_usd_per_hour"]),
                   launched_at_s=float(data["launched_at_s"]),
                   ended_at_s=None if ended is None else float(ended))


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
