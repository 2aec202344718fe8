"""AWS prices: Price List Query API (on demand), EC2 spot price history, EC2 instance facts.

boto3 is imported only when the default client factory builds a client. Tests pass a
``client_factory`` returning moto-backed or Stubber-wrapped clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pricing.sources._accelerators import canonical_or_none, device_memory_gib
from pricing.sources.base import (
    Clock,
    FetchResult,
    PriceSource,
    Sleep,
    SourceError,
    utc_now,
    with_backoff,
)
from pricing.types import Cloud, InstanceOffer, Market

__all__ = [
    "AWS_ACCELERATOR_FAMILIES", "AWS_REGIONS", "AwsPriceSource", "ClientFactory",
    "default_client_factory",
]

ClientFactory = Callable[[str, str], Any]
"""``(service, region) -> boto3 client``."""

AWS_REGIONS = ("us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1", "ap-northeast-1")
AWS_ACCELERATOR_FAMILIES = (
    "p3", "p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "g4dn", "g5", "g6", "g6e",
    "dl1", "trn1", "trn1n", "trn2", "inf2",
)
PRICING_REGION = "us-east-1"
SOURCE = "aws price list api + ec2 spot price history"
_THROTTLE_CODES = frozenset({
    "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException",
    "RequestThrottled", "SlowDown",
})
_PRICE_FILTERS = {
    "operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA",
    "capacitystatus": "Used",
}


def default_client_factory(service: str, region: str) -> Any:
    """A boto3 client with adaptive retries (throttling backs off inside botocore too)."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 8, "mode": "adaptive"}, user_agent_extra="advisor")
    return boto3.session.Session().client(service, region_name=region, config=config)


def _is_throttle(exc: BaseException) -> bool:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    return response.get("Error", {}).get("Code") in _THROTTLE_CODES


@dataclass(frozen=True)
class _Facts:
    accelerator: str
    count: int
    vcpus: int | None
    memory_gib: float | None
    accelerator_memory_gib: float


def _device_info(item: dict[str, Any]) -> tuple[str, int, float | None] | None:
    for section, devices_key in (
        ("GpuInfo", "Gpus"), ("NeuronInfo", "NeuronDevices"),
        ("InferenceAcceleratorInfo", "Accelerators"),
    ):
        devices = item.get(section, {}).get(devices_key) or []
        if devices:
            device = devices[0]
            mib = device.get("MemoryInfo", {}).get("SizeInMiB")
            return str(device["Name"]), int(device["Count"]), mib / 1024 if mib else None
    return None


def _facts(item: dict[str, Any], skipped: list[str]) -> _Facts | None:
    info = _device_info(item)
    if info is None:
        return None
    name, count, memory = info
    canonical = canonical_or_none(name, memory)
    if canonical is None or count < 1:
        skipped.append(f"{item['InstanceType']}: accelerator {name!r} has no spec in the catalog")
        return None
    mib = item.get("MemoryInfo", {}).get("SizeInMiB")
    return _Facts(
        accelerator=canonical, count=count,
        vcpus=item.get("VCpuInfo", {}).get("DefaultVCpus"),
        memory_gib=round(mib / 1024, 2) if mib else None,
        accelerator_memory_gib=device_memory_gib(canonical, memory),
    )


def _hourly_usd(product: dict[str, Any]) -> float:
    """The one on-demand hourly USD price of a Price List product (KeyError/ValueError if none)."""
    (term,) = product["terms"]["OnDemand"].values()
    hourly = [d for d in term["priceDimensions"].values() if d.get("unit") == "Hrs"]
    if len(hourly) != 1:
        raise ValueError(f"{len(hourly)} hourly price dimensions")
    return float(hourly[0]["pricePerUnit"]["USD"])


class AwsPriceSource(PriceSource):
    """On-demand (Linux, shared tenancy) and spot prices of AWS accelerator instances.

    ``families`` are the instance families read (default ``AWS_ACCELERATOR_FAMILIES``; None:
    every instance type with a GPU, Neuron or inference accelerator the catalog has specs for).
    """

    cloud = Cloud.AWS
    default_regions = AWS_REGIONS

    def __init__(
        self,
        *,
        client_factory: ClientFactory | None = None,
        families: Sequence[str] | None = AWS_ACCELERATOR_FAMILIES,
        clock: Clock = utc_now,
        sleep: Sleep = time.sleep,
    ) -> None:
        self._factory = client_factory or default_client_factory
        self._families = frozenset(families) if families is not None else None
        self._clock = clock
        self._sleep = sleep

    def _call(self, client: Any, operation: str, what: str, **kwargs: Any) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        method = getattr(client, operation)
        try:
            response: dict[str, Any] = with_backoff(
                lambda: method(**kwargs), is_throttle=_is_throttle, what=what, sleep=self._sleep,
            )
        except (BotoCoreError, ClientError) as exc:
            raise SourceError(f"{what} failed: {exc}") from exc
        return response

    def _paged(
        self, client: Any, operation: str, what: str, **kwargs: Any
    ) -> Iterator[dict[str, Any]]:
        token: str | None = None
        page = 1
        while True:
            extra = {"NextToken": token} if token else {}
            response = self._call(client, operation, f"{what} (page {page})", **kwargs, **extra)
            yield response
            token = response.get("NextToken") or None
            if token is None:
                return
            page += 1

    def _instance_facts(self, ec2: Any, region: str, skipped: list[str]) -> dict[str, _Facts]:
        facts = {}
        what = f"{region} describe_instance_types"
        kwargs: dict[str, Any] = {}
        if self._families is not None:
            values = sorted(f"{family}.*" for family in self._families)
            kwargs["Filters"] = [{"Name": "instance-type", "Values": values}]
        for page in self._paged(ec2, "describe_instance_types", what, **kwargs):
            for item in page.get("InstanceTypes", []):
                family = str(item["InstanceType"]).split(".")[0]
                if self._families is not None and family not in self._families:
                    continue
                found = _facts(item, skipped)
                if found is not None:
                    facts[item["InstanceType"]] = found
        return facts

    def _on_demand(
        self, pricing: Any, region: str, wanted: set[str], skipped: list[str]
    ) -> dict[str, float]:
        filters = [
            {"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in _PRICE_FILTERS.items()
        ]
        filters.append({"Type": "TERM_MATCH", "Field": "regionCode", "Value": region})
        prices: dict[str, float] = {}
        for page in self._paged(
            pricing, "get_products", f"{region} pricing get_products", ServiceCode="AmazonEC2",
            Filters=filters, FormatVersion="aws_v1", MaxResults=100,
        ):
            for entry in page.get("PriceList", []):
                try:
                    product = json.loads(entry)
                    attributes = product["product"]["attributes"]
                    instance_type = attributes["instanceType"]
                    market = attributes.get("marketoption", "OnDemand")
                    if instance_type not in wanted or market != "OnDemand":
                        continue
                    price = _hourly_usd(product)
                except (KeyError, ValueError, TypeError) as exc:
                    skipped.append(
                        f"{region}: malformed Price List entry ({type(exc).__name__}: {exc})"
                    )
                    continue
                if price <= 0:
                    skipped.append(f"{region} {instance_type}: zero on-demand price")
                elif instance_type not in prices or price < prices[instance_type]:
                    prices[instance_type] = price
        return prices

    def _spot(
        self, ec2: Any, region: str, wanted: set[str], now: datetime, skipped: list[str]
    ) -> dict[str, dict[str, float]]:
        latest: dict[tuple[str, str], tuple[datetime, float]] = {}
        for page in self._paged(
            ec2, "describe_spot_price_history", f"{region} describe_spot_price_history",
            InstanceTypes=sorted(wanted), ProductDescriptions=["Linux/UNIX"], StartTime=now,
        ):
            for item in page.get("SpotPriceHistory", []):
                try:
                    key = (str(item["InstanceType"]), str(item["AvailabilityZone"]))
                    stamp, price = item["Timestamp"], float(item["SpotPrice"])
                except (KeyError, ValueError, TypeError) as exc:
                    skipped.append(f"{region}: malformed spot history entry ({exc})")
                    continue
                if price <= 0:
                    skipped.append(f"{region} {key[0]} {key[1]}: zero spot price")
                elif key[0] in wanted and (key not in latest or stamp > latest[key][0]):
                    latest[key] = (stamp, price)
        zones: dict[str, dict[str, float]] = {}
        for (instance_type, zone), (_, price) in latest.items():
            zones.setdefault(instance_type, {})[zone] = price
        return zones

    def fetch(self, regions: Sequence[str] | None = None) -> FetchResult:
        """Read on-demand and spot prices of accelerator instances in ``regions``."""
        chosen = self._regions(regions)
        now = self._clock()
        skipped: list[str] = []
        offers: list[InstanceOffer] = []
        pricing = self._factory("pricing", PRICING_REGION)
        for region in chosen:
            ec2 = self._factory("ec2", region)
            facts = self._instance_facts(ec2, region, skipped)
            if not facts:
                continue
            on_demand = self._on_demand(pricing, region, set(facts), skipped)
            spot = self._spot(ec2, region, set(facts), now, skipped)
            offers.extend(self._compose(region, facts, on_demand, spot, now, skipped))
        return FetchResult(
            cloud=self.cloud, offers=tuple(offers), captured_at=now, regions=chosen,
            skipped=tuple(skipped),
        )

    def _compose(
        self, region: str, facts: dict[str, _Facts], on_demand: dict[str, float],
        spot: dict[str, dict[str, float]], now: datetime, skipped: list[str],
    ) -> Iterator[InstanceOffer]:
        for instance_type, fact in sorted(facts.items()):
            zones = spot.get(instance_type, {})
            if instance_type not in on_demand and not zones:
                skipped.append(f"{region} {instance_type}: no on-demand or spot price")
                continue

            def offer(market: Market, price: float, zone: str | None, *,
                      instance_type: str = instance_type, fact: _Facts = fact) -> InstanceOffer:
                return InstanceOffer(
                    cloud=Cloud.AWS, region=region, zone=zone, instance_type=instance_type,
                    accelerator=fact.accelerator, accelerator_count=fact.count,
                    vcpus=fact.vcpus, memory_gib=fact.memory_gib,
                    accelerator_memory_gib=fact.accelerator_memory_gib,
                    market=market, price_usd_per_hour=price, source=SOURCE,
                    observed_at=now.date(),
                )

            if instance_type in on_demand:
                yield offer(Market.ON_DEMAND, on_demand[instance_type], None)
            if zones:
                yield offer(Market.SPOT, min(zones.values()), None)
                for zone, price in sorted(zones.items()):
                    yield offer(Market.SPOT, price, zone)
