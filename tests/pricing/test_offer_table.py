"""OfferTable holds a catalog's offers as columns and gives back the same offers: indexing,
iteration, slices of rows, concatenation, the stored columns and the order of offers."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from pricing import Cloud, Market, shipped_catalog
from pricing.catalog import read_offers_csv, read_snapshot_offers
from pricing.offer_table import Labels, OfferTable
from pricing.snapshots import write_snapshot


@pytest.fixture(scope="module")
def offers() -> list:
    return list(shipped_catalog().offers)


def test_the_table_gives_back_every_offer_by_index_and_by_iteration(offers: list) -> None:
    table = OfferTable.of(offers)
    assert len(table) == len(offers) > 800
    assert list(table) == offers
    assert [table[i] for i in range(len(table))] == offers
    assert table[-1] == offers[-1] and table[2:5] == tuple(offers[2:5])
    with pytest.raises(IndexError):
        table[len(offers)]
    assert table == offers and table != offers[:-1]


def test_unknown_vcpus_memory_and_zones_come_back_as_none(offers: list) -> None:
    odd = [replace(offers[0], vcpus=None, memory_gib=None, zone=None),
           replace(offers[1], zone="us-east-1a", flagged="price above its family")]
    assert list(OfferTable.of(odd)) == odd


def test_rows_taken_and_tables_joined_keep_their_offers(offers: list) -> None:
    table = OfferTable.of(offers)
    rows = np.array([5, 0, 17])
    assert list(table.take(rows)) == [offers[5], offers[0], offers[17]]
    mask = table.market.equals(Market.SPOT.value)
    assert list(table.take(mask)) == [o for o in offers if o.market is Market.SPOT]
    joined = OfferTable.concat([OfferTable.of(offers[:10]), OfferTable.of(offers[300:310])])
    assert list(joined) == offers[:10] + offers[300:310]


def test_stored_columns_read_back_as_the_same_table(offers: list) -> None:
    table = OfferTable.of(offers)
    assert list(OfferTable.from_columns(table.to_columns())) == offers
    columns = table.to_columns()
    columns["price_usd_per_hour"] = (columns["price_usd_per_hour"][0][:8], "<f8")
    with pytest.raises(ValueError, match="different lengths"):
        OfferTable.from_columns(columns)


def test_order_and_keys_follow_the_offers(offers: list) -> None:
    table = OfferTable.of(offers)
    assert table.keys() == [o.key for o in offers]
    by_order = [offers[i] for i in np.argsort(table.order())]
    assert by_order == sorted(offers, key=lambda o: o.sort_key)


def test_labels_compare_and_count_by_text() -> None:
    col = Labels.of(["b", "a", "b", "c"])
    assert col.values == ("b", "a", "c") and col.to_list() == ["b", "a", "b", "c"]
    assert col.isin({"a", "c"}).tolist() == [False, True, False, True]
    assert col.equals("b").tolist() == [True, False, True, False]
    assert col.order().tolist() == [1, 0, 1, 2]


def test_a_snapshot_is_read_back_from_its_columns_as_from_its_csv(tmp_path: Path,
                                                                   offers: list) -> None:
    mine = [o for o in offers if o.cloud is Cloud.GCP]
    path = write_snapshot(tmp_path, Cloud.GCP, mine, captured_at=datetime.now(UTC))
    first = read_snapshot_offers(path, cloud=Cloud.GCP)  # parses the CSV, keeps the columns
    assert path.with_name(f".{path.stem}.parsed").is_file()
    again = read_snapshot_offers(path, cloud=Cloud.GCP)  # from the kept columns
    assert list(first) == list(again) == read_offers_csv(path, cloud=Cloud.GCP)
