"""The price catalog: shipped (or refreshed) offers and accelerator specs, with pure queries.

Files are CSV with a schema version in ``pricing/data/manifest.json``; they are read once, on
first use, with the standard library (no pandas on the start-up path).
"""

from __future__ import annotations

import contextlib
import csv
import json
import marshal
import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path

from pricing._import_shared import OFFER_COLUMNS
from pricing.accelerators import (
    SHIPPED_DATA_DIR,
    canonical_accelerator_name,
    did_you_mean,
    load_accelerators,
    matching_accelerators,
)
from pricing.errors import PricingError, SnapshotError, UnknownNameError
from pricing.files import atomic_write
from pricing.offer_table import OfferTable, day
from pricing.types import AcceleratorSpec, Cloud, InstanceOffer, Market

__all__ = ["Catalog", "load_catalog", "read_offers_csv", "read_snapshot_offers", "shipped_catalog"]

SCHEMA_VERSION = 1


def _positive(text: str, column: str, *, whole: bool = False) -> float:
    """A cell as a finite number above 0; ValueError naming the column otherwise: NaN, inf,
    0 and negatives are refused, never ranked."""
    try:
        value: float = int(text) if whole else float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        kind = "a whole number" if whole else "a finite number"
        raise ValueError(f"{column} must be {kind} above 0, got {text.strip()[:40]!r}")
    return value


class _RowReader:
    """Turns the cells of one offers CSV row into an offer, checking it; the values many rows
    share (clouds, markets, dates) are converted once per file."""

    def __init__(self, header: list[str], *, cloud: Cloud | None,
                 accelerators: dict[str, AcceleratorSpec]) -> None:
        self._at = [header.index(column) for column in OFFER_COLUMNS]
        self._width = len(header)
        self._cloud = cloud
        self._accelerators = accelerators

    def __call__(self, cells: list[str]) -> InstanceOffer:
        """One row as an offer; ValueError saying what is wrong."""
        if len(cells) < self._width:
            cells = cells + [""] * (self._width - len(cells))
        (cloud_text, region, zone, instance_type, accelerator, count, vcpus, memory,
         accelerator_memory, market, price, flagged, source, observed) = (
            cells[i] for i in self._at)
        row_cloud = Cloud(cloud_text)
        if self._cloud is not None and row_cloud is not self._cloud:
            raise ValueError(f"a {row_cloud} offer in the {self._cloud} snapshot; a cloud's "
                             "snapshot holds only that cloud's offers")
        if accelerator not in self._accelerators:
            raise ValueError(f"unknown accelerator {accelerator[:40]!r}"
                             f"{did_you_mean(accelerator, list(self._accelerators))}")
        observed_at = day(observed)
        return InstanceOffer(
            cloud=row_cloud, region=region, zone=zone or None, instance_type=instance_type,
            accelerator=accelerator,
            accelerator_count=int(_positive(count, "accelerator_count", whole=True)),
            vcpus=int(_positive(vcpus, "vcpus", whole=True)) if vcpus.strip() else None,
            memory_gib=_positive(memory, "memory_gib") if memory.strip() else None,
            accelerator_memory_gib=_positive(accelerator_memory, "accelerator_memory_gib"),
            market=Market(market),
            price_usd_per_hour=_positive(price, "price_usd_per_hour"),
            flagged=flagged, source=source, observed_at=observed_at,
        )


def read_offers_csv(path: Path, *, cloud: Cloud | None = None) -> list[InstanceOffer]:
    """Read one offers CSV (shipped or a refreshed snapshot of ``cloud``) into offers.

    Every row is checked as the shipped catalog is: prices, memory and counts finite and above
    0, a known accelerator, and (given ``cloud``) that cloud only. A bad row raises
    SnapshotError naming the file and line, one line.
    """
    accelerators = load_accelerators()
    offers = []
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        missing = [c for c in OFFER_COLUMNS if c not in header]
        if missing:
            raise SnapshotError(f"{path}: no {missing[0]} column; the first line must name the "
                               f"columns {','.join(OFFER_COLUMNS)}")
        offer = _RowReader(header, cloud=cloud, accelerators=accelerators)
        for cells in reader:
            if not cells:  # a blank line, as csv.DictReader skips it
                continue
            try:
                offers.append(offer(cells))
            except (ValueError, PricingError) as exc:
                problem = exc.args[0] if exc.args else exc
                raise SnapshotError(f"{path}:{reader.line_num}: {problem}; fix or delete that "
                                   "row") from exc
    return offers


_PARSED_FORMAT = 2  # bump when the parsed form below changes


def _parsed_path(path: Path) -> Path:
    """Where the parsed form of a snapshot CSV is kept: beside it, hidden (``.STAMP.parsed``)."""
    return path.with_name(f".{path.stem}.parsed")


def _parsed_key(path: Path, cloud: Cloud | None) -> tuple[object, ...]:
    """What a parsed form must match: its format, the file's path, size and modification time,
    the cloud it was checked for and the accelerators it was checked against."""
    stat = path.stat()
    names = ",".join(sorted(load_accelerators())).encode()
    return (_PARSED_FORMAT, str(path.resolve()), stat.st_size, stat.st_mtime_ns,
            cloud.value if cloud else "", zlib.crc32(names))


def read_snapshot_offers(path: Path, *, cloud: Cloud) -> OfferTable:
    """``read_offers_csv`` for a refreshed snapshot, kept parsed beside it as columns: a
    snapshot is written once and read by every ``recommend``, and checking 100,000 rows each
    time costs seconds."""
    return _read_kept_parsed(path, _parsed_path(path), cloud=cloud)


def _read_kept_parsed(path: Path, parsed: Path, *, cloud: Cloud | None) -> OfferTable:
    """``read_offers_csv`` of ``path`` as columns, through its parsed form kept at ``parsed``:
    that form is used only while the file's path, size and modification time (and the known
    accelerators) are those it was made from; writing it is best effort."""
    key = _parsed_key(path, cloud)
    try:
        stored_key, columns = marshal.loads(parsed.read_bytes())
        if stored_key == key:
            return OfferTable.from_columns(columns)
    except (OSError, ValueError, EOFError, TypeError, KeyError):
        pass  # no parsed form yet, or an unreadable one: read the CSV
    offers = OfferTable.of(read_offers_csv(path, cloud=cloud))
    with contextlib.suppress(OSError):  # a read-only folder: parse again next time
        parsed.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(parsed, marshal.dumps((key, offers.to_columns())))  # type: ignore[arg-type]
    return offers


@dataclass(frozen=True)
class Catalog:
    """Offers and accelerator specs, with the capture date of each cloud's prices."""

    offers: OfferTable  # any sequence of offers given is held as an OfferTable
    accelerators: dict[str, AcceleratorSpec]
    captured_at: dict[Cloud, date]
    approximate_dates: frozenset[Cloud] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "offers", OfferTable.of(self.offers))

    @property
    def oldest_capture(self) -> date:
        """The oldest capture date among the clouds in the catalog."""
        return min(self.captured_at.values())

    def regions(self, cloud: Cloud | None = None) -> list[str]:
        """Sorted regions that have at least one offer (of ``cloud``, when given)."""
        if cloud is None:
            return sorted(self.offers.region.present())
        return sorted(self.offers.region.take(self.offers.cloud.equals(cloud.value)).present())

    def accelerator(self, name: str) -> AcceleratorSpec:
        """The spec of an accelerator by canonical name or alias."""
        return self.accelerators[canonical_accelerator_name(name, self.accelerators)]

    def matching_accelerators(self, names: Iterable[str], *, field: str | None = None) -> list[str]:
        """Every accelerator the filter names stand for (a family matches all its variants).

        Raises UnknownNameError, prefixed by ``field`` (``--accelerator``), for a name that
        matches nothing.
        """
        found: dict[str, None] = {}
        for name in names:
            found.update(dict.fromkeys(matching_accelerators(name, self.accelerators, field=field)))
        return list(found)

    def check_regions(self, regions: Iterable[str], *, field: str | None = None,
                      cloud: Cloud | None = None) -> None:
        """Raise UnknownNameError naming any region with no offer (of ``cloud``, when given;
        prefixed by ``field``, e.g. ``constraints.regions``), with close matches or, failing
        those, every known region."""
        known = self.regions(cloud)
        prefix = f"{field}: " if field else ""
        which = f"{cloud.value} " if cloud is not None else ""
        for region in regions:
            if region not in known:
                hint = (did_you_mean(region, known)
                        or f"; {which}regions with offers: {', '.join(known)}")
                raise UnknownNameError(f"{prefix}unknown {which}region {region!r}{hint}")

    def query(
        self,
        *,
        clouds: Iterable[Cloud] | None = None,
        regions: Iterable[str] | None = None,
        accelerators: Iterable[str] | None = None,
        markets: Iterable[Market] | None = None,
    ) -> list[InstanceOffer]:
        """Offers matching every filter given (None means no filter on that field).

        An accelerator family (``A100``, ``H100``) matches every variant of it.
        """
        cloud_set = set(clouds) if clouds is not None else None
        region_set = set(regions) if regions is not None else None
        market_set = set(markets) if markets is not None else None
        accel_set = (
            set(self.matching_accelerators(accelerators)) if accelerators is not None else None
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
        raise SnapshotError(
            f"{data_dir / 'manifest.json'}: schema_version {manifest.get('schema_version')} "
            f"is not {SCHEMA_VERSION}; reinstall advisor or run 'advisor pricing refresh'"
        )
    return manifest


def load_catalog(overrides: dict[Cloud, Path] | None = None, *,
                 parsed_dir: Path | None = None) -> Catalog:
    """The shipped catalog, with each cloud in ``overrides`` replaced by that snapshot file.

    Given ``parsed_dir`` (a writable folder of the user's), the shipped offers are kept there
    parsed as columns, as a snapshot's are beside it, so a warm start checks no CSV rows."""
    manifest = _read_manifest(SHIPPED_DATA_DIR)
    shipped = SHIPPED_DATA_DIR / "offers.csv"
    offers = (OfferTable.of(read_offers_csv(shipped)) if parsed_dir is None
              else _read_kept_parsed(shipped, parsed_dir / ".shipped-offers.parsed", cloud=None))
    shipped_date = date.fromisoformat(str(manifest["captured_at"]))
    captured = {Cloud(c): shipped_date for c in offers.cloud.present()}
    approximate = {c for c in captured if manifest.get("captured_at_approximate")}
    for cloud, path in (overrides or {}).items():
        fresh = read_snapshot_offers(path, cloud=cloud)
        if not fresh:  # never replace a cloud's offers with nothing
            raise SnapshotError(f"{path}: holds no offers, only the header; delete it to use "
                               f"the previous prices of {cloud}, or run 'advisor pricing "
                               f"refresh --cloud {cloud}'")
        offers = OfferTable.concat([offers.take(~offers.cloud.equals(cloud.value)), fresh])
        captured[cloud] = max(day(text) for text in fresh.observed_at.present())
        approximate.discard(cloud)
    return Catalog(
        offers=offers, accelerators=load_accelerators(),
        captured_at=captured, approximate_dates=frozenset(approximate),
    )


@cache
def shipped_catalog(parsed_dir: Path | None = None) -> Catalog:
    """The catalog exactly as shipped with the package (cached; ``parsed_dir`` as for
    ``load_catalog``)."""
    return load_catalog(parsed_dir=parsed_dir)
