"""The pricing package's exception leaves: each raised in its case, each caught as PricingError."""

from __future__ import annotations

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
