"""Consistency checks: doubtful prices are flagged with a reason, never dropped."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from pricing import Cloud, InstanceOffer, Market, shipped_catalog
from pricing.checks import apply_checks

BASE = InstanceOffer(
    cloud=Cloud.GCP, region="us-central1", zone=None, instance_type="a3-highgpu-8g",
    accelerator="H100-SXM", accelerator_count=8, vcpus=208, memory_gib=1872,
    accelerator_memory_gib=80, market=Market.ON_DEMAND, price_usd_per_hour=88.0,
    source="test", observed_at=date(2025, 7, 1),
)


def _at(region: str, price: float, market: Market = Market.ON_DEMAND, **kw: object) -> InstanceOffer:
    return replace(BASE, region=region, price_usd_per_hour=price, market=market, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("offers", "flagged_regions"), [
    # a low cluster 2.3x under the list price: the low ones are flagged
    ([_at("us-east4", 99.0), _at("europe-west4", 110.0), _at("us-central1", 43.0),
      _at("us-west1", 43.0)], {"us-central1", "us-west1"}),
    # normal regional spread (1.3x) flags nothing
    ([_at("us-east4", 88.0), _at("europe-west4", 114.0), _at("us-central1", 98.0)], set()),
    # one region alone has nothing to compare with
    ([_at("us-east4", 88.0)], set()),
])
def test_cross_region_ratio(offers: list[InstanceOffer], flagged_regions: set[str]) -> None:
    checked = apply_checks(offers)
    assert {o.region for o in checked if o.flagged} == flagged_regions
    assert all("cross-region" in o.flagged for o in checked if o.flagged)


def test_spot_at_or_above_on_demand_flagged() -> None:
    checked = apply_checks([_at("eastus", 98.0), _at("eastus", 98.0, Market.SPOT)])
    assert checked[0].flagged == ""
    assert checked[1].flagged.startswith("spot-above-on-demand")


def test_spot_prices_across_regions_not_compared() -> None:
    # spot is a market price: 3x between regions is normal
    checked = apply_checks([_at("us-east4", 88.0), _at("us-east1", 88.0),
                            _at("us-east4", 10.0, Market.SPOT), _at("us-east1", 30.0, Market.SPOT)])
    assert not any(o.flagged for o in checked)


@pytest.mark.parametrize("price", [700.0, 0.00001])  # GCP TPU sentinel; moto's spot price
def test_sentinel_and_zero_like_prices_flagged(price: float) -> None:
    checked = apply_checks([_at("us-east4", 88.0), _at("us-east1", price)])
    assert checked[1].flagged.startswith("sentinel")
    assert checked[0].flagged == ""  # the sentinel does not skew the cross-region reference


def test_flags_accumulate_and_rows_are_kept() -> None:
    offers = [_at("us-east4", 99.0), _at("us-central1", 43.0, flagged="known bad")]
    checked = apply_checks(offers)
    assert len(checked) == 2
    assert checked[1].flagged.startswith("known bad; cross-region")
    assert apply_checks(checked) == checked  # idempotent


def test_checks_reproduce_the_shipped_flags() -> None:
    shipped = list(shipped_catalog().offers)
    checked = apply_checks(shipped)
    assert [bool(o.flagged) for o in checked] == [bool(o.flagged) for o in shipped]
    assert sum(1 for o in checked if o.flagged) == 92
