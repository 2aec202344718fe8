"""The pricing package's exception leaves: each raised in its case, each caught as PricingError."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pricing import Cloud, PricingError, SnapshotError, shipped_catalog
from pricing.snapshots import current_catalog, snapshot_status, write_snapshot

T1 = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
AWS = [o for o in shipped_catalog().offers if o.cloud is Cloud.AWS]


def _header_only(path: Path) -> None:
    path.write_text(path.read_text().splitlines(keepends=True)[0])


def _renamed_price_column(path: Path) -> None:
    path.write_text(path.read_text().replace("price_usd_per_hour,", "price,", 1))


def _a_gcp_row(path: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    assert lines[1].startswith("aws,")
    path.write_text("".join([lines[0], "gcp," + lines[1][len("aws,"):], *lines[2:]]))


@pytest.mark.parametrize(("break_it", "says"), [
    (_header_only, "holds no offers"),  # would remove the cloud's offers
    (_renamed_price_column, "no price_usd_per_hour column"),
    (_a_gcp_row, ":2: a gcp offer in the aws snapshot"),  # a bad row
])
def test_an_unusable_snapshot_is_a_snapshot_error(tmp_path: Path,
                                                  break_it: Callable[[Path], None],
                                                  says: str) -> None:
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    break_it(path)
    with pytest.raises(SnapshotError, match=says) as caught:
        current_catalog(tmp_path)
    assert str(caught.value).startswith(str(path))
    assert isinstance(caught.value, PricingError)


def test_unreadable_snapshot_meta_is_a_snapshot_error_caught_as_pricing_error(
        tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    path.with_suffix(".json").write_text("[1, 2]")
    with pytest.raises(PricingError, match="snapshot meta is not an object") as caught:
        snapshot_status(tmp_path)
    assert type(caught.value) is SnapshotError


@pytest.mark.parametrize(("meta", "says"), [
    ({}, "field captured_at is missing"),                                  # an empty object
    ({"captured_at": "yesterday", "rows": 3}, "field captured_at is not valid"),
    ({"captured_at": T1.isoformat()}, "field rows is missing"),
    ({"captured_at": T1.isoformat(), "rows": "many"}, "field rows is not valid"),
    ({"captured_at": T1.isoformat(), "rows": 3, "skipped": [1]}, "field skipped is not valid"),
])
def test_a_meta_missing_a_field_is_a_snapshot_error_naming_it(
        tmp_path: Path, meta: dict[str, object], says: str) -> None:
    # 'advisor pricing status' printed a KeyError / ValueError traceback
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    meta_path = path.with_suffix(".json")
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(SnapshotError, match=says) as caught:
        snapshot_status(tmp_path)
    assert str(caught.value).startswith(f"{meta_path}: snapshot meta ")
    assert json.loads(meta_path.read_text()) == meta  # left as it was


def test_a_meta_date_without_a_zone_reads_as_utc(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    meta = json.loads(path.with_suffix(".json").read_text())
    path.with_suffix(".json").write_text(json.dumps({**meta, "captured_at": "2025-07-01"}))
    now = datetime(2025, 7, 3, 0, 0, tzinfo=UTC)
    (info,) = [i for i in snapshot_status(tmp_path, now=now) if not i.shipped]
    assert info.age_days == 2.0
