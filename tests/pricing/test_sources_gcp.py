"""GCP source: host + GPU composition, spot SKUs, TPU per chip, against fake clients."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from google.api_core.exceptions import ServiceUnavailable

from pricing import Market
from pricing.sources import GcpPriceSource, SourceError
from pricing.sources.fakes_gcp import FakeCloudCatalog, gcp_fake_clients
from pricing.sources.gcp import COMPUTE_SERVICE, TPU_SERVICE

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
REGIONS = ["us-central1", "us-east1", "europe-west4", "us-central2"]


def _source(catalog: Any = None) -> tuple[GcpPriceSource, Any, Any]:
    fake_catalog, machines, accelerators = gcp_fake_clients()
    source = GcpPriceSource(project="fake-project", catalog_client=catalog or fake_catalog,
                            machine_types_client=machines, accelerator_types_client=accelerators,
                            clock=lambda: NOW)
    return source, machines, fake_catalog


def _price(result: Any, instance_type: str, region: str, market: Market = Market.ON_DEMAND) -> float:
    (offer,) = [o for o in result.offers if (o.instance_type, o.region, o.market)
                == (instance_type, region, market)]
    return float(offer.price_usd_per_hour)


@pytest.fixture(scope="module")
def result() -> Any:
    return _source()[0].fetch(REGIONS)


def test_vm_price_is_host_cores_and_ram_plus_gpus(result: Any) -> None:
    # a2-highgpu-8g: 96 vCPU x 0.031611 + 680 GiB x 0.004237 + 8 x 2.933908 (us-central1 list)
    assert _price(result, "a2-highgpu-8g", "us-central1") == pytest.approx(29.38708, abs=1e-4)


def test_spot_uses_preemptible_skus(result: Any) -> None:
    on_demand = _price(result, "a3-highgpu-8g", "us-central1")
    spot = _price(result, "a3-highgpu-8g", "us-central1", Market.SPOT)
    assert spot == pytest.approx(on_demand * 0.4, rel=1e-4)


def test_tpu_slice_is_per_chip_times_chips(result: Any) -> None:
    assert _price(result, "tpu-v5p-32", "us-central1") == pytest.approx(16 * 4.2)  # 32 cores
    assert _price(result, "tpu-v6e-8", "europe-west4") == pytest.approx(8 * 2.7 * 1.10)
    assert _price(result, "tpu-v4-8", "us-central2") == pytest.approx(4 * 3.22)


def test_n1_with_gpu_only_where_the_gpu_is_offered(result: Any) -> None:
    n1 = {(o.instance_type, o.region) for o in result.offers if o.instance_type.startswith("n1")}
    assert ("n1-standard-8+1xV100", "us-central1") in n1
    assert ("n1-standard-8+1xV100", "us-east1") not in n1  # no V100 in us-east1's zones
    assert ("n1-standard-8+1xP100", "us-east1") in n1
    # n1-standard-8 (8 vCPU, 30 GiB) + one T4 in us-central1: 0.38 + 0.35
    assert _price(result, "n1-standard-8+1xT4", "us-central1") == pytest.approx(0.7300, abs=1e-3)


def test_machines_without_gpus_and_commitments_ignored(result: Any) -> None:
    assert not [o for o in result.offers if o.instance_type.startswith("n2")]
    assert result.skipped == ()


def test_machine_types_asked_with_a_family_filter() -> None:
    source, machines, _ = _source()
    source.fetch(["us-central1"])
    assert machines.requests == [{"project": "fake-project", "filter": 'name eq "(a2|a3|g2)-.*"'}]


def test_api_error_becomes_source_error() -> None:
    failing = FakeCloudCatalog({}, fail=ServiceUnavailable("backend down"))
    with pytest.raises(SourceError, match="GCP API call failed: 503 backend down"):
        _source(failing)[0].fetch(REGIONS)


def test_empty_catalog_is_an_error_not_an_empty_snapshot() -> None:
    with pytest.raises(SourceError, match="no SKUs"):
        _source(FakeCloudCatalog({COMPUTE_SERVICE: [], TPU_SERVICE: []}))[0].fetch(REGIONS)


def test_sku_without_price_is_skipped_with_reason() -> None:
    _, _, catalog = _source()
    broken = catalog.skus_by_service[COMPUTE_SERVICE][0]
    del broken.pricing_info[:]
    result = _source(catalog)[0].fetch(REGIONS)
    assert any("no price" in line for line in result.skipped)
