"""Typed records of the price catalog: clouds, markets, accelerators and offers."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import date

from pricing.errors import PricingError

__all__ = ["AcceleratorSpec", "Cloud", "InstanceOffer", "Market"]


class Cloud(enum.StrEnum):
    """A cloud provider."""

    AWS = "aws"
    GCP = "gcp"
    AZURE = "azure"


class Market(enum.StrEnum):
    """How an instance is bought: on demand, or as interruptible spot capacity."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"


@dataclass(frozen=True, slots=True)
class AcceleratorSpec:
    """Datasheet figures of one accelerator device (one GPU, TPU chip, Gaudi card).

    TFLOPS are dense peak per device; ``None`` where the vendor publishes none.
    ``training`` is False for inference-only parts (Inferentia); ``generation`` is an
    architecture label such as ``ampere`` or ``tpu-v5``.
    """

    name: str
    vendor: str
    year: int
    generation: str
    fp32_tflops: float | None
    bf16_tflops: float | None
    memory_gib: float
    memory_bandwidth_gbs: float
    interconnect: str
    tensor_cores: bool
    supports_bf16: bool
    training: bool
    source: str

    def peak_tflops(self, *, low_precision: bool) -> float:
        """Peak TFLOPS for training at fp32 (or tf32 off) or at bf16/fp16 autocast."""
        if low_precision and self.bf16_tflops:
            return self.bf16_tflops
        if self.fp32_tflops:
            return self.fp32_tflops
        if self.bf16_tflops:
            return self.bf16_tflops
        raise PricingError(f"accelerator {self.name} has no TFLOPS figure in the specs table")


@dataclass(frozen=True, slots=True)
class InstanceOffer:
    """One way to rent accelerators: an instance type in a region, on one market, at a price.

    ``accelerator_count`` counts devices (GPUs, TPU chips, Trainium chips, Gaudi cards);
    ``accelerator_memory_gib`` is per device. ``flagged`` carries why a consistency
    check doubts the price, rendered from ``pricing.flags.PriceFlag`` records (rule and the
    figures compared; empty when it looks sound).
    """

    cloud: Cloud
    region: str
    zone: str | None
    instance_type: str
    accelerator: str
    accelerator_count: int
    vcpus: int | None
    memory_gib: float | None
    accelerator_memory_gib: float
    market: Market
    price_usd_per_hour: float
    source: str
    observed_at: date
    flagged: str = ""

    def __post_init__(self) -> None:
        if self.accelerator_count < 1:
            raise PricingError(
                f"offer {self.instance_type}: accelerator_count must be >= 1, "
                f"got {self.accelerator_count}"
            )
        if not self.price_usd_per_hour > 0:
            raise PricingError(
                f"offer {self.instance_type} in {self.region}: price_usd_per_hour must be > 0, "
                f"got {self.price_usd_per_hour}"
            )

    @property
    def key(self) -> str:
        """``cloud:instance_type:region:market``, the id users write (``aws:g5.xlarge:us-east-1:spot``)."""
        return f"{self.cloud}:{self.instance_type}:{self.region}:{self.market}"

    @property
    def sort_key(self) -> tuple[str, str, str, str]:
        """(cloud, instance type, region, market): the order of offers that tie elsewhere."""
        return (self.cloud.value, self.instance_type, self.region, self.market.value)

    @property
    def price_usd_per_accelerator_hour(self) -> float:
        """Price of one device-hour on this offer."""
        return self.price_usd_per_hour / self.accelerator_count
