"""A fake AWS price API in the real response shapes, for tests and demos.

``AwsFakeFleet`` builds describe_instance_types items, Price List JSON strings and spot
history; ``stubbed_aws_factory`` serves them through botocore's Stubber (which checks every
response against the service model) as a ``client_factory`` for AwsPriceSource.

No network, no credentials: the stubbed botocore clients are unsigned (``UNSIGNED``), so
botocore never looks for credentials, and the Stubber answers before any request is sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pricing.sources.aws import ClientFactory
from pricing.types import Cloud, InstanceOffer, Market

__all__ = [
    "AwsFakeFleet", "aws_instance_type_item", "aws_price_list_entry", "stubbed_aws_factory",
    "unsigned_client",
]

# canonical accelerator -> (describe_instance_types section, reported name, manufacturer, MiB)
_AWS_DEVICES: dict[str, tuple[str, str, str, int]] = {
    "V100-16GB-SXM2": ("GpuInfo", "V100", "NVIDIA", 16384),
    "V100-32GB-SXM2": ("GpuInfo", "V100", "NVIDIA", 32768),
    "A100-40GB-SXM": ("GpuInfo", "A100", "NVIDIA", 40960),
    "A100-80GB-SXM": ("GpuInfo", "A100", "NVIDIA", 81920),
    "H100-SXM": ("GpuInfo", "H100", "NVIDIA", 81920),
    "H200": ("GpuInfo", "H200", "NVIDIA", 144384),
    "T4": ("GpuInfo", "T4", "NVIDIA", 16384), "A10G": ("GpuInfo", "A10G", "NVIDIA", 22888),
    "L4": ("GpuInfo", "L4", "NVIDIA", 22888), "L40S": ("GpuInfo", "L40S", "NVIDIA", 45776),
    "Gaudi": ("GpuInfo", "Gaudi HL-205", "Habana", 32768),
    "Trainium1": ("NeuronInfo", "Trainium", "AWS", 32768),
    "Trainium2": ("NeuronInfo", "Trainium2", "AWS", 524288),
    "Inferentia2": ("InferenceAcceleratorInfo", "Inferentia2", "AWS", 32768),
}


def aws_instance_type_item(
    instance_type: str, accelerator: str, count: int, *, vcpus: int, memory_gib: float,
) -> dict[str, Any]:
    """One ``describe_instance_types`` item with its accelerator section."""
    section, name, maker, mib = _AWS_DEVICES[accelerator]
    device = {"Name": name, "Manufacturer": maker, "Count": count, "MemoryInfo": {"SizeInMiB": mib}}
    item: dict[str, Any] = {
        "InstanceType": instance_type, "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": int(memory_gib * 1024)},
    }
    if section == "GpuInfo":
        item["GpuInfo"] = {"Gpus": [device], "TotalGpuMemoryInMiB": mib * count}
    elif section == "NeuronInfo":
        core = {"Count": 2, "Version": 2}
        item["NeuronInfo"] = {
            "NeuronDevices": [{"Name": name, "Count": count, "CoreInfo": core,
                               "MemoryInfo": {"SizeInMiB": mib}}],
            "TotalNeuronDeviceMemoryInMiB": mib * count,
        }
    else:
        item["InferenceAcceleratorInfo"] = {"Accelerators": [device],
                                            "TotalInferenceMemoryInMiB": mib * count}
    return item


def aws_price_list_entry(
    instance_type: str, region: str, usd_per_hour: float, *, vcpus: int, memory_gib: float,
    sku: str = "ABCDEFGH12345678",
) -> str:
    """One Price List Query API ``PriceList`` entry (a JSON string), on-demand Linux."""
    term, rate = f"{sku}.JRTCKXETXF", f"{sku}.JRTCKXETXF.6YS6EN2CT7"
    product = {
        "product": {
            "productFamily": "Compute Instance", "sku": sku,
            "attributes": {
                "instanceType": instance_type, "regionCode": region, "vcpu": str(vcpus),
                "memory": f"{memory_gib:g} GiB", "operatingSystem": "Linux",
                "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used",
                "marketoption": "OnDemand", "licenseModel": "No License required",
                "servicecode": "AmazonEC2", "usagetype": f"BoxUsage:{instance_type}",
            },
        },
        "serviceCode": "AmazonEC2",
        "terms": {"OnDemand": {term: {
            "priceDimensions": {rate: {
                "unit": "Hrs", "endRange": "Inf", "beginRange": "0", "appliesTo": [],
                "rateCode": rate, "pricePerUnit": {"USD": f"{usd_per_hour:.10f}"},
                "description": f"${usd_per_hour} per On Demand Linux {instance_type} Instance Hour",
            }},
            "sku": sku, "effectiveDate": "2025-06-01T00:00:00Z", "offerTermCode": "JRTCKXETXF",
            "termAttributes": {},
        }}},
        "version": "20250601000000", "publicationDate": "2025-06-01T00:00:00Z",
    }
    return json.dumps(product)


@dataclass
class AwsFakeFleet:
    """Instance facts, on-demand Price List entries and spot history for a fake AWS."""

    instance_types: dict[str, dict[str, Any]] = field(default_factory=dict)
    price_list: dict[str, list[str]] = field(default_factory=dict)  # region -> entries
    spot_history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def from_offers(cls, offers: Iterable[InstanceOffer], *, now: datetime) -> AwsFakeFleet:
        """A fleet answering with these (region-level AWS) offers' prices.

        Each spot price becomes two zones (``<region>a`` at the price, ``<region>b`` 25%
        dearer) plus an older, dearer history entry in ``<region>a`` that must be ignored.
        """
        fleet = cls()
        for offer in offers:
            if offer.cloud is not Cloud.AWS or offer.zone is not None:
                continue
            fleet.instance_types.setdefault(offer.instance_type, aws_instance_type_item(
                offer.instance_type, offer.accelerator, offer.accelerator_count,
                vcpus=offer.vcpus or 8, memory_gib=offer.memory_gib or 32.0,
            ))
            if offer.market is Market.ON_DEMAND:
                fleet.price_list.setdefault(offer.region, []).append(aws_price_list_entry(
                    offer.instance_type, offer.region, offer.price_usd_per_hour,
                    vcpus=offer.vcpus or 8, memory_gib=offer.memory_gib or 32.0,
                ))
            else:
                history = fleet.spot_history.setdefault(offer.region, [])
                for zone, factor, age_h in (("a", 1.0, 0), ("b", 1.25, 0), ("a", 1.5, 6)):
                    history.append({
                        "InstanceType": offer.instance_type,
                        "AvailabilityZone": f"{offer.region}{zone}",
                        "ProductDescription": "Linux/UNIX",
                        "SpotPrice": f"{offer.price_usd_per_hour * factor:.6f}",
                        "Timestamp": now - timedelta(hours=age_h),
                    })
        return fleet

    def types_in(self, region: str) -> list[dict[str, Any]]:
        """describe_instance_types items offered in ``region`` (those with any price there)."""
        names = {h["InstanceType"] for h in self.spot_history.get(region, [])}
        for entry in self.price_list.get(region, []):
            try:
                names.add(json.loads(entry)["product"]["attributes"]["instanceType"])
            except (ValueError, KeyError):
                continue  # a deliberately malformed entry
        names &= set(self.instance_types)
        return [self.instance_types[n] for n in sorted(names)]


def unsigned_client(service: str, region: str) -> Any:
    """A botocore client that needs no credentials (for use under a Stubber)."""
    import boto3
    from botocore import UNSIGNED
    from botocore.config import Config

    return boto3.session.Session().client(
        service, region_name=region, config=Config(signature_version=UNSIGNED),
    )


def _pages(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


def stubbed_aws_factory(
    fleet: AwsFakeFleet, regions: Sequence[str], *, page_size: int = 40,
    throttle_first_price_page: bool = False, fail_price_page: int | None = None,
) -> tuple[ClientFactory, dict[tuple[str, str], Any]]:
    """A client factory whose clients answer from ``fleet`` for one fetch of ``regions``.

    Returns ``(factory, stubbers)``; ``stubbers[(service, region)]`` lets a test call
    ``assert_no_pending_responses()``. ``throttle_first_price_page`` answers the first
    get_products call with ThrottlingException; ``fail_price_page=N`` answers the Nth
    get_products call (counting from 1, across regions) with an InternalError.
    """
    from botocore.stub import Stubber

    clients: dict[tuple[str, str], Any] = {}
    stubbers: dict[tuple[str, str], Any] = {}

    def stubbed(service: str, region: str) -> Any:
        client = unsigned_client(service, region)
        stubber = Stubber(client)
        clients[(service, region)], stubbers[(service, region)] = client, stubber
        return stubber

    pricing = stubbed("pricing", "us-east-1")
    if throttle_first_price_page:
        pricing.add_client_error("get_products", service_error_code="ThrottlingException",
                                 service_message="Rate exceeded", http_status_code=400)
    price_call = 0
    for region in regions:
        ec2 = stubbed("ec2", region)
        types = fleet.types_in(region)
        ec2.add_response("describe_instance_types", {"InstanceTypes": types}, None)
        if not types:
            continue
        pages = _pages(fleet.price_list.get(region, []), page_size)
        for index, page in enumerate(pages):
            price_call += 1
            if fail_price_page == price_call:
                pricing.add_client_error("get_products", service_error_code="InternalError",
                                         service_message="page failed", http_status_code=500)
                break
            response: dict[str, Any] = {"FormatVersion": "aws_v1", "PriceList": list(page)}
            if index < len(pages) - 1:
                response["NextToken"] = f"token-{region}-{index + 1}"
            pricing.add_response("get_products", response, None)
        else:
            history = fleet.spot_history.get(region, [])
            spot_pages = _pages(history, page_size)
            for index, spot_page in enumerate(spot_pages):
                spot: dict[str, Any] = {"SpotPriceHistory": list(spot_page)}
                if index < len(spot_pages) - 1:
                    spot["NextToken"] = f"spot-{region}-{index + 1}"
                ec2.add_response("describe_spot_price_history", spot, None)
            continue
        break
    for stubber in stubbers.values():
        stubber.activate()

    def factory(service: str, region: str) -> Any:
        return clients[(service, region)]

    return factory, stubbers
