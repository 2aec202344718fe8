"""A fake GCP price API: ``FakeCloudCatalog`` / ``FakeAggregatedList`` stand in for
CloudCatalogClient and the compute MachineTypes/AcceleratorTypes clients, returning real
google-cloud message types; ``gcp_fake_clients`` fills them with a2, a3, g2, n1 and TPU prices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["FakeAggregatedList", "FakeCloudCatalog", "gcp_fake_clients", "gcp_sku"]


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
