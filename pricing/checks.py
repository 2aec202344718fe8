"""Consistency checks run on every snapshot: doubtful prices are kept but flagged.

A flag is a short reason in ``InstanceOffer.flagged``; flags add up (joined by ``"; "``) and
no check ever removes a row or clears an earlier flag. Checks:

- ``cross-region``: the same SKU (cloud, instance type) on demand priced more than
  ``RATIO_LIMIT`` (1.6x) away from its list-price cluster across regions. As in the shipped
  data: sort the SKU's regional prices, and if the largest gap between neighbours is over
  1.6x, the prices above the gap are the list-price cluster; the reference is the median of
  that cluster. Spot prices are market prices that differ by region and day, so they are
  checked against on-demand instead.
- ``spot-above-on-demand``: a spot price at or above the on-demand price of the same offer
  (the cloud has no usable spot market there).
- ``sentinel``: a placeholder price (700.0 USD/h on GCP TPUs, 99999...) or one so low it is
  a zero in disguise (under ``MIN_USD_PER_DEVICE_HOUR`` per device-hour).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from pricing.types import InstanceOffer, Market

__all__ = [
    "MIN_USD_PER_DEVICE_HOUR",
    "RATIO_LIMIT",
    "SENTINEL_PRICES_USD_PER_HOUR",
    "apply_checks",
    "flag_reasons",
]

RATIO_LIMIT = 1.6
SENTINEL_PRICES_USD_PER_HOUR = frozenset({700.0, 9999.0, 99999.0, 999999.0})
MIN_USD_PER_DEVICE_HOUR = 0.01

_Sku = tuple[str, str, str]  # (cloud, instance_type, market)
_Row = tuple[str, str, str, str | None, str]  # (cloud, instance_type, region, zone, market)


def _row(offer: InstanceOffer) -> _Row:
    return (offer.cloud.value, offer.instance_type, offer.region, offer.zone, offer.market.value)


def _reference(prices: Sequence[float]) -> float:
    """Median of the list-price cluster (the prices above the largest >1.6x gap, if any)."""
    ordered = sorted(prices)
    ratios = [(ordered[i + 1] / ordered[i], i + 1) for i in range(len(ordered) - 1)]
    cluster = ordered
    if ratios:
        ratio, start = max(ratios)
        if ratio > RATIO_LIMIT:
            cluster = ordered[start:]
    return statistics.median(cluster)


def _cross_region(offers: Sequence[InstanceOffer]) -> dict[_Row, str]:
    groups: dict[_Sku, list[InstanceOffer]] = defaultdict(list)
    for offer in offers:
        if offer.zone is None and offer.market is Market.ON_DEMAND:
            groups[(offer.cloud.value, offer.instance_type, offer.market.value)].append(offer)
    reasons: dict[_Row, str] = {}
    for members in groups.values():
        if len(members) < 2:
            continue
        reference = _reference([o.price_usd_per_hour for o in members])
        for offer in members:
            ratio = max(offer.price_usd_per_hour / reference, reference / offer.price_usd_per_hour)
            if ratio > RATIO_LIMIT:
                reasons[_row(offer)] = (
                    f"cross-region: {offer.price_usd_per_hour:g}/h is {ratio:.2f}x from this "
                    f"SKU's list-price cluster ({reference:g}/h)"
                )
    return reasons


def _spot_above_on_demand(offers: Sequence[InstanceOffer]) -> dict[_Row, str]:
    on_demand = {
        (o.cloud, o.instance_type, o.region): o.price_usd_per_hour
        for o in offers if o.market is Market.ON_DEMAND and o.zone is None
    }
    reasons: dict[_Row, str] = {}
    for offer in offers:
        if offer.market is not Market.SPOT:
            continue
        reference = on_demand.get((offer.cloud, offer.instance_type, offer.region))
        if reference is not None and offer.price_usd_per_hour >= reference:
            reasons[_row(offer)] = (
                f"spot-above-on-demand: spot {offer.price_usd_per_hour:g}/h >= on-demand "
                f"{reference:g}/h (no usable spot market)"
            )
    return reasons


def _sentinel(offers: Sequence[InstanceOffer]) -> dict[_Row, str]:
    reasons: dict[_Row, str] = {}
    for offer in offers:
        if offer.price_usd_per_hour in SENTINEL_PRICES_USD_PER_HOUR:
            reasons[_row(offer)] = (
                f"sentinel: {offer.price_usd_per_hour:g}/h is a placeholder price"
            )
        elif offer.price_usd_per_accelerator_hour < MIN_USD_PER_DEVICE_HOUR:
            reasons[_row(offer)] = (
                f"sentinel: {offer.price_usd_per_accelerator_hour:g}/device-h is a zero in disguise"
            )
    return reasons


def flag_reasons(offers: Iterable[InstanceOffer]) -> dict[_Row, list[str]]:
    """Every check's reasons, by (cloud, instance_type, region, zone, market)."""
    rows = list(offers)
    found: dict[_Row, list[str]] = defaultdict(list)
    # sentinels first, so they do not distort the cross-region reference
    sentinels = _sentinel(rows)
    sound = [o for o in rows if _row(o) not in sentinels]
    for check in (sentinels, _cross_region(sound), _spot_above_on_demand(sound)):
        for key, reason in check.items():
            found[key].append(reason)
    return dict(found)


def apply_checks(offers: Iterable[InstanceOffer]) -> list[InstanceOffer]:
    """The same offers, in the same order, with each check's reason added to ``flagged``."""
    rows = list(offers)
    reasons = flag_reasons(rows)
    checked = []
    for offer in rows:
        new = [r for r in reasons.get(_row(offer), []) if r not in offer.flagged]
        if new:
            offer = replace(offer, flagged="; ".join(filter(None, [offer.flagged, *new])))
        checked.append(offer)
    return checked
