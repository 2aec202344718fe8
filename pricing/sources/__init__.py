"""Live price sources, one thin class per cloud behind the ``PriceSource`` seam.

Cloud SDKs are imported only when a source talks to its cloud; ``source_for`` builds the
default source of a cloud.
"""

from __future__ import annotations

from pricing.sources.aws import AwsPriceSource
from pricing.sources.azure import AzurePriceSource
from pricing.sources.base import FetchResult, PriceSource, SourceError
from pricing.sources.gcp import GcpPriceSource
from pricing.types import Cloud

__all__ = [
    "AwsPriceSource",
    "AzurePriceSource",
    "FetchResult",
    "GcpPriceSource",
    "PriceSource",
    "SourceError",
    "source_for",
]


def source_for(cloud: Cloud) -> PriceSource:
    """The default price source of ``cloud`` (real APIs, default credentials)."""
    sources: dict[Cloud, type[PriceSource]] = {
        Cloud.AWS: AwsPriceSource, Cloud.GCP: GcpPriceSource, Cloud.AZURE: AzurePriceSource,
    }
    return sources[cloud]()
