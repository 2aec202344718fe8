"""Azure source against a local fake Retail Prices server with paging."""

from __future__ import annotations

import urllib.error
from datetime import UTC, datetime

import pytest

from pricing import Cloud, Market, shipped_catalog
from pricing.sources import AzurePriceSource, SourceError
from pricing.sources.azure import Transport, urllib_transport
from pricing.sources.fakes import FakeRetailPricesServer, azure_items

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
SHIPPED = [o for o in shipped_catalog().offers if o.cloud is Cloud.AZURE]


def test_pages_through_next_page_link_and_keeps_linux_consumption() -> None:
    with FakeRetailPricesServer(azure_items(SHIPPED), page_size=10) as server:
        result = AzurePriceSource(base_url=server.url, clock=lambda: NOW).fetch(["eastus", "westus2"])
    assert len(server.requests) == -(-len(azure_items(SHIPPED)) // 10)  # every page read
    got = {(o.instance_type, o.region, o.market): o.price_usd_per_hour for o in result.offers}
    want = {(o.instance_type, o.region, o.market): o.price_usd_per_hour for o in SHIPPED}
    assert got == want  # Windows and Low Priority meters dropped, Spot meters -> spot


def test_filter_names_sizes_and_regions() -> None:
    with FakeRetailPricesServer([], page_size=10) as server:
        AzurePriceSource(base_url=server.url).fetch(["eastus"])
    (path,) = server.requests
    assert "serviceName+eq+%27Virtual+Machines%27" in path
    assert "armRegionName+eq+%27eastus%27" in path and "Standard_ND96isr_H100_v5" in path


def test_page_failing_mid_way_raises_naming_the_page() -> None:
    sleeps: list[float] = []
    with FakeRetailPricesServer(azure_items(SHIPPED), page_size=10, fail_on_page=2) as server, \
            pytest.raises(SourceError, match=r"page 2 failed after 10 items: HTTPError"):
        AzurePriceSource(base_url=server.url, transport=_recorded(sleeps)).fetch(["eastus"])
    assert sleeps == [1, 2, 4]  # HTTP 500 retried, 4 attempts in all
    assert len(server.requests) == 1 + 4


def test_transport_does_not_retry_a_refused_connection() -> None:
    with FakeRetailPricesServer([]) as server:
        url = server.url
    sleeps: list[float] = []
    with pytest.raises(urllib.error.URLError):
        _recorded(sleeps)(url)
    assert sleeps == []


def test_malformed_and_non_usd_items_skipped_with_reason() -> None:
    items = azure_items(SHIPPED[:2])
    items.append({"armSkuName": "Standard_NC4as_T4_v3"})  # no price, no region
    items.append({**items[0], "currencyCode": "EUR"})
    with FakeRetailPricesServer(items) as server:
        result = AzurePriceSource(base_url=server.url).fetch(["eastus", "westus2"])
    assert len(result.offers) == 2
    assert any("malformed" in s for s in result.skipped)
    assert any("EUR" in s for s in result.skipped)


def test_spot_meter_is_spot_market() -> None:
    spot = next(o for o in SHIPPED if o.market is Market.SPOT)
    with FakeRetailPricesServer(azure_items([spot])) as server:
        (offer,) = AzurePriceSource(base_url=server.url).fetch([spot.region]).offers
    assert offer.market is Market.SPOT and offer.price_usd_per_hour == spot.price_usd_per_hour


def test_unknown_size_rejected_at_construction() -> None:
    with pytest.raises(SourceError, match="Standard_NC999"):
        AzurePriceSource(sizes=["Standard_NC999"])


def _recorded(sleeps: list[float]) -> Transport:
    return lambda url: urllib_transport(url, timeout_s=5, sleep=sleeps.append)
