"""One feasible offer's cost: how fast, how much per sample, the whole run's time and cost,
and which of its figures orders a ranking."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.ranking.policy import RankBy
from advisor.ranking.spot_risk import SpotOverhead
from advisor.throughput import ThroughputEstimate
from pricing import InstanceOffer, Market
from pricing.billing import samples_per_usd_many

__all__ = ["CONSERVATIVE_QUANTILE", "CostEstimate", "RankBy", "samples_per_dollar_at"]


# The throughput model's intervals cover 90%: their low end is the 5% quantile.
CONSERVATIVE_QUANTILE = 0.05


def samples_per_dollar_at(samples_per_second: Any, price_usd_per_hour: Any,
                          overhead: Any) -> Any:
    """Samples one dollar buys at ``samples_per_second`` when interruptions add ``overhead``
    (a fraction of the run; 0 off spot): floats for one offer, numpy arrays for many."""
    return samples_per_usd_many(samples_per_second, price_usd_per_hour) / (1 + overhead)


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """One feasible offer: how fast, how much per sample, and the whole run's time and cost.

    ``run_cost_usd_low`` / ``_high`` are the run's cost at the high / low end of the
    throughput interval (faster is cheaper) and, on spot, at the low / pessimistic end of the
    interruption overhead (``spot``). Samples per dollar count the run time lost to
    interruptions the same way: the point at the point overhead, the low end (which the
    ranking orders by) at the pessimistic one. ``on_demand`` is, for a spot offer, the same
    instance (cloud, type, region) on demand, costed with the same throughput, where the
    ranking had it (``rank`` fills it in); None otherwise."""

    offer: InstanceOffer
    throughput: ThroughputEstimate
    samples_per_dollar: float
    run_hours: float
    run_cost_usd: float
    memory_needed_gib_per_device: float | None
    run_cost_usd_low: float
    run_cost_usd_high: float
    spot: SpotOverhead | None = None
    on_demand: CostEstimate | None = None

    @property
    def samples_per_dollar_low(self) -> float:
        """Samples per dollar at the low end of the throughput interval and, on spot, the
        pessimistic interruption overhead (the conservative figure: its
        ``CONSERVATIVE_QUANTILE``)."""
        return float(samples_per_dollar_at(
            self.throughput.samples_per_second_low, self.offer.price_usd_per_hour,
            self.spot.overhead_fraction_high if self.spot else 0.0))

    @property
    def samples_per_dollar_high(self) -> float:
        """Samples per dollar at the high end of the throughput interval and, on spot, the
        band's low overhead (the optimistic one)."""
        return float(samples_per_dollar_at(
            self.throughput.samples_per_second_high, self.offer.price_usd_per_hour,
            self.spot.overhead_fraction_low if self.spot else 0.0))

    @property
    def run_hours_low(self) -> float:
        """The run's hours at its fast end: the run that costs ``run_cost_usd_low``."""
        return self.run_cost_usd_low / self.offer.price_usd_per_hour

    @property
    def run_hours_high(self) -> float:
        """The run's hours at its slow end: the run that costs ``run_cost_usd_high`` (infinite
        where that run would never finish)."""
        return self.run_cost_usd_high / self.offer.price_usd_per_hour

    @property
    def on_demand_price_usd_per_hour(self) -> float | None:
        """The on-demand price of this instance: its own on demand, its ``on_demand`` twin's on
        spot (None when the ranking had no on-demand offer of it)."""
        if self.offer.market is Market.ON_DEMAND:
            return self.offer.price_usd_per_hour
        return self.on_demand.offer.price_usd_per_hour if self.on_demand is not None else None

    def ranked_by(self, rank_by: RankBy) -> float:
        """The samples per dollar ``rank_by`` orders offers by."""
        return self.samples_per_dollar_low if rank_by is RankBy.CONSERVATIVE else self.samples_per_dollar
