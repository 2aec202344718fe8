"""Dated price snapshots on disk: write atomically, find the newest per cloud, list them.

Layout, under a directory the caller passes in (the CLI uses ``<data dir>/snapshots``)::

    <dir>/<cloud>/<YYYYmmddTHHMMSSZ>.csv    offers, same columns as the shipped offers.csv
    <dir>/<cloud>/<YYYYmmddTHHMMSSZ>.json   meta: captured_at, row counts, regions, skipped

A snapshot counts only once its meta file exists; both files are written to a temporary
name and renamed into place (CSV first, meta last), so a refresh that dies half-way leaves
the previous snapshot the newest, whole.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pricing._import_shared import OFFER_COLUMNS
from pricing.accelerators import SHIPPED_DATA_DIR
from pricing.catalog import Catalog, load_catalog, shipped_catalog
from pricing.errors import PricingError, SnapshotError
from pricing.files import atomic_write
from pricing.records import JsonView
from pricing.types import Cloud, InstanceOffer

__all__ = [
    "SnapshotInfo",
    "current_catalog",
    "newest_snapshots",
    "snapshot_status",
    "write_offers_csv",
    "write_snapshot",
]

_STAMP = "%Y%m%dT%H%M%SZ"


@dataclass(frozen=True)
class SnapshotInfo(JsonView):
    """One snapshot (or the shipped catalog) as ``advisor pricing status`` lists it.

    ``age_days`` is measured from ``captured_at`` to the ``now`` given to ``snapshot_status``;
    ``in_use`` is True for the file the catalog reads for that cloud.
    """

    cloud: Cloud
    path: Path
    captured_at: datetime
    rows: int
    rows_by_market: dict[str, int]
    flagged_rows: int
    regions: tuple[str, ...]
    skipped: int
    shipped: bool
    in_use: bool
    age_days: float

    def to_dict(self) -> dict[str, Any]:
        """A plain-JSON dict of this record (``advisor pricing status --json``; the age to
        the hundredth of a day)."""
        return {
            "cloud": self.cloud.value, "path": str(self.path),
            "captured_at": self.captured_at.isoformat(), "rows": self.rows,
            "rows_by_market": self.rows_by_market, "flagged_rows": self.flagged_rows,
            "regions": list(self.regions), "skipped": self.skipped, "shipped": self.shipped,
            "in_use": self.in_use, "age_days": round(self.age_days, 2),
        }


def _offer_row(offer: InstanceOffer) -> dict[str, str]:
    def num(value: float | int | None) -> str:
        if value is None:
            return ""
        return str(int(value)) if float(value).is_integer() else repr(round(float(value), 6))

    return {
        "cloud": offer.cloud.value, "region": offer.region, "zone": offer.zone or "",
        "instance_type": offer.instance_type, "accelerator": offer.accelerator,
        "accelerator_count": str(offer.accelerator_count), "vcpus": num(offer.vcpus),
        "memory_gib": num(offer.memory_gib),
        "accelerator_memory_gib": num(offer.accelerator_memory_gib),
        "market": offer.market.value, "price_usd_per_hour": num(offer.price_usd_per_hour),
        "flagged": offer.flagged, "source": offer.source,
        "observed_at": offer.observed_at.isoformat(),
    }


def write_offers_csv(path: Path, offers: Sequence[InstanceOffer]) -> None:
    """Write offers in the catalog's CSV format (readable by ``read_offers_csv``), atomically."""
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=OFFER_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_offer_row(o) for o in offers)
    atomic_write(path, buffer.getvalue())


def write_snapshot(
    directory: Path,
    cloud: Cloud,
    offers: Sequence[InstanceOffer],
    *,
    captured_at: datetime,
    regions: Sequence[str] = (),
    skipped: Sequence[str] = (),
    note: str = "",
) -> Path:
    """Write ``<directory>/<cloud>/<stamp>.csv`` and its meta; return the CSV path."""
    if not offers:
        raise PricingError(f"{cloud}: refusing to write an empty snapshot")
    if any(o.cloud != cloud for o in offers):
        raise PricingError(f"{cloud}: snapshot holds offers of another cloud")
    stamp = captured_at.astimezone(UTC).strftime(_STAMP)
    csv_path = directory / cloud.value / f"{stamp}.csv"
    if csv_path.exists():
        raise PricingError(f"{csv_path} already exists; wait a second and refresh again")
    write_offers_csv(csv_path, offers)
    meta = {
        "cloud": cloud.value, "captured_at": captured_at.astimezone(UTC).isoformat(),
        "rows": len(offers), "rows_by_market": dict(Counter(o.market.value for o in offers)),
        "flagged_rows": sum(1 for o in offers if o.flagged), "regions": list(regions),
        "skipped": len(skipped), "skipped_examples": list(skipped[:20]), "note": note,
    }
    atomic_write(csv_path.with_suffix(".json"), json.dumps(meta, indent=2) + "\n")
    return csv_path


def _complete_snapshots(directory: Path, cloud: Cloud) -> list[Path]:
    folder = directory / cloud.value
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.csv") if p.with_suffix(".json").is_file())


def newest_snapshots(directory: Path) -> dict[Cloud, Path]:
    """The newest complete snapshot CSV per cloud (clouds with none are absent)."""
    newest = {}
    for cloud in Cloud:
        complete = _complete_snapshots(directory, cloud)
        if complete:
            newest[cloud] = complete[-1]
    return newest


def current_catalog(directory: Path, *, zones: bool = False) -> Catalog:
    """The catalog to rank on: the newest snapshot per cloud, else the shipped prices.

    Spot offers of AWS snapshots exist per availability zone and once per region (at the
    cheapest zone); ranking wants one row per offer, so per-zone rows are left out unless
    ``zones`` is True.
    """
    newest = newest_snapshots(directory)
    if not newest:
        return shipped_catalog(directory)
    catalog = load_catalog(overrides=newest, parsed_dir=directory)
    if zones:
        return catalog
    return replace(catalog, offers=catalog.offers.take(catalog.offers.zone.equals("")))


def _read_meta(csv_path: Path) -> dict[str, object]:
    try:
        meta = json.loads(csv_path.with_suffix(".json").read_text())
    except (OSError, ValueError) as exc:
        raise SnapshotError(
            f"{csv_path.with_suffix('.json')}: unreadable snapshot meta ({exc})"
        ) from exc
    if not isinstance(meta, dict):
        raise SnapshotError(f"{csv_path.with_suffix('.json')}: snapshot meta is not an object")
    return meta


def snapshot_status(directory: Path, *, now: datetime | None = None) -> list[SnapshotInfo]:
    """Every snapshot per cloud, oldest first, plus the shipped catalog's clouds."""
    now = now or datetime.now(UTC)
    newest = newest_snapshots(directory)
    infos: list[SnapshotInfo] = []
    shipped = shipped_catalog()
    for cloud in Cloud:
        cloud_offers = [o for o in shipped.offers if o.cloud == cloud]
        if cloud_offers:
            captured = datetime.combine(shipped.captured_at[cloud], datetime.min.time(), UTC)
            infos.append(SnapshotInfo(
                cloud=cloud, path=SHIPPED_DATA_DIR / "offers.csv", captured_at=captured,
                rows=len(cloud_offers),
                rows_by_market=dict(Counter(o.market.value for o in cloud_offers)),
                flagged_rows=sum(1 for o in cloud_offers if o.flagged),
                regions=tuple(sorted({o.region for o in cloud_offers})), skipped=0,
                shipped=True, in_use=cloud not in newest,
                age_days=(now - captured) / timedelta(days=1),
            ))
        for path in _complete_snapshots(directory, cloud):
            infos.append(_snapshot_info(cloud, path, in_use=newest.get(cloud) == path, now=now))
    return infos


def _snapshot_info(cloud: Cloud, path: Path, *, in_use: bool, now: datetime) -> SnapshotInfo:
    """The listing of one refreshed snapshot from its meta file; SnapshotError naming the
    file and the field when the meta lacks one or holds a value of the wrong kind."""
    meta = _read_meta(path)
    field = "captured_at"
    try:
        captured = datetime.fromisoformat(str(meta["captured_at"]))
        if captured.tzinfo is None:  # written in UTC; a hand-edited date without a zone
            captured = captured.replace(tzinfo=UTC)
        by_market = meta.get("rows_by_market")
        regions = meta.get("regions")
        counts: dict[str, int] = {}
        for field in ("rows", "flagged_rows", "skipped"):
            counts[field] = int(str(meta[field] if field == "rows" else meta.get(field, 0)))
    except (KeyError, ValueError) as exc:
        problem = "is missing" if isinstance(exc, KeyError) else f"is not valid ({exc})"
        raise SnapshotError(
            f"{path.with_suffix('.json')}: snapshot meta field {field} {problem}; move this "
            "snapshot's .csv and .json out of the folder (advisor leaves them as they are)"
        ) from None
    return SnapshotInfo(
        cloud=cloud, path=path, captured_at=captured, rows=counts["rows"],
        rows_by_market=dict(by_market) if isinstance(by_market, dict) else {},
        flagged_rows=counts["flagged_rows"],
        regions=tuple(regions) if isinstance(regions, list) else (),
        skipped=counts["skipped"], shipped=False, in_use=in_use,
        age_days=(now - captured) / timedelta(days=1),
    )
