"""Money: how each cloud bills instance time, and the only functions that turn seconds and
hourly prices into dollars (and throughput into samples per dollar).

Every cost in the project goes through here: the ranking's run cost, a probe's quote and
charge, a sweep trial's and worker instance's charge, and the reports. A cloud bills an
instance from launch to termination in ``increment_s`` steps, at least ``minimum_s``
(``BILLING_RULES``, each with its source); ``billed_usd`` applies that rule, ``usd`` is the
plain pro-rata price of a duration (a run's cost, a trial's share of an instance).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pricing.errors import PricingError
from pricing.types import Cloud

__all__ = ["BILLING_RULES", "BillingRule", "billed_usd", "billing_rule", "samples_per_usd",
           "samples_per_usd_many", "seconds_for_usd", "usd", "usd_many"]

_SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
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

    def text(self) -> str:
        """The rule as tables write it: ``per second, 60 s minimum``."""
        step = "per second" if self.increment_s == 1 else f"per {self.increment_s:g} s"
        return f"{step}, {self.minimum_s:g} s minimum"


BILLING_RULES: Mapping[Cloud, BillingRule] = {
    Cloud.AWS: BillingRule(
        increment_s=1.0, minimum_s=60.0,
        source="EC2 Linux on-demand, reserved and spot instances: 'billed on one second "
               "increments, with a minimum of 60 seconds' (https://aws.amazon.com/about-aws/"
               "whats-new/2017/10/announcing-amazon-ec2-per-second-billing/)"),
    Cloud.GCP: BillingRule(
        increment_s=1.0, minimum_s=60.0,
        source="Compute Engine VMs, GPUs and TPU VMs: per-second billing with a one-minute "
               "minimum (https://cloud.google.com/blog/products/gcp/extending-per-second-"
               "billing-in-google-cloud, 2017-09-26); assumed for Cloud TPU as well"),
    Cloud.AZURE: BillingRule(
        increment_s=1.0, minimum_s=300.0,
        source="Azure virtual machines: billed per second, at least 300 s per start from "
               "2025-06-01 (Microsoft Q&A 2259765, 'Clarification on Azure VM Billing for Short "
               "Runtime', 2025-04-21)"),
}


def billing_rule(cloud: Cloud | str) -> BillingRule:
    """The billing rule of ``cloud``; PricingError naming the known clouds otherwise."""
    for known, rule in BILLING_RULES.items():
        if cloud == known or cloud == known.value:
            return rule
    raise PricingError(f"no billing rule for cloud {str(cloud)!r} (known: "
                       f"{', '.join(c.value for c in BILLING_RULES)})")


def usd(seconds: float, price_usd_per_hour: float, share: int = 1) -> float:
    """Dollars for ``seconds`` at ``price_usd_per_hour``, split among ``share`` users of the
    instance (concurrent sweep trials): the pro-rata price, no billing rule applied."""
    if seconds < 0 or price_usd_per_hour < 0 or share < 1:
        raise ValueError(f"bad cost inputs: seconds={seconds}, price={price_usd_per_hour}, "
                         f"share={share}")
    return float(usd_many(seconds, price_usd_per_hour) / share)


def usd_many(seconds: Any, price_usd_per_hour: Any) -> Any:
    """``usd`` for numpy arrays (or floats) of checked figures: the same formula, no checks."""
    return seconds / _SECONDS_PER_HOUR * price_usd_per_hour


def billed_usd(cloud: Cloud | str, run_s: float, price_usd_per_hour: float) -> float:
    """Dollars ``cloud`` bills for an instance that ran ``run_s`` seconds (its minimum and
    increment applied)."""
    return usd(billing_rule(cloud).billed_s(run_s), price_usd_per_hour)


def seconds_for_usd(dollars: float, price_usd_per_hour: float) -> float:
    """Seconds that ``dollars`` buy at ``price_usd_per_hour`` (infinite at a price of 0)."""
    if price_usd_per_hour <= 0:
        return math.inf
    return dollars / price_usd_per_hour * _SECONDS_PER_HOUR


def samples_per_usd(samples_per_second: float, price_usd_per_hour: float) -> float:
    """Samples one dollar buys at ``samples_per_second`` on an instance of that price."""
    if price_usd_per_hour <= 0:
        return math.inf
    return float(samples_per_usd_many(samples_per_second, price_usd_per_hour))


def samples_per_usd_many(samples_per_second: Any, price_usd_per_hour: Any) -> Any:
    """``samples_per_usd`` for numpy arrays (or floats) of checked figures (prices above 0):
    the same formula, no checks."""
    return samples_per_second * _SECONDS_PER_HOUR / price_usd_per_hour
