"""One contract suite run over every price source (AWS via Stubber, GCP fakes, Azure server)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime

import pytest

from pricing import Cloud, load_accelerators, shipped_catalog
from pricing.sources import AwsPriceSource, AzurePriceSource, FetchResult, GcpPriceSource
from pricing.sources.fakes import FakeRetailPricesServer, azure_items
from pricing.sources.fakes_aws import AwsFakeFleet, stubbed_aws_factory
from pricing.sources.fakes_gcp import gcp_fake_clients

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)


@contextmanager
def _aws() -> Iterator[FetchResult]:
    regions = ["us-east-1", "us-east-2", "us-west-2"]
    fleet = AwsFakeFleet.from_offers(shipped_catalog().offers, now=NOW)
    factory, stubbers = stubbed_aws_factory(fleet, regions, page_size=25)
    source = AwsPriceSource(client_factory=factory, clock=lambda: NOW, sleep=lambda _: None)
    yield source.fetch(regions)
    for stubber in stubbers.values():
        stubber.assert_no_pending_responses()


@contextmanager
def _gcp() -> Iterator[FetchResult]:
    catalog, machines, accelerators = gcp_fake_clients()
    source = GcpPriceSource(project="fake", catalog_client=catalog, machine_types_client=machines,
                            accelerator_types_client=accelerators, clock=lambda: NOW)
    yield source.fetch(["us-central1", "us-east1", "europe-west4", "us-central2"])


@contextmanager
def _azure() -> Iterator[FetchResult]:
    with FakeRetailPricesServer(azure_items(shipped_catalog().offers), page_size=9) as server:
        yield AzurePriceSource(base_url=server.url, clock=lambda: NOW).fetch(["eastus", "westus2"])


SOURCES: dict[str, Callable[[], AbstractContextManager[FetchResult]]] = {
    "aws": _aws,  # Stubber over Price List + EC2, fleet built from the shipped AWS rows
    "gcp": _gcp,  # fake billing catalog + compute clients returning real proto messages
    "azure": _azure,  # local HTTP server paging Retail Prices items
}


@pytest.fixture(params=sorted(SOURCES), scope="module")
def fetched(request: pytest.FixtureRequest) -> Iterator[FetchResult]:
    with SOURCES[request.param]() as result:
        yield result


class TestPriceSourceContract:
    def test_answers_for_its_cloud_only(self, fetched: FetchResult) -> None:
        assert fetched.offers
        assert {o.cloud for o in fetched.offers} == {fetched.cloud}

    def test_units_are_usd_per_hour_and_device_counts(self, fetched: FetchResult) -> None:
        for offer in fetched.offers:
            assert 0.01 < offer.price_usd_per_hour < 1000, offer
            assert offer.accelerator_count >= 1
            assert offer.accelerator_memory_gib > 0
            assert offer.vcpus is None or offer.vcpus >= 1

    def test_accelerators_are_canonical_names(self, fetched: FetchResult) -> None:
        known = load_accelerators()
        assert {o.accelerator for o in fetched.offers} <= set(known)

    def test_no_duplicate_keys(self, fetched: FetchResult) -> None:
        keys = [(o.cloud, o.instance_type, o.region, o.zone, o.market) for o in fetched.offers]
        assert len(keys) == len(set(keys))

    def test_capture_time_set(self, fetched: FetchResult) -> None:
        assert fetched.captured_at == NOW
        assert {o.observed_at for o in fetched.offers} == {NOW.date()}

    def test_only_asked_regions(self, fetched: FetchResult) -> None:
        assert {o.region for o in fetched.offers} <= set(fetched.regions)

    def test_both_markets_present(self, fetched: FetchResult) -> None:
        assert {o.market.value for o in fetched.offers} == {"on-demand", "spot"}

    def test_nothing_skipped_on_clean_data(self, fetched: FetchResult) -> None:
        assert fetched.skipped == ()


def test_every_cloud_has_a_source_in_the_suite() -> None:
    assert set(SOURCES) == {c.value for c in Cloud}
