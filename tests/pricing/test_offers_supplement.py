"""``offers_supplement.csv``: newer prices merged into the shipped catalog, each sourced and
dated, without hiding that the rest of the catalog is old."""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from typing import Any

import pytest
from click.testing import CliRunner

from advisor.profiling.profile import WorkloadProfile
from advisor.ranking.recommend import recommend
from advisor.spec import parse_workload_spec
from cli.main import advisor
from pricing import Cloud, Market, shipped_catalog
from pricing._import_shared import (
    CAPTURED_AT,
    OFFER_COLUMNS,
    SUPPLEMENT_COLUMNS,
    apply_supplement,
)
from pricing.accelerators import SHIPPED_DATA_DIR

SUPPLEMENT = SHIPPED_DATA_DIR / "offers_supplement.csv"
SNAPSHOT_DATE = date.fromisoformat(CAPTURED_AT)


def _supplement_rows() -> list[dict[str, str]]:
    with SUPPLEMENT.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_supplement_row_has_a_source_and_a_newer_date() -> None:
    rows = _supplement_rows()
    assert rows
    assert list(rows[0]) == SUPPLEMENT_COLUMNS
    for row in rows:
        assert row["source"].strip(), row
        assert date.fromisoformat(row["observed_at"]) > SNAPSHOT_DATE, row


@pytest.mark.parametrize(("instance_type", "region", "new_usd", "old_usd"), [
    ("p5.48xlarge", "us-east-1", 55.04, "98.32"),            # the price the issue names
    ("p5.48xlarge", "ap-northeast-1", 68.8, "123.19496"),    # regional list prices follow
    ("p4d.24xlarge", "us-east-1", 21.957642, "32.7726"),     # P4 cut by about a third
    ("p4de.24xlarge", "us-west-2", 27.44705, "40.96575"),
    ("p5en.48xlarge", "us-east-2", 63.296, "84.8"),          # H200 cut by about a quarter
])
def test_replaced_aws_price_is_the_newer_one_and_says_what_it_replaced(
        instance_type: str, region: str, new_usd: float, old_usd: str) -> None:
    [offer] = [o for o in shipped_catalog().query(clouds=[Cloud.AWS], regions=[region],
                                                  markets=[Market.ON_DEMAND])
               if o.instance_type == instance_type]
    assert offer.price_usd_per_hour == pytest.approx(new_usd)
    assert offer.observed_at > SNAPSHOT_DATE
    assert f"replaces {old_usd} USD/h" in offer.source
    assert "instances.vantage.sh" in offer.source


def test_no_p4_or_p5_on_demand_row_keeps_its_pre_cut_price() -> None:
    families = ("p4d.", "p4de.", "p5.", "p5en.")
    stale = [o.key for o in shipped_catalog().query(clouds=[Cloud.AWS], markets=[Market.ON_DEMAND])
             if o.instance_type.startswith(families) and o.observed_at == SNAPSHOT_DATE]
    assert stale == []


def test_the_oldest_capture_still_dates_the_catalog() -> None:
    catalog = shipped_catalog()
    assert max(o.observed_at for o in catalog.offers) > SNAPSHOT_DATE  # newer rows exist
    assert catalog.oldest_capture == SNAPSHOT_DATE
    assert catalog.captured_at[Cloud.AWS] == SNAPSHOT_DATE
    assert Cloud.AWS in catalog.approximate_dates


def test_recommend_still_warns_about_the_old_rest_just_after_the_newer_prices() -> None:
    profile = WorkloadProfile(flops_per_sample=24.5e9, params=25_557_032,
                              weight_bytes=102_228_128, gradient_bytes=102_228_128,
                              optimizer_bytes=204_456_256,
                              activation_bytes_per_sample=50 * 2**20, method="test")
    spec = parse_workload_spec({
        "name": "resnet50", "model": {"builtin": "resnet50"}, "batch_size": 256,
        "precision": "bf16", "data": {"samples": 1281167, "epochs": 90},
        "constraints": {"clouds": ["aws"], "max_accelerators": 8}})
    newest = max(o.observed_at for o in shipped_catalog().offers)
    rec = recommend(spec, catalog=shipped_catalog(), profile=profile,
                    today=date.fromordinal(newest.toordinal() + 10))
    assert any(f"prices captured {CAPTURED_AT} (approximate date)" in w for w in rec.warnings)


AZURE_GPU_FAMILIES = {
    # instance type: (accelerator, devices)
    "Standard_NC24ads_A100_v4": ("A100-80GB-PCIe", 1),
    "Standard_NC48ads_A100_v4": ("A100-80GB-PCIe", 2),
    "Standard_NC96ads_A100_v4": ("A100-80GB-PCIe", 4),
    "Standard_ND96asr_v4": ("A100-40GB-SXM", 8),
    "Standard_ND96amsr_A100_v4": ("A100-80GB-SXM", 8),
    "Standard_NC40ads_H100_v5": ("H100-NVL", 1),
    "Standard_NC80adis_H100_v5": ("H100-NVL", 2),
    "Standard_ND96isr_H100_v5": ("H100-SXM", 8),
}


def test_azure_a100_and_h100_families_load_through_the_shipped_catalog() -> None:
    catalog = shipped_catalog()
    found = {o.instance_type: (o.accelerator, o.accelerator_count)
             for o in catalog.query(clouds=[Cloud.AZURE], accelerators=["A100", "H100"])}
    assert found == AZURE_GPU_FAMILIES
    assert {a for a, _ in AZURE_GPU_FAMILIES.values()} <= set(catalog.accelerators)


def test_pricing_list_shows_the_azure_h100_families() -> None:
    result = CliRunner().invoke(advisor, ["pricing", "list", "--cloud", "azure",
                                          "--accelerator", "H100", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.output)
    assert {o["instance_type"] for o in data["offers"]} == {
        "Standard_NC40ads_H100_v5", "Standard_NC80adis_H100_v5", "Standard_ND96isr_H100_v5"}
    assert {o["accelerator"] for o in data["offers"]} == {"H100-NVL", "H100-SXM"}


# A snapshot of two rows to merge supplements into.
_BASE = [
    {"cloud": "aws", "region": "us-east-1", "zone": "", "instance_type": "p5.48xlarge",
     "accelerator": "H100-SXM", "accelerator_count": "8", "vcpus": "192", "memory_gib": "2048",
     "accelerator_memory_gib": "80", "market": market, "price_usd_per_hour": price,
     "flagged": "", "source": "old catalog", "observed_at": CAPTURED_AT}
    for market, price in (("on-demand", "98.32"), ("spot", "20.9934"))
]


def _supplement(*rows: dict[str, str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=SUPPLEMENT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def _row(**changes: str) -> dict[str, str]:
    base = {**_BASE[0], "price_usd_per_hour": "55.04", "source": "a public page",
            "observed_at": "2026-01-21", "replaces_usd_per_hour": "98.32"}
    return {**base, **changes}


def test_a_replacing_row_takes_the_place_of_the_old_one() -> None:
    merged = apply_supplement(list(_BASE), _supplement(_row()))
    assert [r["price_usd_per_hour"] for r in merged] == ["55.04", "20.9934"]
    assert merged[0]["source"] == "a public page; replaces 98.32 USD/h of old catalog (2025-03-01)"
    assert set(merged[0]) == set(OFFER_COLUMNS)


def test_a_row_replacing_nothing_is_a_new_offer() -> None:
    merged = apply_supplement(list(_BASE), _supplement(_row(region="us-west-2",
                                                            replaces_usd_per_hour="")))
    assert [(r["region"], r["market"]) for r in merged] == [
        ("us-east-1", "on-demand"), ("us-east-1", "spot"), ("us-west-2", "on-demand")]
    assert merged[2]["source"] == "a public page"


@pytest.mark.parametrize(("rows", "message"), [
    ([_row(source="")], "source is empty"),                                   # unsourced
    ([_row(observed_at="")], "observed_at is empty"),                         # undated
    ([_row(observed_at=CAPTURED_AT)], "is not newer than the snapshot"),      # not newer
    ([_row(replaces_usd_per_hour="97")], "is not the snapshot's price 98.32"),  # wrong old price
    ([_row(region="us-west-2")], "replaces nothing"),                         # nothing to replace
    ([_row(replaces_usd_per_hour="")], "is already in the snapshot"),         # silent overwrite
    ([_row(vcpus="96")], "vcpus differ from the replaced row"),               # not the same offer
    ([_row(), _row()], "appears twice"),                                      # two new prices
])
def test_bad_supplement_rows_are_refused_naming_the_line(rows: list[dict[str, str]],
                                                         message: str) -> None:
    with pytest.raises(ValueError, match=f"offers_supplement.csv:[0-9]+: .*{message}"):
        apply_supplement(list(_BASE), _supplement(*rows))
