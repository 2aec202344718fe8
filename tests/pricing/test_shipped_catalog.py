"""The shipped catalog files: rebuilt from shared/data, sourced, dated and sound."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from pricing import Cloud, Market, shipped_catalog
from pricing._import_shared import (
    ACCELERATOR_COLUMNS,
    OFFER_COLUMNS,
    apply_supplement,
    build_accelerators,
    build_offers,
)
from pricing.accelerators import SHIPPED_DATA_DIR, canonical_accelerator_name
from pricing.errors import UnknownNameError

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


def _as_csv(columns: list[str], rows: list[dict[str, str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.mark.skipif(not SHARED.exists(), reason="shared/data is not beside this checkout")
def test_shipped_files_equal_a_rebuild_from_shared_data() -> None:
    accelerators = build_accelerators((SHARED / "specs/accelerator_specs.csv").read_text())
    offers = build_offers((SHARED / "prices/accelerator_prices.csv").read_text(), accelerators)
    offers = apply_supplement(offers, (SHIPPED_DATA_DIR / "offers_supplement.csv").read_text())
    assert (SHIPPED_DATA_DIR / "accelerators.csv").read_text() == _as_csv(ACCELERATOR_COLUMNS, accelerators)
    assert (SHIPPED_DATA_DIR / "offers.csv").read_text() == _as_csv(OFFER_COLUMNS, offers)


def test_every_offer_has_a_source_and_the_capture_date_or_a_newer_one() -> None:
    manifest = json.loads((SHIPPED_DATA_DIR / "manifest.json").read_text())
    catalog = shipped_catalog()
    assert all(o.source for o in catalog.offers)
    with (SHIPPED_DATA_DIR / manifest["files"]["offers_supplement"]).open(newline="") as handle:
        supplemented = {(r["cloud"], r["instance_type"], r["region"], r["market"])
                        for r in csv.DictReader(handle)}
    newer = {(o.cloud.value, o.instance_type, o.region, o.market.value)
             for o in catalog.offers if o.observed_at.isoformat() != manifest["captured_at"]}
    assert newer == supplemented  # only supplement rows carry another date
    assert min(o.observed_at for o in catalog.offers).isoformat() == manifest["captured_at"]
    assert catalog.approximate_dates == frozenset(catalog.captured_at)


def test_offer_keys_are_unique() -> None:
    keys = Counter(o.key for o in shipped_catalog().offers)
    assert [k for k, n in keys.items() if n > 1] == []


def test_every_offer_accelerator_has_specs() -> None:
    catalog = shipped_catalog()
    assert {o.accelerator for o in catalog.offers} <= set(catalog.accelerators)


def test_spot_is_always_cheaper_than_on_demand_of_the_same_offer() -> None:
    prices = {(o.cloud, o.instance_type, o.region, o.market): o.price_usd_per_hour
              for o in shipped_catalog().offers}
    for (cloud, itype, region, market), price in prices.items():
        if market is Market.SPOT and (cloud, itype, region, Market.ON_DEMAND) in prices:
            assert price < prices[(cloud, itype, region, Market.ON_DEMAND)], itype


def test_untrusted_source_rows_are_flagged_not_dropped() -> None:
    flagged = [o for o in shipped_catalog().offers if o.flagged]
    assert flagged, "the GCP non-list price cluster must stay visible"
    assert {o.cloud for o in flagged if "cluster" in o.flagged} == {Cloud.GCP}


def test_no_sentinel_or_zero_prices() -> None:
    assert all(0 < o.price_usd_per_hour < 700 for o in shipped_catalog().offers)


def test_tpu_offers_count_chips_and_memory_per_chip() -> None:
    by_type = {o.instance_type: o for o in shipped_catalog().offers if o.cloud is Cloud.GCP}
    assert by_type["tpu-v5p-32"].accelerator_count == 16  # v5p-N counts TensorCores, 2 per chip
    assert by_type["tpu-v5litepod-8"].accelerator_count == 8  # v5e counts chips
    assert by_type["tpu-v5p-32"].accelerator_memory_gib == pytest.approx(95)


@pytest.mark.parametrize(
    ("typed", "canonical"),
    [
        ("a100", "A100-40GB-SXM"),  # the bare name means the common 40 GB SXM part
        ("H100", "H100-SXM"),
        ("tpu-v5e", "TPU-v5e"),
        ("v100-16gb-sxm2", "V100-16GB-SXM2"),  # case and punctuation do not matter
        ("trainium", "Trainium1"),
    ],
)
def test_accelerator_aliases(typed: str, canonical: str) -> None:
    assert canonical_accelerator_name(typed) == canonical


def test_unknown_accelerator_suggests_close_names() -> None:
    with pytest.raises(UnknownNameError, match="did you mean.*H100"):
        canonical_accelerator_name("H10O-SXM")


def test_unknown_region_suggests_close_names() -> None:
    with pytest.raises(UnknownNameError, match="did you mean.*us-east-1"):
        shipped_catalog().check_regions(["us-east1x"])
