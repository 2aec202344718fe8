"""The price catalog: shipped (or refreshed) offers and accelerator specs, with pure queries.

Files are CSV with a schema version in ``pricing/data/manifest.json``; they are read once, on
first use, with the standard library (no pandas on the start-up path).
"""

from __future__ import annotations

import csv
import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path

from pricing.errors import PricingError, UnknownNameError
from pricing.types import AcceleratorSpec, Cloud, InstanceOffer, Market

__all__ = [
    "SHIPPED_DATA_DIR",
    "Catalog",
    "canonical_accelerator_name",
    "load_accelerators",
    "load_catalog",
    "read_offers_csv",
    "shipped_catalog",
]

SHIPPED_DATA_DIR = Path(__file__).parent / "data"
SCHEMA_VERSION = 1

# Names people type -> the catalog's canonical accelerator names.
_ALIASES = {
    "v100": "V100-16GB-SXM2", "v10032gb": "V100-32GB-SXM2",
    "a100": "A100-40GB-SXM", "a10040gb": "A100-40GB-SXM", "a10080gb": "A100-80GB-SXM",
    "h100": "H100-SXM", "h100sxm5": "H100-SXM", "h100pcie": "H100-PCIe",
    "gaudi1": "Gaudi", "gaudihl205": "Gaudi", "trainium": "Trainium1", "trn1": "Trainium1",
    "trn2": "Trainium2", "tpuv5litepod": "TPU-v5e", "v5e": "TPU-v5e", "v5p": "TPU-v5p",
    "v6e": "TPU-v6e", "v4": "TPU-v4", "v3": "TPU-v3", "v2": "TPU-v2",
    "rtx6000ada": "RTX-6000-Ada", "a6000": "RTX-A6000", "2080ti": "RTX-2080Ti",
    "3090": "RTX-3090", "4090": "RTX-4090", "1080ti": "GTX-1080Ti",
}


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _parse_bool(text: str) -> bool:
    return text.strip().lower() in {"true", "1", "yes"}


def _opt_float(text: str) -> float | None:
    return float(text) if text.strip() else None


@cache
def load_accelerators(path: Path = SHIPPED_DATA_DIR / "accelerators.csv") -> dict[str, AcceleratorSpec]:
    """Accelerator specs by canonical name."""
    specs: dict[str, AcceleratorSpec] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            specs[row["name"]] = AcceleratorSpec(
                name=row["name"], vendor=row["vendor"], year=int(row["year"]),
                generation=row["generation"], fp32_tflops=_opt_float(row["fp32_tflops"]),
                bf16_tflops=_opt_float(row["bf16_tflops"]), memory_gib=float(row["memory_gib"]),
                memory_bandwidth_gbs=float(row["memory_bandwidth_gbs"]),
                interconnect=row["interconnect"], tensor_cores=_parse_bool(row["tensor_cores"]),
                supports_bf16=_parse_bool(row["supports_bf16"]),
                training=_parse_bool(row["training"]), source=row["source"],
            )
    return specs


def canonical_accelerator_name(name: str, known: Iterable[str] | None = None) -> str:
    """Resolve a user's accelerator name (``a100``, ``H100``, ``tpu-v5e``) to the catalog's.

    Raises UnknownNameError with close matches when nothing fits.
    """
    names = list(known) if known is not None else list(load_accelerators())
    by_squash = {_squash(n): n for n in names}
    squashed = _squash(name)
    if squashed in by_squash:
        return by_squash[squashed]
    if squashed in _ALIASES and _ALIASES[squashed] in names:
        return _ALIASES[squashed]
    raise UnknownNameError(f"unknown accelerator {name!r}{_did_you_mean(name, names)}")


def _did_you_mean(name: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    if not close:
        close = [c for c in choices if _squash(name) in _squash(c)][:3]
    return f"; did you mean {', '.join(close)}?" if close else ""


def read_offers_csv(path: Path) -> list[InstanceOffer]:
    """Read one offers CSV (shipped or a refreshed snapshot) into offers."""
    offers = []
    with path.open(newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                offers.append(InstanceOffer(
                    cloud=Cloud(row["cloud"]), region=row["region"], zone=row["zone"] or None,
                    instance_type=row["instance_type"], accelerator=row["accelerator"],
                    accelerator_count=int(row["accelerator_count"]),
                    vcpus=int(row["vcpus"]) if row["vcpus"] else None,
                    memory_gib=_opt_float(row["memory_gib"]),
                    accelerator_memory_gib=float(row["accelerator_memory_gib"]),
                    market=Market(row["market"]),
                    price_usd_per_hour=float(row["price_usd_per_hour"]),
                    flagged=row["flagged"], source=row["source"],
                    observed_at=date.fromisoformat(row["observed_at"]),
                ))
            except (KeyError, ValueError) as exc:
                raise PricingError(f"{path}:{line}: bad offer row ({exc})") from exc
    return offers


@dataclass(frozen=True)
class Catalog:
    """Offers and accelerator specs, with the capture date of each cloud's prices."""

    offers: tuple[InstanceOffer, ...]
    accelerators: dict[str, AcceleratorSpec]
    captured_at: dict[Cloud, date]
    approximate_dates: frozenset[Cloud] = field(default_factory=frozenset)

    @property
    def oldest_capture(self) -> date:
        """The oldest capture date among the clouds in the catalog."""
        return min(self.captured_at.values())

    def regions(self, cloud: Cloud | None = None) -> list[str]:
        """Sorted regions that have at least one offer."""
        return sorted({o.region for o in self.offers if cloud is None or o.cloud == cloud})

    def accelerator(self, name: str) -> AcceleratorSpec:
        """The spec of an accelerator by canonical name or alias."""
        return self.accelerators[canonical_accelerator_name(name, self.accelerators)]

    def check_regions(self, regions: Iterable[str]) -> None:
        """Raise UnknownNameError naming any region with no offer, with suggestions."""
        known = self.regions()
        for region in regions:
            if region not in known:
                raise UnknownNameError(f"unknown region {region!r}{_did_you_mean(region, known)}")

    def query(
        self,
        *,
        clouds: Iterable[Cloud] | None = None,
        regions: Iterable[str] | None = None,
        accelerators: Iterable[str] | None = None,
        markets: Iterable[Market] | None = None,
    ) -> list[InstanceOffer]:
        """Offers matching every filter given (None means no filter on that field)."""
        cloud_set = set(clouds) if clouds is not None else None
        region_set = set(regions) if regions is not None else None
        market_set = set(markets) if markets is not None else None
        accel_set = (
            {canonical_accelerator_name(a, self.accelerators) for a in accelerators}
            if accelerators is not None else None
        )
        return [
            o for o in self.offers
            if (cloud_set is None or o.cloud in cloud_set)
            and (region_set is None or o.region in region_set)
            and (market_set is None or o.market in market_set)
            and (accel_set is None or o.accelerator in accel_set)
        ]


def _read_manifest(data_dir: Path) -> dict[str, object]:
    manifest: dict[str, object] = json.loads((data_dir / "manifest.json").read_text())
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise PricingError(
            f"{data_dir / 'manifest.json'}: schema_version {manifest.get('schema_version')} "
            f"is not {SCHEMA_VERSION}; reinstall advisor or run 'advisor pricing refresh'"
        )
    return manifest


def load_catalog(overrides: dict[Cloud, Path] | None = None) -> Catalog:
    """The shipped catalog, with each cloud in ``overrides`` replaced by that snapshot file."""
    manifest = _read_manifest(SHIPPED_DATA_DIR)
    offers = read_offers_csv(SHIPPED_DATA_DIR / "offers.csv")
    shipped_date = date.fromisoformat(str(manifest["captured_at"]))
    captured = {c: shipped_date for c in {o.cloud for o in offers}}
    approximate = {c for c in captured if manifest.get("captured_at_approximate")}
    for cloud, path in (overrides or {}).items():
        fresh = read_offers_csv(path)
        offers = [o for o in offers if o.cloud != cloud] + fresh
        if fresh:
            captured[cloud] = max(o.observed_at for o in fresh)
            approximate.discard(cloud)
    return Catalog(
        offers=tuple(offers), accelerators=load_accelerators(),
        captured_at=captured, approximate_dates=frozenset(approximate),
    )


@cache
def shipped_catalog() -> Catalog:
    """The catalog exactly as shipped with the package (cached)."""
    return load_catalog()
