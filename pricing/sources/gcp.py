"""GCP prices: Cloud Billing Catalog SKUs composed onto Compute Engine machine shapes.

A GPU VM's price is its host (vCPU SKU x vCPUs + RAM SKU x GiB of the machine family) plus
its GPU SKU x GPU count; spot uses the "Preemptible" SKUs. TPU slices are the per-chip SKU
x chips in the slice. Machine shapes (a2/a3/g2) and where GPUs are offered come from
google-cloud-compute; n1 + GPU combinations are the fixed list ``N1_SHAPES``.
google-cloud-* is imported only when a default client is built; tests inject fakes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pricing.sources._accelerators import device_memory_gib
from pricing.sources.base import Clock, FetchResult, PriceSource, SourceError, utc_now
from pricing.types import Cloud, InstanceOffer, Market

__all__ = [
    "COMPUTE_SERVICE", "GCP_REGIONS", "GPU_TYPES", "N1_SHAPES", "TPU_SERVICE", "TPU_SLICES",
    "GcpPriceSource",
]

COMPUTE_SERVICE = "services/6F81-5844-456A"
TPU_SERVICE = "services/E000-3F24-B8AA"
SOURCE = "gcp cloud billing catalog api + compute machine types"
GCP_REGIONS = (
    "us-central1", "us-east1", "us-east4", "us-east5", "us-west1", "us-west4", "europe-west4",
    "asia-southeast1", "us-central2",
)

# Compute accelerator type -> (canonical accelerator, pattern of its billing SKU description)
GPU_TYPES: dict[str, tuple[str, str]] = {
    "nvidia-a100-80gb": ("A100-80GB-SXM", r"\bA100 80GB\b"),
    "nvidia-tesla-a100": ("A100-40GB-SXM", r"\bA100\b(?! 80GB)"),
    "nvidia-h100-mega-80gb": ("H100-SXM", r"\bH100 80GB Mega\b"),
    "nvidia-h100-80gb": ("H100-SXM", r"\bH100\b(?! 80GB Mega)"),
    "nvidia-h200-141gb": ("H200", r"\bH200\b"),
    "nvidia-l4": ("L4", r"\bL4\b"),
    "nvidia-tesla-t4": ("T4", r"\bT4\b"),
    "nvidia-tesla-v100": ("V100-16GB-SXM2", r"\bV100\b"),
    "nvidia-tesla-p100": ("P100", r"\bP100\b"),
}
# n1 host + attached GPUs: (host machine type, accelerator type, count)
N1_SHAPES: tuple[tuple[str, str, int], ...] = (
    ("n1-standard-8", "nvidia-tesla-t4", 1), ("n1-standard-16", "nvidia-tesla-t4", 2),
    ("n1-standard-32", "nvidia-tesla-t4", 4), ("n1-standard-8", "nvidia-tesla-v100", 1),
    ("n1-standard-16", "nvidia-tesla-v100", 2), ("n1-highmem-16", "nvidia-tesla-v100", 4),
    ("n1-standard-32", "nvidia-tesla-v100", 4), ("n1-standard-8", "nvidia-tesla-p100", 1),
    ("n1-standard-16", "nvidia-tesla-p100", 2),
)
_N1_GIB_PER_VCPU = {"standard": 3.75, "highmem": 6.5, "highcpu": 0.9}
_GPU_SHORT = {"nvidia-tesla-t4": "T4", "nvidia-tesla-v100": "V100", "nvidia-tesla-p100": "P100"}
# TPU slice -> (canonical accelerator, chips); v2-v4/v5p count TensorCores (2 per chip).
TPU_SLICES: dict[str, tuple[str, int]] = {
    "tpu-v2-8": ("TPU-v2", 4), "tpu-v2-32": ("TPU-v2", 16),
    "tpu-v3-8": ("TPU-v3", 4), "tpu-v3-32": ("TPU-v3", 16),
    "tpu-v4-8": ("TPU-v4", 4), "tpu-v4-16": ("TPU-v4", 8), "tpu-v4-32": ("TPU-v4", 16),
    "tpu-v4-64": ("TPU-v4", 32),
    "tpu-v5litepod-1": ("TPU-v5e", 1), "tpu-v5litepod-4": ("TPU-v5e", 4),
    "tpu-v5litepod-8": ("TPU-v5e", 8), "tpu-v5litepod-16": ("TPU-v5e", 16),
    "tpu-v5p-8": ("TPU-v5p", 4), "tpu-v5p-32": ("TPU-v5p", 16), "tpu-v5p-64": ("TPU-v5p", 32),
    "tpu-v5p-128": ("TPU-v5p", 64),
    "tpu-v6e-1": ("TPU-v6e", 1), "tpu-v6e-4": ("TPU-v6e", 4), "tpu-v6e-8": ("TPU-v6e", 8),
    "tpu-v6e-16": ("TPU-v6e", 16), "tpu-v6e-32": ("TPU-v6e", 32),
    "tpu-v6e-64": ("TPU-v6e", 64), "tpu-v6e-128": ("TPU-v6e", 128),
    "tpu-v6e-256": ("TPU-v6e", 256),
}
_HOST_SKU = re.compile(
    r"^(?:Spot Preemptible |Preemptible )?(?P<family>[A-Z]\d+[A-Z]?) (?:Predefined )?"
    r"Instance (?P<part>Core|Ram) running in", re.IGNORECASE,
)
_TPU_SKU = re.compile(r"\bTPU[- ]?v(?P<gen>\d)\s*(?P<kind>e|p|lite)?\b", re.IGNORECASE)
_TPU_GENERATIONS = {
    ("2", ""): "TPU-v2", ("3", ""): "TPU-v3", ("4", ""): "TPU-v4", ("5", "e"): "TPU-v5e",
    ("5", "lite"): "TPU-v5e", ("5", "p"): "TPU-v5p", ("6", "e"): "TPU-v6e",
}
_IGNORED_SKU = re.compile(r"commit|reserv|sole tenan|workstation|dws|calendar|flex", re.I)

_RateKey = tuple[str, str, bool, str]  # (kind, name, spot, region)


@dataclass(frozen=True)
class _Machine:
    vcpus: int
    memory_gib: float
    gpu_type: str
    gpu_count: int
    regions: frozenset[str]


def _usd(sku: Any) -> float:
    rates = sku.pricing_info[0].pricing_expression.tiered_rates
    money = rates[-1].unit_price
    return float(money.units) + float(money.nanos) / 1e9


def _classify(sku: Any) -> tuple[str, str] | None:
    """(kind, name) of a SKU we price with: host core/ram, gpu, or tpu chip."""
    text = str(sku.description)
    if _IGNORED_SKU.search(text):
        return None
    host = _HOST_SKU.match(text)
    if host:
        return f"host-{host['part'].lower()}", host["family"].lower()
    if sku.category.resource_group == "GPU" or " GPU " in f" {text} ":
        for gpu_type, (_, pattern) in GPU_TYPES.items():
            if re.search(pattern, text):
                return "gpu", gpu_type
        return None
    tpu = _TPU_SKU.search(text)
    if tpu:
        generation = _TPU_GENERATIONS.get((tpu["gen"], (tpu["kind"] or "").lower()))
        return ("tpu", generation) if generation else None
    return None


def _rates(skus: Iterable[Any], skipped: list[str]) -> dict[_RateKey, float]:
    rates: dict[_RateKey, float] = {}
    for sku in skus:
        usage = sku.category.usage_type
        if usage not in ("OnDemand", "Preemptible"):
            continue
        found = _classify(sku)
        if found is None:
            continue
        try:
            price = _usd(sku)
        except (IndexError, AttributeError, ValueError) as exc:
            skipped.append(f"sku {sku.sku_id} ({sku.description}): no price ({exc})")
            continue
        if price <= 0:
            skipped.append(f"sku {sku.sku_id} ({sku.description}): zero price")
            continue
        for region in sku.service_regions:
            rates.setdefault((found[0], found[1], usage == "Preemptible", str(region)), price)
    return rates


def _zone_region(zone: str) -> str:
    return zone.removeprefix("zones/").rsplit("-", 1)[0]


class GcpPriceSource(PriceSource):
    """On-demand and spot prices of GCP GPU VMs (a2, a3, g2, n1 + GPU) and TPU slices.

    Pass ``catalog_client`` (CloudCatalogClient-like: ``list_skus(parent=)``) and
    ``machine_types_client`` / ``accelerator_types_client`` (``aggregated_list(request=)``)
    to use other clients than google-cloud's defaults; ``project`` is needed by the compute
    clients (default: the project of the application-default credentials).
    """

    cloud = Cloud.GCP
    default_regions = GCP_REGIONS

    def __init__(
        self,
        *,
        project: str | None = None,
        catalog_client: Any = None,
        machine_types_client: Any = None,
        accelerator_types_client: Any = None,
        families: Sequence[str] = ("a2", "a3", "g2"),
        clock: Clock = utc_now,
    ) -> None:
        self._project = project
        self._catalog = catalog_client
        self._machine_types = machine_types_client
        self._accelerator_types = accelerator_types_client
        self._families = tuple(families)
        self._clock = clock

    def _clients(self) -> tuple[Any, Any, Any, str]:
        catalog, machines, accelerators = (
            self._catalog, self._machine_types, self._accelerator_types,
        )
        if catalog is None:
            from google.cloud import billing_v1

            catalog = billing_v1.CloudCatalogClient()
        if machines is None or accelerators is None:
            from google.cloud import compute_v1

            machines = machines or compute_v1.MachineTypesClient()
            accelerators = accelerators or compute_v1.AcceleratorTypesClient()
        return catalog, machines, accelerators, self._project or _default_project()

    def fetch(self, regions: Sequence[str] | None = None) -> FetchResult:
        """Read SKUs and machine shapes, then compose VM and TPU offers for ``regions``."""
        chosen = self._regions(regions)
        now = self._clock()
        skipped: list[str] = []
        from google.api_core.exceptions import GoogleAPIError
        from google.auth.exceptions import GoogleAuthError

        try:
            catalog, machines_client, accel_client, project = self._clients()
            skus = [*catalog.list_skus(parent=COMPUTE_SERVICE),
                    *catalog.list_skus(parent=TPU_SERVICE)]
            machines = self._machines(machines_client, project)
            gpu_regions = self._gpu_regions(accel_client, project)
        except (GoogleAPIError, GoogleAuthError) as exc:
            raise SourceError(f"GCP API call failed: {exc}") from exc
        if not skus:
            raise SourceError("Cloud Billing Catalog returned no SKUs")
        rates = _rates(skus, skipped)
        offers: list[InstanceOffer] = []
        for region in chosen:
            for spot in (False, True):
                offers.extend(self._vms(region, spot, machines, rates, now, skipped))
                offers.extend(self._n1(region, spot, gpu_regions, rates, now, skipped))
                offers.extend(self._tpus(region, spot, rates, now))
        return FetchResult(
            cloud=self.cloud, offers=tuple(offers), captured_at=now, regions=chosen,
            skipped=tuple(skipped),
        )

    def _machines(self, client: Any, project: str) -> dict[str, _Machine]:
        pattern = "|".join(re.escape(f) for f in self._families)
        request = {"project": project, "filter": f'name eq "({pattern})-.*"'}
        shapes: dict[str, tuple[int, float, str, int, set[str]]] = {}
        for zone, scoped in client.aggregated_list(request=request):
            for machine in scoped.machine_types:
                family = str(machine.name).split("-")[0]
                if family not in self._families or not machine.accelerators:
                    continue
                accelerator = machine.accelerators[0]
                entry = shapes.setdefault(machine.name, (
                    int(machine.guest_cpus), machine.memory_mb / 1024,
                    str(accelerator.guest_accelerator_type),
                    int(accelerator.guest_accelerator_count), set(),
                ))
                entry[4].add(_zone_region(zone))
        return {
            name: _Machine(vcpus=v, memory_gib=m, gpu_type=g, gpu_count=c, regions=frozenset(r))
            for name, (v, m, g, c, r) in shapes.items()
        }

    def _gpu_regions(self, client: Any, project: str) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for zone, scoped in client.aggregated_list(request={"project": project}):
            for accelerator in scoped.accelerator_types:
                found.setdefault(str(accelerator.name), set()).add(_zone_region(zone))
        return found

    def _offer(
        self, name: str, region: str, spot: bool, accelerator: str, count: int, price: float,
        now: datetime, *, vcpus: int | None = None, memory_gib: float | None = None,
    ) -> InstanceOffer:
        return InstanceOffer(
            cloud=Cloud.GCP, region=region, zone=None, instance_type=name,
            accelerator=accelerator, accelerator_count=count, vcpus=vcpus,
            memory_gib=round(memory_gib, 2) if memory_gib is not None else None,
            accelerator_memory_gib=device_memory_gib(accelerator, None),
            market=Market.SPOT if spot else Market.ON_DEMAND,
            price_usd_per_hour=round(price, 6), source=SOURCE, observed_at=now.date(),
        )

    def _host(
        self, family: str, vcpus: int, memory_gib: float, region: str, spot: bool,
        rates: dict[_RateKey, float],
    ) -> float | None:
        core = rates.get(("host-core", family, spot, region))
        ram = rates.get(("host-ram", family, spot, region))
        return None if core is None or ram is None else core * vcpus + ram * memory_gib

    def _vms(
        self, region: str, spot: bool, machines: dict[str, _Machine],
        rates: dict[_RateKey, float], now: datetime, skipped: list[str],
    ) -> Iterable[InstanceOffer]:
        for name, machine in sorted(machines.items()):
            if region not in machine.regions or machine.gpu_type not in GPU_TYPES:
                continue
            host = self._host(name.split("-")[0], machine.vcpus, machine.memory_gib, region,
                              spot, rates)
            gpu = rates.get(("gpu", machine.gpu_type, spot, region))
            if host is None or gpu is None:
                skipped.append(f"{region} {name} {'spot' if spot else 'on-demand'}: "
                               f"no {'host' if host is None else 'GPU'} SKU price")
                continue
            yield self._offer(name, region, spot, GPU_TYPES[machine.gpu_type][0],
                              machine.gpu_count, host + gpu * machine.gpu_count, now,
                              vcpus=machine.vcpus, memory_gib=machine.memory_gib)

    def _n1(
        self, region: str, spot: bool, gpu_regions: dict[str, set[str]],
        rates: dict[_RateKey, float], now: datetime, skipped: list[str],
    ) -> Iterable[InstanceOffer]:
        for host_type, gpu_type, count in N1_SHAPES:
            if region not in gpu_regions.get(gpu_type, set()):
                continue
            _, kind, size = host_type.split("-")
            vcpus = int(size)
            memory = vcpus * _N1_GIB_PER_VCPU[kind]
            host = self._host("n1", vcpus, memory, region, spot, rates)
            gpu = rates.get(("gpu", gpu_type, spot, region))
            name = f"{host_type}+{count}x{_GPU_SHORT[gpu_type]}"
            if host is None or gpu is None:
                skipped.append(f"{region} {name}: no {'host' if host is None else 'GPU'} price")
                continue
            yield self._offer(name, region, spot, GPU_TYPES[gpu_type][0], count,
                              host + gpu * count, now, vcpus=vcpus, memory_gib=memory)

    def _tpus(
        self, region: str, spot: bool, rates: dict[_RateKey, float], now: datetime,
    ) -> Iterable[InstanceOffer]:
        for name, (accelerator, chips) in TPU_SLICES.items():
            per_chip = rates.get(("tpu", accelerator, spot, region))
            if per_chip is not None:
                yield self._offer(name, region, spot, accelerator, chips, per_chip * chips, now)


def _default_project() -> str:
    import google.auth

    _, project = google.auth.default()
    if not project:
        raise SourceError("no GCP project: set GOOGLE_CLOUD_PROJECT or run "
                          "'gcloud config set project <id>'")
    return str(project)
