"""AWS source: EC2 under moto, the Price List API through botocore's Stubber."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from pricing import Market, shipped_catalog
from pricing.checks import apply_checks
from pricing.sources import AwsPriceSource, SourceError
from pricing.sources.fakes_aws import (
    AwsFakeFleet,
    aws_price_list_entry,
    stubbed_aws_factory,
    unsigned_client,
)

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
MOTO_FAMILIES = ("p4de", "p5", "g5", "trn1", "trn2", "inf2", "dl2q")


def _fleet() -> AwsFakeFleet:
    return AwsFakeFleet.from_offers(shipped_catalog().offers, now=NOW)


def _source(factory: Any, sleeps: list[float] | None = None, **kwargs: Any) -> AwsPriceSource:
    record = sleeps if sleeps is not None else []
    return AwsPriceSource(client_factory=factory, clock=lambda: NOW, sleep=record.append, **kwargs)


@pytest.fixture(scope="module")
def moto_fetch() -> Any:
    """Fetch us-east-1 with EC2 answered by moto and the Price List API by a Stubber."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")  # fake, for moto only
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        return _moto_fetch()


def _moto_fetch() -> Any:
    from moto import mock_aws

    entries = [
        aws_price_list_entry("p5.48xlarge", "us-east-1", 55.04, vcpus=192, memory_gib=2048),
        aws_price_list_entry("g5.xlarge", "us-east-1", 1.006, vcpus=4, memory_gib=16),
        aws_price_list_entry("trn1.32xlarge", "us-east-1", 21.5, vcpus=128, memory_gib=512),
        aws_price_list_entry("trn2.48xlarge", "us-east-1", 35.76, vcpus=192, memory_gib=2048),
        aws_price_list_entry("inf2.xlarge", "us-east-1", 0.7582, vcpus=4, memory_gib=16),
        aws_price_list_entry("p4de.24xlarge", "us-east-1", 27.447, vcpus=96, memory_gib=1152),
    ]
    with mock_aws():
        pricing = boto3.client("pricing", region_name="us-east-1")
        stubber = Stubber(pricing)
        stubber.add_response("get_products", {"PriceList": entries[:3], "NextToken": "t2"}, None)
        stubber.add_response("get_products", {"PriceList": entries[3:]}, {
            "ServiceCode": "AmazonEC2", "FormatVersion": "aws_v1", "MaxResults": 100,
            "NextToken": "t2", "Filters": [
                {"Type": "TERM_MATCH", "Field": "operatingSystem", "Value": "Linux"},
                {"Type": "TERM_MATCH", "Field": "tenancy", "Value": "Shared"},
                {"Type": "TERM_MATCH", "Field": "preInstalledSw", "Value": "NA"},
                {"Type": "TERM_MATCH", "Field": "capacitystatus", "Value": "Used"},
                {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-east-1"},
            ],
        })
        stubber.activate()

        def factory(service: str, region: str) -> Any:
            return pricing if service == "pricing" else boto3.client(service, region_name=region)

        result = _source(factory, families=MOTO_FAMILIES).fetch(["us-east-1"])
        stubber.assert_no_pending_responses()
    return result


def _one(result: Any, instance_type: str, market: Market = Market.ON_DEMAND) -> Any:
    (offer,) = [o for o in result.offers if o.instance_type == instance_type
                and o.market is market and o.zone is None]
    return offer


@pytest.mark.parametrize(("instance_type", "accelerator", "count", "memory_gib"), [
    ("p5.48xlarge", "H100-SXM", 8, 80.0),  # GpuInfo H100
    ("p4de.24xlarge", "A100-80GB-SXM", 8, 80.0),  # GpuInfo "A100" with 80 GiB -> 80GB part
    ("g5.xlarge", "A10G", 1, 22.35),  # GpuInfo MiB converted, not the marketing 24 GB
    ("trn1.32xlarge", "Trainium1", 16, 32.0),  # NeuronInfo
    ("trn2.48xlarge", "Trainium2", 16, 96.0),  # NeuronInfo says 512 GiB/device: datasheet wins
    ("inf2.xlarge", "Inferentia2", 1, 32.0),  # NeuronInfo + InferenceAcceleratorInfo
])
def test_moto_instance_facts_map_to_catalog_names(
    moto_fetch: Any, instance_type: str, accelerator: str, count: int, memory_gib: float
) -> None:
    offer = _one(moto_fetch, instance_type)
    assert (offer.accelerator, offer.accelerator_count) == (accelerator, count)
    assert offer.accelerator_memory_gib == pytest.approx(memory_gib, abs=0.01)


def test_moto_on_demand_price_read_from_price_list_json(moto_fetch: Any) -> None:
    assert _one(moto_fetch, "p5.48xlarge").price_usd_per_hour == 55.04


def test_moto_unknown_accelerator_skipped_with_reason(moto_fetch: Any) -> None:
    assert not [o for o in moto_fetch.offers if o.instance_type.startswith("dl2q")]
    assert any("Qualcomm AI100" in line for line in moto_fetch.skipped)


def test_moto_spot_kept_per_zone_and_flagged_as_sentinel(moto_fetch: Any) -> None:
    zones = [o for o in moto_fetch.offers if o.instance_type == "p5.48xlarge" and o.zone]
    assert len(zones) >= 2  # moto offers p5.48xlarge in several us-east-1 zones
    checked = apply_checks(moto_fetch.offers)
    spot = [o for o in checked if o.instance_type == "p5.48xlarge" and o.market is Market.SPOT]
    assert spot and all("near-zero-price" in o.flagged for o in spot)  # moto's 0.00001 USD/h


def test_spot_latest_per_zone_and_region_row_at_cheapest_zone() -> None:
    factory, _ = stubbed_aws_factory(_fleet(), ["us-east-1"])
    result = _source(factory).fetch(["us-east-1"])
    rows = {o.zone: o.price_usd_per_hour for o in result.offers
            if o.instance_type == "p4d.24xlarge" and o.market is Market.SPOT}
    # zone a: latest 1.0x (the older 1.5x entry is ignored), zone b: 1.25x; region = cheapest
    assert rows["us-east-1a"] == pytest.approx(rows[None])
    assert rows["us-east-1b"] == pytest.approx(rows[None] * 1.25, rel=1e-4)


def test_throttling_backs_off_then_succeeds() -> None:
    factory, stubbers = stubbed_aws_factory(_fleet(), ["us-east-1"], throttle_first_price_page=True)
    sleeps: list[float] = []
    result = _source(factory, sleeps).fetch(["us-east-1"])
    assert sleeps == [0.5]
    assert result.offers
    stubbers[("pricing", "us-east-1")].assert_no_pending_responses()


def test_throttled_for_good_raises_saying_so() -> None:
    pricing = unsigned_client("pricing", "us-east-1")
    stubber = Stubber(pricing)
    for _ in range(6):
        stubber.add_client_error("get_products", service_error_code="ThrottlingException")
    stubber.activate()
    ec2 = unsigned_client("ec2", "us-east-1")
    ec2_stub = Stubber(ec2)
    ec2_stub.add_response("describe_instance_types", {"InstanceTypes": _fleet().types_in("us-east-1")})
    ec2_stub.activate()
    source = _source(lambda service, _region: pricing if service == "pricing" else ec2)
    with pytest.raises(SourceError, match=r"us-east-1 pricing get_products \(page 1\): still throttled"):
        source.fetch(["us-east-1"])


def test_page_failing_mid_way_raises_naming_the_page() -> None:
    factory, _ = stubbed_aws_factory(_fleet(), ["us-east-1"], page_size=10, fail_price_page=2)
    with pytest.raises(SourceError, match=r"get_products \(page 2\) failed.*InternalError"):
        _source(factory).fetch(["us-east-1"])


def test_malformed_price_list_entries_are_skipped_and_counted() -> None:
    fleet = _fleet()
    good = json.loads(fleet.price_list["us-east-1"][0])
    no_terms = {**good, "terms": {}}
    fleet.price_list["us-east-1"] += ["{not json", json.dumps(no_terms)]
    factory, _ = stubbed_aws_factory(fleet, ["us-east-1"])
    result = _source(factory).fetch(["us-east-1"])
    assert len([s for s in result.skipped if "malformed Price List entry" in s]) == 2
    assert _one(result, good["product"]["attributes"]["instanceType"]).price_usd_per_hour > 0


def test_capacity_block_rows_do_not_replace_on_demand() -> None:
    fleet = _fleet()
    entry = json.loads(aws_price_list_entry("p5.48xlarge", "us-east-1", 1.0, vcpus=192,
                                            memory_gib=2048))
    entry["product"]["attributes"]["marketoption"] = "CapacityBlock"
    fleet.price_list["us-east-1"].append(json.dumps(entry))
    factory, _ = stubbed_aws_factory(fleet, ["us-east-1"])
    [listed] = [o.price_usd_per_hour for o in shipped_catalog().offers
                if o.key == "aws:p5.48xlarge:us-east-1:on-demand"]
    assert _one(_source(factory).fetch(["us-east-1"]), "p5.48xlarge").price_usd_per_hour == listed


def test_region_with_no_accelerator_types_gives_no_offers() -> None:
    factory, _ = stubbed_aws_factory(AwsFakeFleet(), ["sa-east-1"])
    result = _source(factory).fetch(["sa-east-1"])
    assert result.offers == ()
