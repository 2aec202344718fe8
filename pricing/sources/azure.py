"""Azure prices from the public Retail Prices API (REST, no credentials).

``GET {base_url}?$filter=...`` returns ``{"Items": [...], "NextPageLink": url | null}``.
Linux consumption meters only (Windows product names and Low Priority meters dropped);
meters whose name ends in "Spot" are spot prices. Sizes and their GPUs come from the table
``AZURE_SIZES`` (the API has prices, not hardware facts). The HTTP call is a one-function
seam (``transport``) so tests point it at a local fake server.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from pricing.sources._accelerators import device_memory_gib
from pricing.sources.base import Clock, FetchResult, PriceSource, Sleep, SourceError, utc_now
from pricing.types import Cloud, InstanceOffer, Market

__all__ = ["AZURE_REGIONS", "AZURE_SIZES", "RETAIL_PRICES_URL", "AzurePriceSource", "Transport"]

RETAIL_PRICES_URL = "https://prices.azure.com/api/retail/prices"
API_VERSION = "2023-01-01-preview"
SOURCE = "azure retail prices api"
AZURE_REGIONS = ("eastus", "westus2", "westeurope")
MAX_PAGES = 200

Transport = Callable[[str], bytes]
"""``url -> response body``; raises OSError (urllib.error.URLError) on failure."""

# armSkuName -> (canonical accelerator, count, vCPUs, memory GiB)
AZURE_SIZES: dict[str, tuple[str, int, int, float]] = {
    "Standard_NC4as_T4_v3": ("T4", 1, 4, 28), "Standard_NC8as_T4_v3": ("T4", 1, 8, 56),
    "Standard_NC16as_T4_v3": ("T4", 1, 16, 110), "Standard_NC64as_T4_v3": ("T4", 4, 64, 440),
    "Standard_NC24ads_A100_v4": ("A100-80GB-PCIe", 1, 24, 220),
    "Standard_NC48ads_A100_v4": ("A100-80GB-PCIe", 2, 48, 440),
    "Standard_NC96ads_A100_v4": ("A100-80GB-PCIe", 4, 96, 880),
    "Standard_ND96asr_v4": ("A100-40GB-SXM", 8, 96, 900),
    "Standard_ND96amsr_A100_v4": ("A100-80GB-SXM", 8, 96, 1900),
    "Standard_ND96isr_H100_v5": ("H100-SXM", 8, 96, 1900),
    "Standard_NC40ads_H100_v5": ("H100-NVL", 1, 40, 320),
    "Standard_NC80adis_H100_v5": ("H100-NVL", 2, 80, 640),
    "Standard_NV36ads_A10_v5": ("A10", 1, 36, 440),
    "Standard_NV36adms_A10_v5": ("A10", 1, 36, 880),
    "Standard_NV72ads_A10_v5": ("A10", 2, 72, 880),
}


def _retried(exc: BaseException) -> bool:
    return isinstance(exc, urllib.error.HTTPError) and exc.code in (429, 500, 502, 503, 504)


def _get(url: str, timeout_s: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310
            body: bytes = response.read()
    except urllib.error.HTTPError as exc:
        exc.close()  # its response holds the socket; the error still says what failed
        raise
    return body


def urllib_transport(url: str, *, timeout_s: float = 30.0, attempts: int = 4,
                     sleep: Sleep = time.sleep) -> bytes:
    """GET ``url`` with urllib; retry HTTP 429/5xx with backoff (1, 2, 4 s), ``attempts`` in all."""
    retrying = Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(),
                        retry=retry_if_exception(_retried), sleep=sleep, reraise=True)
    return retrying(_get, url, timeout_s)


def _filter(sizes: Sequence[str], regions: Sequence[str]) -> str:
    size_terms = " or ".join(f"armSkuName eq '{s}'" for s in sizes)
    region_terms = " or ".join(f"armRegionName eq '{r}'" for r in regions)
    return (f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' "
            f"and ({size_terms}) and ({region_terms})")


class AzurePriceSource(PriceSource):
    """Pay-as-you-go and spot prices of Azure GPU sizes (NC, ND, NV) per region."""

    cloud = Cloud.AZURE
    default_regions = AZURE_REGIONS

    def __init__(
        self,
        *,
        base_url: str = RETAIL_PRICES_URL,
        transport: Transport | None = None,
        sizes: Sequence[str] | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self._base_url = base_url
        self._transport: Transport = transport or urllib_transport
        self._sizes = tuple(sizes) if sizes is not None else tuple(AZURE_SIZES)
        unknown = [s for s in self._sizes if s not in AZURE_SIZES]
        if unknown:
            raise SourceError(f"azure sizes {unknown} are not in AZURE_SIZES; add their GPUs there")
        self._clock = clock

    def _items(self, regions: Sequence[str]) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({
            "api-version": API_VERSION, "$filter": _filter(self._sizes, regions),
        })
        url: str | None = f"{self._base_url}?{query}"
        items: list[dict[str, Any]] = []
        page = 0
        while url:
            page += 1
            if page > MAX_PAGES:
                raise SourceError(
                    f"Retail Prices API: more than {MAX_PAGES} pages; narrow --region"
                )
            try:
                body = json.loads(self._transport(url))
                items.extend(body["Items"])
                url = body.get("NextPageLink") or None
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise SourceError(
                    f"Retail Prices API page {page} failed after {len(items)} items: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        return items

    def fetch(self, regions: Sequence[str] | None = None) -> FetchResult:
        """Read consumption prices of ``AZURE_SIZES`` in ``regions``, Linux, on demand and spot."""
        chosen = self._regions(regions)
        now = self._clock()
        skipped: list[str] = []
        prices: dict[tuple[str, str, Market], float] = {}
        for item in self._items(chosen):
            parsed = self._parse(item, chosen, skipped)
            if parsed is not None:
                key, price = parsed
                prices[key] = min(price, prices.get(key, price))
        offers = [self._offer(size, region, market, price, now)
                  for (size, region, market), price in sorted(prices.items())]
        return FetchResult(
            cloud=self.cloud, offers=tuple(offers), captured_at=now, regions=chosen,
            skipped=tuple(skipped),
        )

    def _parse(
        self, item: dict[str, Any], regions: Sequence[str], skipped: list[str],
    ) -> tuple[tuple[str, str, Market], float] | None:
        try:
            size, region = str(item["armSkuName"]), str(item["armRegionName"])
            meter, product = str(item["meterName"]), str(item["productName"])
            price, unit = float(item["retailPrice"]), str(item["unitOfMeasure"])
            currency = str(item.get("currencyCode", "USD"))
        except (KeyError, ValueError, TypeError) as exc:
            skipped.append(f"malformed Retail Prices item ({type(exc).__name__}: {exc})")
            return None
        if (size not in self._sizes or region not in regions or "Windows" in product
                or "Low Priority" in meter or item.get("type", "Consumption") != "Consumption"):
            return None
        if currency != "USD" or unit != "1 Hour":
            skipped.append(f"{region} {size}: price in {currency} per {unit!r}, not USD per hour")
            return None
        if price <= 0:
            skipped.append(f"{region} {size} {meter}: zero price")
            return None
        market = Market.SPOT if meter.endswith("Spot") else Market.ON_DEMAND
        return (size, region, market), price

    def _offer(
        self, size: str, region: str, market: Market, price: float, now: datetime,
    ) -> InstanceOffer:
        accelerator, count, vcpus, memory = AZURE_SIZES[size]
        return InstanceOffer(
            cloud=Cloud.AZURE, region=region, zone=None, instance_type=size,
            accelerator=accelerator, accelerator_count=count, vcpus=vcpus, memory_gib=memory,
            accelerator_memory_gib=device_memory_gib(accelerator, None), market=market,
            price_usd_per_hour=price, source=SOURCE, observed_at=now.date(),
        )
