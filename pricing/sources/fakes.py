"""Fakes of the three clouds' price APIs, in the real response shapes, for tests and demos.

- AWS: ``AwsFakeFleet`` builds describe_instance_types items, Price List JSON strings and
  spot history; ``stubbed_aws_factory`` serves them through botocore's Stubber (which checks
  every response against the service model) as a ``client_factory`` for AwsPriceSource.
- GCP: ``FakeCloudCatalog`` / ``FakeAggregatedList`` stand in for CloudCatalogClient and the
  compute MachineTypes/AcceleratorTypes clients, returning real google-cloud message types.
- Azure: ``FakeRetailPricesServer`` is a local HTTP server (127.0.0.1) paging Retail Prices
  items with NextPageLink.

No network, no credentials: the stubbed botocore clients are unsigned (``UNSIGNED``), so
botocore never looks for credentials, and the Stubber answers before any request is sent.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pricing.sources.aws import ClientFactory
from pricing.types import Cloud, InstanceOffer, Market

__all__ = [
    "AwsFakeFleet", "FakeAggregatedList", "FakeCloudCatalog", "FakeRetailPricesServer",
    "azure_items", "gcp_fake_clients", "gcp_sku", "stubbed_aws_factory", "unsigned_client",
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


# --- GCP -------------------------------------------------------------------------------


def gcp_sku(
    description: str, regions: Sequence[str], usd: float, *, usage_type: str = "OnDemand",
    resource_group: str = "GPU", unit: str = "h", sku_id: str = "0000-0000-0000",
) -> Any:
    """A ``google.cloud.billing_v1.Sku`` with one tier at ``usd`` per ``unit``."""
    from google.cloud import billing_v1
    from google.type import money_pb2

    units = int(usd)
    money = money_pb2.Money(currency_code="USD", units=units, nanos=round((usd - units) * 1e9))
    return billing_v1.Sku(
        name=f"services/x/skus/{sku_id}", sku_id=sku_id, description=description,
        category=billing_v1.Category(
            service_display_name="Compute Engine", resource_family="Compute",
            resource_group=resource_group, usage_type=usage_type,
        ),
        service_regions=list(regions),
        pricing_info=[billing_v1.PricingInfo(pricing_expression=billing_v1.PricingExpression(
            usage_unit=unit, tiered_rates=[billing_v1.PricingExpression.TierRate(
                start_usage_amount=0, unit_price=money,
            )],
        ))],
    )


class FakeCloudCatalog:
    """CloudCatalogClient stand-in: ``list_skus(parent=)`` returns the SKUs of a service."""

    def __init__(self, skus_by_service: dict[str, list[Any]], *, fail: Exception | None = None):
        self.skus_by_service = skus_by_service
        self.fail = fail
        self.calls: list[str] = []

    def list_skus(self, *, parent: str) -> list[Any]:
        """The SKUs of ``parent`` (raises ``fail`` when set)."""
        self.calls.append(parent)
        if self.fail is not None:
            raise self.fail
        return list(self.skus_by_service.get(parent, []))


class FakeAggregatedList:
    """MachineTypesClient / AcceleratorTypesClient stand-in for ``aggregated_list``."""

    def __init__(self, pairs: list[tuple[str, Any]]):
        self.pairs = pairs
        self.requests: list[dict[str, Any]] = []

    def aggregated_list(self, *, request: dict[str, Any]) -> list[tuple[str, Any]]:
        """``(zone key, scoped list)`` pairs, as the real pager yields them."""
        self.requests.append(request)
        return list(self.pairs)


_GCP_REGION_FACTOR = {"us-central1": 1.0, "us-east1": 1.0, "us-west1": 1.0, "us-east4": 1.126,
                      "us-east5": 1.126, "us-west4": 1.126, "europe-west4": 1.10,
                      "asia-southeast1": 1.234, "us-central2": 1.0}
# family -> (usd per vCPU-h, usd per GiB-h), list prices in us-central1
_GCP_HOST = {"A2": (0.031611, 0.004237), "A3": (0.031611, 0.004237),
             "G2": (0.024988, 0.002927), "N1": (0.031611, 0.004237)}
# (billing description, accelerator type, usd/h, regions)
_GCP_GPUS: list[tuple[str, str, float, tuple[str, ...] | None]] = [
    ("Nvidia Tesla A100 GPU", "nvidia-tesla-a100", 2.933908, None),
    ("Nvidia Tesla A100 80GB GPU", "nvidia-a100-80gb", 3.92808, None),
    ("Nvidia H100 80GB GPU", "nvidia-h100-80gb", 9.79655, None),
    ("Nvidia L4 GPU", "nvidia-l4", 0.560040, None),
    ("Nvidia Tesla T4 GPU", "nvidia-tesla-t4", 0.35, None),
    ("Nvidia Tesla V100 GPU", "nvidia-tesla-v100", 2.48, ("us-central1", "us-west1", "europe-west4")),
    ("Nvidia Tesla P100 GPU", "nvidia-tesla-p100", 1.46, ("us-central1", "us-east1", "europe-west4")),
]
_GCP_TPUS: list[tuple[str, float, tuple[str, ...]]] = [
             ("TPU v2", 1.125, ("us-central1",)), ("TPU v3", 2.0, ("us-central1",)),
             ("TPU v4", 3.22, ("us-central2",)), ("TPU v5e", 1.2, ("us-central1", "us-west4")),
             ("TPU v5p", 4.2, ("us-central1", "us-east5")),
             ("TPU v6e", 2.7, ("us-central1", "us-east5", "europe-west4"))]
# machine type -> (vCPUs, memory MB, accelerator type, count)
_GCP_MACHINES = {
    "a2-highgpu-1g": (12, 87040, "nvidia-tesla-a100", 1),
    "a2-highgpu-8g": (96, 696320, "nvidia-tesla-a100", 8),
    "a2-ultragpu-8g": (96, 1392640, "nvidia-a100-80gb", 8),
    "a3-highgpu-8g": (208, 1916928, "nvidia-h100-80gb", 8),
    "g2-standard-4": (4, 16384, "nvidia-l4", 1), "g2-standard-48": (48, 196608, "nvidia-l4", 4),
}


def gcp_fake_clients(
    regions: Sequence[str] = ("us-central1", "us-east1", "europe-west4", "us-central2"),
) -> tuple[FakeCloudCatalog, FakeAggregatedList, FakeAggregatedList]:
    """Catalog, machine-types and accelerator-types fakes covering a2, a3, g2, n1 + T4/V100/P100
    and TPU v2-v6e in ``regions`` (spot = 40% of on-demand)."""
    from google.cloud import compute_v1

    from pricing.sources.gcp import COMPUTE_SERVICE, TPU_SERVICE

    compute: list[Any] = []
    tpu: list[Any] = []
    for region in regions:
        factor = _GCP_REGION_FACTOR.get(region, 1.1)
        for spot, prefix, usage in ((False, "", "OnDemand"), (True, "Spot Preemptible ", "Preemptible")):
            scale = factor * (0.4 if spot else 1.0)
            for family, (core, ram) in _GCP_HOST.items():
                kind = "Predefined " if family == "N1" else ""
                compute.append(gcp_sku(f"{prefix}{family} {kind}Instance Core running in {region}",
                                       [region], core * scale, usage_type=usage,
                                       resource_group="CPU"))
                compute.append(gcp_sku(f"{prefix}{family} {kind}Instance Ram running in {region}",
                                       [region], ram * scale, usage_type=usage,
                                       resource_group="RAM", unit="GiBy.h"))
            for description, _, usd, where in _GCP_GPUS:
                if where is None or region in where:
                    compute.append(gcp_sku(f"{prefix}{description} running in {region}",
                                           [region], usd * scale, usage_type=usage))
            for description, usd, where in _GCP_TPUS:
                if region in where:
                    tpu.append(gcp_sku(f"{description} chip-hour running in {region}",
                                       [region], usd * scale, usage_type=usage,
                                       resource_group="TPU"))
    compute.append(gcp_sku("Commitment v1: A2 Cpu in Americas for 1 Year", list(regions), 0.02,
                           usage_type="Commit1Yr", resource_group="CPU"))
    machines = [
        (f"zones/{region}-a", compute_v1.MachineTypesScopedList(machine_types=[
            compute_v1.MachineType(
                name=name, guest_cpus=vcpus, memory_mb=memory, zone=f"{region}-a",
                accelerators=[compute_v1.Accelerators(guest_accelerator_type=gpu,
                                                      guest_accelerator_count=count)],
            ) for name, (vcpus, memory, gpu, count) in _GCP_MACHINES.items()
        ] + [compute_v1.MachineType(name="n2-standard-8", guest_cpus=8, memory_mb=32768)]))
        for region in regions
    ]
    accelerators = [
        (f"zones/{region}-b", compute_v1.AcceleratorTypesScopedList(accelerator_types=[
            compute_v1.AcceleratorType(name=gpu, maximum_cards_per_instance=8)
            for _, gpu, _, where in _GCP_GPUS if where is None or region in where
        ])) for region in regions
    ]
    catalog = FakeCloudCatalog({COMPUTE_SERVICE: compute, TPU_SERVICE: tpu})
    return catalog, FakeAggregatedList(machines), FakeAggregatedList(accelerators)


# --- Azure -----------------------------------------------------------------------------


def azure_items(offers: Iterable[InstanceOffer]) -> list[dict[str, Any]]:
    """Retail Prices API items for these Azure offers, plus Windows and Low Priority decoys."""
    items = []
    for offer in offers:
        if offer.cloud is not Cloud.AZURE:
            continue
        short = offer.instance_type.removeprefix("Standard_").replace("_", " ")
        product = f"Virtual Machines {short.split(' ', 1)[-1]} Series"
        spot = offer.market is Market.SPOT
        base = {
            "currencyCode": "USD", "tierMinimumUnits": 0.0, "armRegionName": offer.region,
            "location": offer.region, "effectiveStartDate": "2025-01-01T00:00:00Z",
            "meterId": f"meter-{short}-{offer.region}-{offer.market}",
            "meterName": f"{short} Spot" if spot else short,
            "productId": "DZH318Z0BQ4L", "skuId": "DZH318Z0BQ4L/00CV",
            "productName": product,
            "skuName": f"{short} Spot" if spot else short, "serviceName": "Virtual Machines",
            "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute", "unitOfMeasure": "1 Hour",
            "type": "Consumption", "isPrimaryMeterRegion": True,
            "armSkuName": offer.instance_type,
            "retailPrice": offer.price_usd_per_hour, "unitPrice": offer.price_usd_per_hour,
        }
        items.append(base)
        items.append({**base, "productName": product + " Windows",
                      "retailPrice": offer.price_usd_per_hour * 1.4,
                      "unitPrice": offer.price_usd_per_hour * 1.4})
        if not spot:
            items.append({**base, "meterName": f"{short} Low Priority",
                          "retailPrice": offer.price_usd_per_hour * 0.2,
                          "unitPrice": offer.price_usd_per_hour * 0.2})
    return items


class FakeRetailPricesServer:
    """A local Retail Prices API: pages ``items`` (``page_size`` each) via NextPageLink.

    ``fail_on_page=N`` answers page N with HTTP 500; ``requests`` records every path asked.
    Use as a context manager; ``url`` is the base URL to give AzurePriceSource.
    """

    def __init__(self, items: list[dict[str, Any]], *, page_size: int = 10,
                 fail_on_page: int | None = None) -> None:
        self.items, self.page_size, self.fail_on_page = items, page_size, fail_on_page
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server.requests.append(self.path)
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                skip = int(query.get("$skip", ["0"])[0])
                page = skip // server.page_size + 1
                if page == server.fail_on_page:
                    self.send_error(500, "fake failure")
                    return
                chunk = server.items[skip:skip + server.page_size]
                following = skip + server.page_size
                next_link = None
                if following < len(server.items):
                    rest = {k: v[0] for k, v in query.items()} | {"$skip": str(following)}
                    next_link = f"{server.url}?{urllib.parse.urlencode(rest)}"
                body = json.dumps({
                    "BillingCurrency": "USD", "CustomerEntityId": "Default",
                    "CustomerEntityType": "Retail", "Items": chunk,
                    "NextPageLink": next_link, "Count": len(chunk),
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/api/retail/prices"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeRetailPricesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def fixed_clock(when: datetime | None = None) -> Any:
    """A clock that always says ``when`` (default 2025-07-01 12:00 UTC)."""
    moment = when or datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
    return lambda: moment
