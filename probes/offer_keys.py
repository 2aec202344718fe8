"""Offer keys as users type them: ``local`` or ``cloud:instance_type:region[:market]``.

The same format as ``pricing.InstanceOffer.key`` (market defaults to on-demand), so a probe's
result joins the catalog offer it measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from pricing import Cloud, Market
from probes.errors import ProbeError
from probes.types import LOCAL_OFFER_KEY

__all__ = ["OfferRef", "parse_offer_key"]


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


def parse_offer_key(text: str) -> OfferRef:
    """Parse ``local`` or ``aws:g5.xlarge:us-east-1[:spot]``; ProbeError says the format."""
    text = text.strip()
    if text == LOCAL_OFFER_KEY:
        return OfferRef(None, "local", "local", Market.ON_DEMAND)
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(parts):
        raise ProbeError(f"offer {text!r}: write 'local' or 'cloud:instance_type:region[:spot]', "
                         "e.g. aws:g5.xlarge:us-east-1:spot")
    try:
        cloud = Cloud(parts[0].lower())
    except ValueError:
        raise ProbeError(f"offer {text!r}: unknown cloud {parts[0]!r}; use aws or gcp") from None
    market = Market.ON_DEMAND
    if len(parts) == 4:
        try:
            market = Market(parts[3].lower())
        except ValueError:
            raise ProbeError(f"offer {text!r}: market must be spot or on-demand, "
                             f"got {parts[3]!r}") from None
    return OfferRef(cloud, parts[1], parts[2], market)
