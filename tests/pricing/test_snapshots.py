"""Snapshots: atomic dated files, newest per cloud, status, and the catalog built from them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pricing import Cloud, Market, PricingError, read_offers_csv, shipped_catalog
from pricing.snapshots import current_catalog, newest_snapshots, snapshot_status, write_snapshot

T1 = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
T2 = datetime(2025, 7, 2, 12, 0, tzinfo=UTC)
AWS = [o for o in shipped_catalog().offers if o.cloud is Cloud.AWS]


def _cheaper(offers: list, factor: float) -> list:  # type: ignore[type-arg]
    return [replace(o, price_usd_per_hour=o.price_usd_per_hour * factor,
                    observed_at=T2.date()) for o in offers]


def test_roundtrip_and_layout(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1, regions=["us-east-1"])
    assert path == tmp_path / "aws" / "20250701T120000Z.csv"
    assert read_offers_csv(path) == AWS
    assert path.with_suffix(".json").is_file()


def test_newest_wins_and_incomplete_snapshots_ignored(tmp_path: Path) -> None:
    write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    newer = write_snapshot(tmp_path, Cloud.AWS, _cheaper(AWS, 0.5), captured_at=T2)
    (tmp_path / "aws" / "20250703T000000Z.csv").write_text("half-written")  # no meta file
    assert newest_snapshots(tmp_path) == {Cloud.AWS: newer}


def test_current_catalog_overrides_only_refreshed_clouds(tmp_path: Path) -> None:
    write_snapshot(tmp_path, Cloud.AWS, _cheaper(AWS, 0.5), captured_at=T2)
    catalog = current_catalog(tmp_path)
    key = "aws:p5.48xlarge:us-east-1:on-demand"
    [shipped] = [o.price_usd_per_hour for o in AWS if o.key == key]
    p5 = [o for o in catalog.offers if o.key == key]
    assert [o.price_usd_per_hour for o in p5] == [pytest.approx(shipped * 0.5)]
    assert catalog.captured_at[Cloud.AWS] == T2.date()
    assert catalog.captured_at[Cloud.GCP] == shipped_catalog().captured_at[Cloud.GCP]
    assert Cloud.AWS not in catalog.approximate_dates


def test_current_catalog_without_snapshots_is_the_shipped_one(tmp_path: Path) -> None:
    catalog = current_catalog(tmp_path / "none")
    assert list(catalog.offers) == list(shipped_catalog().offers)
    assert catalog.captured_at == shipped_catalog().captured_at
    # the shipped offers are kept parsed in the folder, and read back as the same offers
    assert (tmp_path / "none" / ".shipped-offers.parsed").is_file()
    shipped_catalog.cache_clear()
    assert list(current_catalog(tmp_path / "none").offers) == list(catalog.offers)


def test_zone_rows_left_out_of_ranking_catalog_unless_asked(tmp_path: Path) -> None:
    spot = next(o for o in AWS if o.market is Market.SPOT)
    zoned = replace(spot, zone=f"{spot.region}a")
    write_snapshot(tmp_path, Cloud.AWS, [*AWS, zoned], captured_at=T1)
    assert zoned not in current_catalog(tmp_path).offers
    assert zoned in current_catalog(tmp_path, zones=True).offers


def test_failed_write_leaves_previous_snapshot_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    import pricing.files as files

    def broken_replace(src: str, dst: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        write_snapshot(tmp_path, Cloud.AWS, _cheaper(AWS, 0.5), captured_at=T2)
    assert newest_snapshots(tmp_path) == {Cloud.AWS: first}
    names = sorted(p.name for p in (tmp_path / "aws").iterdir())
    assert names == [first.name, first.with_suffix(".json").name]


def test_empty_or_mixed_snapshots_refused(tmp_path: Path) -> None:
    with pytest.raises(PricingError, match="empty snapshot"):
        write_snapshot(tmp_path, Cloud.AWS, [], captured_at=T1)
    gcp = next(o for o in shipped_catalog().offers if o.cloud is Cloud.GCP)
    with pytest.raises(PricingError, match="another cloud"):
        write_snapshot(tmp_path, Cloud.AWS, [*AWS, gcp], captured_at=T1)


def test_status_lists_shipped_and_snapshots_with_age(tmp_path: Path) -> None:
    write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1, regions=["us-east-1"])
    infos = snapshot_status(tmp_path, now=datetime(2025, 7, 11, 12, 0, tzinfo=UTC))
    aws = [i for i in infos if i.cloud is Cloud.AWS]
    assert [(i.shipped, i.in_use) for i in aws] == [(True, False), (False, True)]
    assert aws[1].rows == len(AWS) and aws[1].age_days == pytest.approx(10.0)
    assert aws[1].rows_by_market["spot"] == sum(1 for o in AWS if o.market is Market.SPOT)
    assert all(i.in_use for i in infos if i.cloud is not Cloud.AWS)


def _edited_snapshot(tmp_path: Path, column: str, value: str) -> Path:
    """An AWS snapshot whose first row has ``column`` set to ``value`` (as a user edits it)."""
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    header, first, *rest = path.read_text().splitlines(keepends=True)
    columns = header.rstrip("\n").split(",")
    cells = first.rstrip("\n").split(",", len(columns) - 1)
    cells[columns.index(column)] = value
    path.write_text("".join([header, ",".join(cells) + "\n", *rest]))
    return path


@pytest.mark.parametrize(("column", "value", "says"), [
    # an infinite price was ranked and printed as the non-JSON Infinity
    ("price_usd_per_hour", "inf", "price_usd_per_hour must be a finite number above 0, got 'inf'"),
    ("price_usd_per_hour", "nan", "price_usd_per_hour must be a finite number above 0, got 'nan'"),
    ("price_usd_per_hour", "-1", "price_usd_per_hour must be a finite number above 0, got '-1'"),
    # memory: NaN, negative, infinite were accepted
    ("memory_gib", "nan", "memory_gib must be a finite number above 0, got 'nan'"),
    ("memory_gib", "-5", "memory_gib must be a finite number above 0, got '-5'"),
    ("accelerator_memory_gib", "inf", "accelerator_memory_gib must be a finite number above 0"),
    ("vcpus", "-3", "vcpus must be a whole number above 0, got '-3'"),
    # a gcp row in the aws file
    ("cloud", "gcp", "a gcp offer in the aws snapshot"),
    # an unknown accelerator was a KeyError traceback in ranking
    ("accelerator", "Foo", "unknown accelerator 'Foo'"),
])
def test_a_bad_snapshot_row_is_refused_naming_file_and_row(tmp_path: Path, column: str,
                                                           value: str, says: str) -> None:
    path = _edited_snapshot(tmp_path, column, value)
    with pytest.raises(PricingError) as caught:
        current_catalog(tmp_path)
    message = str(caught.value)
    assert message.startswith(f"{path}:2: "), message
    assert says in message, message
    assert "\n" not in message


def test_a_header_only_snapshot_never_removes_a_clouds_offers(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    path.write_text(path.read_text().splitlines(keepends=True)[0])
    with pytest.raises(PricingError, match=r"holds no offers") as caught:
        current_catalog(tmp_path)
    assert str(caught.value).startswith(f"{path}: ")


def test_a_snapshot_missing_a_column_names_it(tmp_path: Path) -> None:
    path = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=T1)
    path.write_text(path.read_text().replace("price_usd_per_hour,", "price,", 1))
    with pytest.raises(PricingError, match=r"no price_usd_per_hour column"):
        current_catalog(tmp_path)
