"""Consistency checks run on every snapshot: doubtful prices are kept but flagged.

Each check returns typed ``PriceFlag`` records (the rule and the figures it compared);
``apply_checks`` renders them into ``InstanceOffer.flagged`` (joined by ``"; "``) and never
removes a row or clears an earlier flag. Checks:

- ``below-list-cluster``: on demand, a SKU (cloud, instance type) with prices in at least
  ``MIN_REGIONS`` regions whose sorted prices have a gap of more than ``RATIO_LIMIT`` (1.6x)
  between neighbours: the regions above the largest such gap are the list-price cluster, and a
  price under the gap is flagged with its ratio to that cluster's median. Cloud list prices
  differ by region (AWS Tokyo is about 1.45x Virginia), but a list price is not under such a
  gap from every other region: those are committed-use or other non-list prices. A cheaper
  region without such a gap is not flagged, and the verdict depends only on the price, so
  offers at the same price for the same SKU get the same verdict.
- ``spot-not-cheaper``: a spot price at or above the same region's on-demand price (the cloud
  has no usable spot market there). It compares with that region's on-demand price, which it
  names.
- ``placeholder-price`` / ``near-zero-price``: a placeholder (700.0 USD/h on GCP TPUs,
  99999...) or a price under ``MIN_USD_PER_DEVICE_HOUR`` per device-hour.

Spot prices are market prices that differ by region and day, so they are never compared
across regions.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pricing.flags import FLAG_SEPARATOR, FlagRule, PriceFlag, render_flag
from pricing.types import InstanceOffer, Market

__all__ = [
    "MIN_CLUSTER_REGIONS",
    "MIN_REGIONS",
    "MIN_USD_PER_DEVICE_HOUR",
    "RATIO_LIMIT",
    "SENTINEL_PRICES_USD_PER_HOUR",
    "apply_checks",
    "flag_reasons",
    "list_cluster",
    "price_flags",
]

RATIO_LIMIT = 1.6
MIN_REGIONS = 3  # with two regions a gap says one is off, not which
MIN_CLUSTER_REGIONS = 2  # one region far above all others is that region's oddity, not a list
SENTINEL_PRICES_USD_PER_HOUR = frozenset({700.0, 9999.0, 99999.0, 999999.0})
MIN_USD_PER_DEVICE_HOUR = 0.01

_Sku = tuple[str, str]  # (cloud, instance_type)
_Row = tuple[str, str, str, str | None, str]  # (cloud, instance_type, region, zone, market)


def _row(offer: InstanceOffer) -> _Row:
    return (offer.cloud.value, offer.instance_type, offer.region, offer.zone, offer.market.value)


def list_cluster(prices: Sequence[float]) -> tuple[float, int, float] | None:
    """``(median, regions, floor)`` of the list-price cluster, or None.

    The cluster is every price above the largest gap between sorted neighbours when that gap
    is over ``RATIO_LIMIT``, there are ``MIN_REGIONS`` prices and the cluster has
    ``MIN_CLUSTER_REGIONS``; ``floor`` is its lowest price.
    """
    ordered = sorted(prices)
    if len(ordered) < MIN_REGIONS:
        return None
    ratio, start = max((ordered[i + 1] / ordered[i], i + 1) for i in range(len(ordered) - 1))
    if ratio <= RATIO_LIMIT:
        return None
    cluster = ordered[start:]
    if len(cluster) < MIN_CLUSTER_REGIONS:
        return None
    return statistics.median(cluster), len(cluster), cluster[0]


def _cross_region(offers: Sequence[InstanceOffer]) -> dict[_Row, PriceFlag]:
    groups: dict[_Sku, list[InstanceOffer]] = defaultdict(list)
    for offer in offers:
        if offer.zone is None and offer.market is Market.ON_DEMAND:
            groups[(offer.cloud.value, offer.instance_type)].append(offer)
    flags: dict[_Row, PriceFlag] = {}
    for members in groups.values():
        cluster = list_cluster([o.price_usd_per_hour for o in members])
        if cluster is None:
            continue
        median, regions, floor = cluster
        for offer in members:
            if offer.price_usd_per_hour < floor:
                flags[_row(offer)] = PriceFlag(FlagRule.BELOW_LIST_CLUSTER,
                                               offer.price_usd_per_hour, median, regions)
    return flags


def _spot_not_cheaper(offers: Sequence[InstanceOffer]) -> dict[_Row, PriceFlag]:
    on_demand = {
        (o.cloud, o.instance_type, o.region): o.price_usd_per_hour
        for o in offers if o.market is Market.ON_DEMAND and o.zone is None
    }
    flags: dict[_Row, PriceFlag] = {}
    for offer in offers:
        if offer.market is not Market.SPOT:
            continue
        reference = on_demand.get((offer.cloud, offer.instance_type, offer.region))
        if reference is not None and offer.price_usd_per_hour >= reference:
            flags[_row(offer)] = PriceFlag(FlagRule.SPOT_NOT_CHEAPER, offer.price_usd_per_hour,
                                           reference)
    return flags


def _sentinel(offers: Sequence[InstanceOffer]) -> dict[_Row, PriceFlag]:
    flags: dict[_Row, PriceFlag] = {}
    for offer in offers:
        price = offer.price_usd_per_hour
        if price in SENTINEL_PRICES_USD_PER_HOUR:
            flags[_row(offer)] = PriceFlag(FlagRule.PLACEHOLDER_PRICE, price)
        elif offer.price_usd_per_accelerator_hour < MIN_USD_PER_DEVICE_HOUR:
            floor = MIN_USD_PER_DEVICE_HOUR * offer.accelerator_count
            flags[_row(offer)] = PriceFlag(FlagRule.NEAR_ZERO_PRICE, price, floor)
    return flags


def price_flags(offers: Iterable[InstanceOffer]) -> dict[_Row, tuple[PriceFlag, ...]]:
    """Every check's flags, by (cloud, instance_type, region, zone, market)."""
    rows = list(offers)
    found: dict[_Row, list[PriceFlag]] = defaultdict(list)
    # placeholders first, so they do not distort the cross-region clusters
    sentinels = _sentinel(rows)
    sound = [o for o in rows if _row(o) not in sentinels]
    for check in (sentinels, _cross_region(sound), _spot_not_cheaper(sound)):
        for key, flag in check.items():
            found[key].append(flag)
    return {key: tuple(flags) for key, flags in found.items()}


def flag_reasons(offers: Iterable[InstanceOffer]) -> dict[_Row, list[str]]:
    """Every check's flags rendered, by (cloud, instance_type, region, zone, market)."""
    return {key: [render_flag(f) for f in flags] for key, flags in price_flags(offers).items()}


def apply_checks(offers: Iterable[InstanceOffer]) -> list[InstanceOffer]:
    """The same offers, in the same order, with each check's rendered flag added to ``flagged``."""
    rows = list(offers)
    reasons = flag_reasons(rows)
    checked = []
    for offer in rows:
        new = [r for r in reasons.get(_row(offer), []) if r not in offer.flagged]
        if new:
            offer = replace(offer, flagged=FLAG_SEPARATOR.join(filter(None, [offer.flagged, *new])))
        checked.append(offer)
    return checked
