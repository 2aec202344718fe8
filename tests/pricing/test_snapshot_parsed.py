"""A snapshot is kept parsed beside its CSV: the same offers as reading the CSV, used only
while the CSV is unchanged, and never a reason to fail."""

from __future__ import annotations

import csv
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pricing import Cloud, PricingError, read_offers_csv, shipped_catalog
from pricing.catalog import read_snapshot_offers
from pricing.snapshots import write_snapshot


def _snapshot(tmp_path: Path) -> Path:
    aws = [o for o in shipped_catalog().offers if o.cloud is Cloud.AWS]
    return write_snapshot(tmp_path, Cloud.AWS, aws, captured_at=datetime(2026, 5, 1, tzinfo=UTC))


def _parsed(csv_path: Path) -> Path:
    return csv_path.with_name(f".{csv_path.stem}.parsed")


def test_the_parsed_form_gives_the_offers_the_csv_gives(tmp_path: Path) -> None:
    path = _snapshot(tmp_path)
    first = read_snapshot_offers(path, cloud=Cloud.AWS)
    assert _parsed(path).is_file()
    again = read_snapshot_offers(path, cloud=Cloud.AWS)  # from the parsed form
    assert again == first == read_offers_csv(path, cloud=Cloud.AWS)


def test_an_edited_csv_is_read_again_and_checked(tmp_path: Path) -> None:
    path = _snapshot(tmp_path)
    read_snapshot_offers(path, cloud=Cloud.AWS)
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    rows[1][rows[0].index("price_usd_per_hour")] = "inf"
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    with pytest.raises(PricingError, match=r":2: price_usd_per_hour must be a finite number"):
        read_snapshot_offers(path, cloud=Cloud.AWS)


def test_a_damaged_parsed_form_is_ignored_and_replaced(tmp_path: Path) -> None:
    path = _snapshot(tmp_path)
    _parsed(path).write_bytes(b"not marshal data")
    assert read_snapshot_offers(path, cloud=Cloud.AWS) == read_offers_csv(path, cloud=Cloud.AWS)
    assert _parsed(path).read_bytes() != b"not marshal data"


def test_a_snapshot_folder_that_refuses_writes_still_reads(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = _snapshot(tmp_path)

    def refuse(target: Path, data: object) -> None:
        raise PermissionError(13, "Permission denied", str(target))

    monkeypatch.setattr("pricing.catalog.atomic_write", refuse)
    assert read_snapshot_offers(path, cloud=Cloud.AWS) == read_offers_csv(path, cloud=Cloud.AWS)
    assert not _parsed(path).exists()
