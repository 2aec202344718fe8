"""Rebuild the shipped catalog files from the hand-gathered tables in ``shared/data``.

Run ``python -m pricing._import_shared ../shared/data``. The output is the project's own
data: canonical accelerator names, one row per (offer, market), a ``source`` column and the
snapshot's capture date, then the hand-kept newer prices of ``data/offers_supplement.csv``
merged in (each with its own source and date, saying which price it replaced). A test checks
that the shipped files equal what this produces.
"""

from __future__ import annotations

import csv
import io
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from pricing.checks import list_cluster
from pricing.flags import FlagRule, PriceFlag, render_flags

__all__ = [
    "CAPTURED_AT",
    "SUPPLEMENT_COLUMNS",
    "apply_supplement",
    "build_accelerators",
    "build_offers",
    "main",
]

# The source snapshot carries no date. It has p5en, TPU v6e and a3-ultragpu (GA Dec 2024 -
# Jan 2025) and AWS P4/P5 prices from before the June 2025 cut (p5.48xlarge 98.32/h): so
# early 2025. The date is approximate and the catalog says so.
CAPTURED_AT = "2025-03-01"
PRICE_SOURCE = "skypilot-catalog v7 (v8 for trn, v6 for azure), hand-extracted"

ACCELERATOR_COLUMNS = [
    "name", "vendor", "year", "generation", "fp32_tflops", "bf16_tflops", "memory_gib",
    "memory_bandwidth_gbs", "interconnect", "tensor_cores", "supports_bf16", "training",
    "source", "captured_at",
]
OFFER_COLUMNS = [
    "cloud", "region", "zone", "instance_type", "accelerator", "accelerator_count", "vcpus",
    "memory_gib", "accelerator_memory_gib", "market", "price_usd_per_hour", "flagged",
    "source", "observed_at",
]
# The supplement is an offer row plus the snapshot price it replaces (blank: a new offer).
SUPPLEMENT_COLUMNS = [*OFFER_COLUMNS, "replaces_usd_per_hour"]
SUPPLEMENT_FILE = "offers_supplement.csv"
_KEY = ("cloud", "region", "instance_type", "market")
# Columns a replacing row must copy unchanged from the row it replaces.
_SAME_AS_REPLACED = [c for c in OFFER_COLUMNS
                     if c not in ("price_usd_per_hour", "source", "observed_at")]

# name -> (generation, interconnect); tensor cores / bf16 / training follow from generation.
_ARCH: dict[str, tuple[str, str]] = {
    "K80": ("kepler", "pcie"), "P100": ("pascal", "pcie"),
    "V100-16GB-SXM2": ("volta", "nvlink"), "V100-32GB-SXM2": ("volta", "nvlink"),
    "T4": ("turing", "pcie"), "Quadro-RTX-6000": ("turing", "pcie"),
    "Quadro-RTX-8000": ("turing", "pcie"), "Titan-RTX": ("turing", "pcie"),
    "RTX-2080Ti": ("turing", "pcie"), "GTX-1080Ti": ("pascal", "pcie"),
    "A10": ("ampere", "pcie"), "A10G": ("ampere", "pcie"), "A40": ("ampere", "pcie"),
    "RTX-A6000": ("ampere", "pcie"), "RTX-3090": ("ampere", "pcie"),
    "A100-40GB-SXM": ("ampere", "nvlink"), "A100-40GB-PCIe": ("ampere", "pcie"),
    "A100-80GB-SXM": ("ampere", "nvlink"), "A100-80GB-PCIe": ("ampere", "pcie"),
    "L4": ("ada", "pcie"), "L40S": ("ada", "pcie"), "RTX-6000-Ada": ("ada", "pcie"),
    "RTX-4090": ("ada", "pcie"),
    "H100-SXM": ("hopper", "nvlink"), "H100-PCIe": ("hopper", "pcie"),
    "H100-NVL": ("hopper", "pcie"), "H200": ("hopper", "nvlink"), "GH200": ("hopper", "nvlink"),
    "B200": ("blackwell", "nvlink"),
    "TPU-v2": ("tpu-v2", "ici"), "TPU-v3": ("tpu-v3", "ici"), "TPU-v4": ("tpu-v4", "ici"),
    "TPU-v5e": ("tpu-v5e", "ici"), "TPU-v5p": ("tpu-v5p", "ici"), "TPU-v6e": ("tpu-v6e", "ici"),
    "Gaudi": ("gaudi1", "roce"), "Gaudi2": ("gaudi2", "roce"), "Gaudi3": ("gaudi3", "roce"),
    "Trainium1": ("trainium1", "neuronlink"), "Trainium2": ("trainium2", "neuronlink"),
    "Inferentia2": ("inferentia2", "neuronlink"),
}
_NO_TENSOR_CORES = {"kepler", "pascal"}
_NO_BF16 = {"kepler", "pascal", "volta", "turing"}
_INFERENCE_ONLY = {"inferentia2"}

# cloud -> price-table accelerator -> canonical spec name (None: left out of the catalog).
_OFFER_ACCELERATOR: dict[str, dict[str, str | None]] = {
    "aws": {"V100": "V100-16GB-SXM2", "V100-32GB": "V100-32GB-SXM2", "A100": "A100-40GB-SXM",
            "A100-80GB": "A100-80GB-SXM", "H100": "H100-SXM", "Gaudi HL-205": "Gaudi",
            "Trainium": "Trainium1",
            "Qualcomm AI100": None},  # inference card with no spec row
    "azure": {"A100": "A100-40GB-SXM"},
    "gcp": {"A100": "A100-40GB-SXM", "A100-80GB": "A100-80GB-SXM", "H100": "H100-SXM",
            "V100": "V100-16GB-SXM2",
            **{f"tpu-{v}": f"TPU-{v}" for v in ("v2", "v3", "v4", "v5e", "v5p", "v6e")}},
}
# (cloud, price-table accelerator) -> (instance-type prefix, canonical name): one name that
# stands for two parts, told apart by the instance family; first prefix that matches wins.
_BY_INSTANCE_PREFIX: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("azure", "A100-80GB"): (("Standard_ND", "A100-80GB-SXM"), ("Standard_NC", "A100-80GB-PCIe")),
    ("azure", "H100"): (("Standard_ND", "H100-SXM"), ("Standard_NC", "H100-NVL")),
}

# Spot prices seen in one availability zone only.
_SINGLE_ZONE_SPOT = frozenset({("aws", "trn2.48xlarge")})


def _on_demand_flags(prices: list[dict[str, str]]) -> dict[tuple[str, str, str], PriceFlag]:
    """A flag per (cloud, instance type, region) whose on-demand price the table marks
    untrusted: ``below-list-cluster`` where that check finds it too (so a rebuild and
    ``pricing.checks`` agree), else ``source-doubt`` against the median of the SKU's trusted
    regions.

    Only the on-demand price: the table's doubt is about a non-list on-demand price, and the
    same row's spot price is a market price that stands on its own.
    """
    regional: dict[tuple[str, str], list[float]] = defaultdict(list)
    trusted: dict[tuple[str, str], list[float]] = defaultdict(list)
    for price in prices:
        if price["price_on_demand_usd_per_hour"]:
            sku, value = (price["cloud"], price["instance_type"]), float(
                price["price_on_demand_usd_per_hour"])
            regional[sku].append(value)
            if price["trusted"] == "true":
                trusted[sku].append(value)
    flags = {}
    for price in prices:
        on_demand = price["price_on_demand_usd_per_hour"]
        if price["trusted"] == "true" or not on_demand:
            continue
        sku, value = (price["cloud"], price["instance_type"]), float(on_demand)
        cluster = list_cluster(regional[sku])
        if cluster is not None and value < cluster[2]:
            flag = PriceFlag(FlagRule.BELOW_LIST_CLUSTER, value, cluster[0], cluster[1])
        else:
            others = trusted[sku]
            flag = PriceFlag(FlagRule.SOURCE_DOUBT, value,
                             statistics.median(others) if others else None, len(others))
        flags[(*sku, price["region"])] = flag
    return flags


def _canonical_accelerator(cloud: str, name: str, instance_type: str) -> str | None:
    """The spec name of a price-table accelerator; a name no rule knows stays as it is."""
    for prefix, canonical in _BY_INSTANCE_PREFIX.get((cloud, name), ()):
        if instance_type.startswith(prefix):
            return canonical
    return _OFFER_ACCELERATOR.get(cloud, {}).get(name, name)


def _num(text: str) -> str:
    """Normalise a number: blank stays blank, integers lose their '.0'."""
    if not text.strip():
        return ""
    value = float(text)
    return str(int(value)) if value.is_integer() else repr(round(value, 6))


def build_accelerators(specs_csv: str) -> list[dict[str, str]]:
    """Turn the datasheet table into the catalog's accelerator rows."""
    rows = []
    for spec in csv.DictReader(io.StringIO(specs_csv)):
        generation, interconnect = _ARCH[spec["name"]]
        rows.append({
            "name": spec["name"],
            "vendor": spec["vendor"],
            "year": spec["year"],
            "generation": generation,
            "fp32_tflops": _num(spec["fp32_tflops"]),
            "bf16_tflops": _num(spec["fp16_bf16_tensor_tflops_dense"]),
            "memory_gib": _num(spec["memory_gb"]),
            "memory_bandwidth_gbs": _num(spec["mem_bw_gbs"]),
            "interconnect": interconnect,
            "tensor_cores": str(generation not in _NO_TENSOR_CORES).lower(),
            "supports_bf16": str(generation not in _NO_BF16).lower(),
            "training": str(generation not in _INFERENCE_ONLY).lower(),
            "source": spec["source"],
            "captured_at": CAPTURED_AT,
        })
    return rows


def build_offers(prices_csv: str, accelerators: list[dict[str, str]]) -> list[dict[str, str]]:
    """Turn the price table into one catalog row per (instance, region, market)."""
    memory_by_name = {a["name"]: float(a["memory_gib"]) for a in accelerators}
    prices = list(csv.DictReader(io.StringIO(prices_csv)))
    doubted = _on_demand_flags(prices)
    rows = []
    for price in prices:
        cloud, instance_type = price["cloud"], price["instance_type"]
        accelerator = _canonical_accelerator(cloud, price["accelerator"], instance_type)
        if accelerator is None:
            continue
        count = int(price["accelerator_count"])
        total_memory = price["accelerator_memory_gb"]
        per_device = float(total_memory) / count if total_memory else memory_by_name[accelerator]
        doubt = doubted.get((cloud, instance_type, price["region"]))
        base = {
            "cloud": cloud, "region": price["region"], "zone": "",
            "instance_type": instance_type, "accelerator": accelerator,
            "accelerator_count": str(count), "vcpus": _num(price["vcpus"]),
            "memory_gib": _num(price["memory_gb"]),
            "accelerator_memory_gib": _num(str(per_device)),
            "source": PRICE_SOURCE, "observed_at": CAPTURED_AT,
        }
        on_demand = price["price_on_demand_usd_per_hour"]
        spot = price["price_spot_usd_per_hour"]
        if on_demand:
            rows.append({**base, "market": "on-demand", "price_usd_per_hour": _num(on_demand),
                         "flagged": render_flags([doubt] if doubt else [])})
        # spot >= on-demand means the catalog has no usable spot market there
        if spot and (not on_demand or float(spot) < float(on_demand)):
            single_zone = (cloud, instance_type) in _SINGLE_ZONE_SPOT
            spot_flags = [PriceFlag(FlagRule.SINGLE_ZONE_SPOT, float(spot))] if single_zone else []
            rows.append({**base, "market": "spot", "price_usd_per_hour": _num(spot),
                         "flagged": render_flags(spot_flags)})
    rows.sort(key=lambda r: (r["cloud"], r["instance_type"], r["region"], r["market"]))
    return rows


def _supplement_row(
    line: int, row: dict[str, str], by_key: dict[tuple[str, ...], dict[str, str]],
) -> tuple[tuple[str, ...], dict[str, str]]:
    """Check one supplement row and return its key and the catalog row it becomes."""
    where = f"{SUPPLEMENT_FILE}:{line}"
    for column in ("source", "observed_at", "price_usd_per_hour"):
        if not (row.get(column) or "").strip():
            raise ValueError(f"{where}: {column} is empty; every supplement row needs it")
    if row["observed_at"] <= CAPTURED_AT:
        raise ValueError(f"{where}: observed_at {row['observed_at']} is not newer than the "
                         f"snapshot ({CAPTURED_AT}); a supplement only adds newer prices")
    key = tuple(row[c] for c in _KEY)
    merged = {c: row[c] for c in OFFER_COLUMNS}
    old_price = row["replaces_usd_per_hour"].strip()
    if not old_price:
        if key in by_key:
            raise ValueError(f"{where}: {key} is already in the snapshot; set "
                             "replaces_usd_per_hour to the price it replaces")
        return key, merged
    old = by_key.get(key)
    if old is None:
        raise ValueError(f"{where}: {key} is not in the snapshot, so it replaces nothing; "
                         "leave replaces_usd_per_hour blank for a new offer")
    if float(old["price_usd_per_hour"]) != float(old_price):
        raise ValueError(f"{where}: replaces_usd_per_hour {old_price} is not the snapshot's "
                         f"price {old['price_usd_per_hour']}")
    changed = [c for c in _SAME_AS_REPLACED if row[c] != old[c]]
    if changed:
        raise ValueError(f"{where}: {', '.join(changed)} differ from the replaced row")
    merged["source"] = (f"{row['source']}; replaces {old['price_usd_per_hour']} USD/h of "
                        f"{old['source']} ({old['observed_at']})")
    return key, merged


def apply_supplement(offers: list[dict[str, str]], supplement_csv: str) -> list[dict[str, str]]:
    """Merge newer prices and offers into the rebuilt rows, sorted as ``build_offers`` sorts.

    A supplement row with ``replaces_usd_per_hour`` replaces the snapshot row of the same
    (cloud, region, instance type, market), which must exist at that price and agree on every
    other column; its ``source`` then names the price, source and date it replaced. A row
    without it is a new offer. Every row needs a source and a date newer than the snapshot.
    Raises ValueError naming the supplement line otherwise.
    """
    by_key = {tuple(o[c] for c in _KEY): o for o in offers}
    merged = dict(by_key)
    for line, row in enumerate(csv.DictReader(io.StringIO(supplement_csv)), start=2):
        key, new = _supplement_row(line, row, by_key)
        if key in merged and merged[key] is not by_key.get(key):
            raise ValueError(f"{SUPPLEMENT_FILE}:{line}: {key} appears twice in the supplement")
        merged[key] = new
    return sorted(merged.values(),
                  key=lambda r: (r["cloud"], r["instance_type"], r["region"], r["market"]))


def _write(path: Path, columns: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    """Write ``pricing/data/accelerators.csv`` and ``pricing/data/offers.csv`` (supplement merged)."""
    shared = Path((argv or sys.argv[1:] or ["../shared/data"])[0])
    out = Path(__file__).parent / "data"
    accelerators = build_accelerators((shared / "specs/accelerator_specs.csv").read_text())
    offers = build_offers((shared / "prices/accelerator_prices.csv").read_text(), accelerators)
    offers = apply_supplement(offers, (out / SUPPLEMENT_FILE).read_text())
    _write(out / "accelerators.csv", ACCELERATOR_COLUMNS, accelerators)
    _write(out / "offers.csv", OFFER_COLUMNS, offers)
    print(f"{len(accelerators)} accelerators, {len(offers)} offers -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
