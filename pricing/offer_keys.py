"""Offer keys as users type them: ``local`` or ``cloud:instance_type:region[:market]``.

``parse_offer_key`` reads what ``InstanceOffer.key`` writes, so a probe's result joins the
catalog offer it measured. One rule everywhere a key is typed (``--on``, a sweep's ``instance``,
a report's ``--baseline``): a key without a market means on-demand. ``local`` is this machine
(a probe run here), never a catalog offer.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from pricing.errors import PricingError
from pricing.types import Cloud, InstanceOffer, Market

__all__ = ["LOCAL_OFFER_KEY", "OfferKeyError", "OfferRef", "find_catalog_offer",
           "nearest_offer_keys", "parse_offer_key"]

LOCAL_OFFER_KEY = "local"  # this machine: the key of a local probe

_FORMAT = ("write 'local' or 'cloud:instance_type:region[:market]' (market spot or on-demand; "
           "none means on-demand), e.g. aws:g5.xlarge:us-east-1:spot")


class OfferKeyError(PricingError, ValueError):
    """An offer key that is not ``local`` or ``cloud:instance_type:region[:market]``, or names
    no catalog offer; the message starts with the field it came from and says the format."""


@dataclass(frozen=True)
class OfferRef:
    """A parsed offer key; ``cloud`` is None for ``local`` (this machine)."""

    cloud: Cloud | None
    instance_type: str
    region: str
    market: Market

    @property
    def key(self) -> str:
        """The canonical key (``local`` or ``cloud:type:region:market``)."""
        if self.cloud is None:
            return LOCAL_OFFER_KEY
        return f"{self.cloud}:{self.instance_type}:{self.region}:{self.market}"

    @property
    def is_tpu(self) -> bool:
        """True for a GCP TPU VM type (``tpu-v5litepod-8``)."""
        return self.cloud is Cloud.GCP and self.instance_type.startswith("tpu-")


def parse_offer_key(text: str, *, field: str = "offer") -> OfferRef:
    """Parse ``local`` or ``aws:g5.xlarge:us-east-1[:spot]`` (no market means on-demand).

    Raises OfferKeyError starting with ``field`` (``offer``, ``instance``) that says the format.
    """
    text = text.strip()
    if text == LOCAL_OFFER_KEY:
        return OfferRef(None, "local", "local", Market.ON_DEMAND)
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(parts):
        raise OfferKeyError(f"{field}: {text!r} is not an offer key; {_FORMAT}")
    try:
        cloud = Cloud(parts[0].lower())
    except ValueError:
        clouds = ", ".join(str(c) for c in Cloud)
        raise OfferKeyError(f"{field}: {text!r} has unknown cloud {parts[0]!r}; use {clouds}") from None
    market = Market.ON_DEMAND
    if len(parts) == 4:
        try:
            market = Market(parts[3].lower())
        except ValueError:
            raise OfferKeyError(f"{field}: {text!r} has market {parts[3]!r}; use spot or on-demand "
                             "(or leave it out for on-demand)") from None
    return OfferRef(cloud, parts[1], parts[2], market)


def nearest_offer_keys(ref: OfferRef, offers: Iterable[InstanceOffer], *, n: int = 3) -> list[str]:
    """Up to ``n`` catalog keys most like ``ref``: the same instance type first (same region,
    then same market, then the closest region), else the same region, else close spellings."""
    by_key = {o.key: o for o in offers}
    same_type = [o for o in by_key.values()
                 if o.cloud is ref.cloud and o.instance_type == ref.instance_type]
    same_region = [o for o in by_key.values() if o.cloud is ref.cloud and o.region == ref.region]
    pool = same_type or same_region
    if not pool:
        return difflib.get_close_matches(ref.key, list(by_key), n=n, cutoff=0.6)

    def likeness(offer: InstanceOffer) -> tuple[bool, bool, float, str]:
        return (offer.region != ref.region, offer.market is not ref.market,
                -difflib.SequenceMatcher(None, ref.key, offer.key).ratio(), offer.key)

    return [o.key for o in sorted(pool, key=likeness)[:n]]


def find_catalog_offer(ref: OfferRef, offers: Iterable[InstanceOffer], *,
                       field: str = "offer") -> InstanceOffer:
    """The cheapest catalog offer with ``ref``'s key (per-zone rows share one key).

    Raises OfferKeyError starting with ``field`` that suggests the nearest keys.
    """
    offers = list(offers)
    if ref.cloud is None:
        raise OfferKeyError(f"{field}: 'local' is this machine, not a catalog offer; "
                         "give cloud:instance_type:region[:market]")
    matches = [o for o in offers if o.key == ref.key]
    if matches:
        return min(matches, key=lambda o: o.price_usd_per_hour)
    near = nearest_offer_keys(ref, offers)
    hint = (f"; did you mean {', '.join(near)}?" if near
            else f"; list offers with 'advisor pricing list --cloud {ref.cloud}'")
    raise OfferKeyError(f"{field}: no offer {ref.key!r} in the price catalog{hint}")
