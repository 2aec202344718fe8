"""Consistency checks: doubtful prices are flagged with a reason, never dropped."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from pricing import Cloud, InstanceOffer, Market, shipped_catalog
from pricing.checks import apply_checks, price_flags
from pricing.flags import FlagRule, PriceFlag, render_flag

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
    # a cheaper region 1.5x under the rest is a cheaper region, not an outlier
    ([_at("us-east4", 99.0), _at("europe-west4", 110.0), _at("us-central1", 66.0)], set()),
    # one region far above all others: which is off is unknown, so nothing is flagged
    ([_at("us-east4", 200.0), _at("europe-west4", 88.0), _at("us-central1", 90.0)], set()),
    # two regions: a gap says one is off, not which
    ([_at("us-east4", 99.0), _at("us-central1", 43.0)], set()),
    # one region alone has nothing to compare with
    ([_at("us-east4", 88.0)], set()),
])
def test_cross_region_ratio(offers: list[InstanceOffer], flagged_regions: set[str]) -> None:
    checked = apply_checks(offers)
    assert {o.region for o in checked if o.flagged} == flagged_regions
    assert all(o.flagged.startswith("below-list-cluster: ") for o in checked if o.flagged)


def test_flag_text_names_the_rule_and_the_figures_compared() -> None:
    offers = [_at("us-east4", 99.0), _at("europe-west4", 110.0), _at("asia-southeast1", 104.0),
              _at("us-central1", 43.0)]
    (flag,) = price_flags(offers)[("gcp", "a3-highgpu-8g", "us-central1", None, "on-demand")]
    assert flag.rule is FlagRule.BELOW_LIST_CLUSTER
    assert (flag.price_usd_per_hour, flag.reference_usd_per_hour, flag.reference_regions) == (
        43.0, 104.0, 3)
    assert apply_checks(offers)[3].flagged == (
        "below-list-cluster: 43/h is 0.41x the median of this SKU's 3 list-price regions "
        "(104/h), below a gap of more than 1.6x between its regional prices")


@pytest.mark.parametrize(("flag", "text"), [
    (PriceFlag(FlagRule.SPOT_NOT_CHEAPER, 98.0, 98.0),
     "spot-not-cheaper: spot 98/h is 1.00x the on-demand 98/h in this region"),
    (PriceFlag(FlagRule.SOURCE_DOUBT, 2.42771, 3.67339, 4),
     "source-doubt: the price table marks 2.42771/h as disagreeing with this SKU elsewhere: "
     "0.66x the median of its 4 trusted regions (3.67339/h)"),
    (PriceFlag(FlagRule.SOURCE_DOUBT, 35.5, None, 0),  # no trusted region to compare with
     "source-doubt: the price table marks 35.5/h as disagreeing with this SKU elsewhere"),
    (PriceFlag(FlagRule.PLACEHOLDER_PRICE, 700.0), "placeholder-price: 700/h is a placeholder"),
    (PriceFlag(FlagRule.NEAR_ZERO_PRICE, 1e-5, 0.08), "near-zero-price: 1e-05/h is under the "
     "floor of 0.08/h"),
    (PriceFlag(FlagRule.SINGLE_ZONE_SPOT, 9.5), "single-zone-spot: spot 9.5/h was seen in a "
     "single availability zone only"),
])
def test_every_rule_renders_its_name_and_figures(flag: PriceFlag, text: str) -> None:
    assert render_flag(flag).startswith(text)


@pytest.mark.parametrize("prices", [
    # the case: two offers at 2.23 among a list cluster; both or neither flagged
    [5.53, 12.37, 13.98, 2.23, 2.23],
    [43.07, 43.07, 44.26, 45.28, 87.83, 98.93, 111.82],  # GCP a3-highgpu-8g on demand
    [1.006, 1.006, 1.006, 1.123, 1.258, 1.459],          # AWS g5.xlarge: a normal spread
])
def test_same_price_same_sku_same_verdict(prices: list[float]) -> None:
    regions = [f"region-{i}" for i in range(len(prices))]
    checked = apply_checks([_at(r, p) for r, p in zip(regions, prices, strict=True)])
    verdicts: dict[float, set[str]] = {}
    for offer in checked:
        text = offer.flagged.split(": ", 1)[0]
        verdicts.setdefault(offer.price_usd_per_hour, set()).add(text)
    assert all(len(v) == 1 for v in verdicts.values()), verdicts


def test_shipped_catalog_gives_the_same_verdict_at_the_same_price() -> None:
    verdicts: dict[tuple[object, ...], set[bool]] = {}
    for o in shipped_catalog().offers:
        key = (o.cloud, o.instance_type, o.market, o.price_usd_per_hour)
        verdicts.setdefault(key, set()).add(bool(o.flagged))
    assert [k for k, v in verdicts.items() if len(v) > 1] == []


def test_spot_at_or_above_on_demand_flagged() -> None:
    checked = apply_checks([_at("eastus", 98.0), _at("eastus", 98.0, Market.SPOT)])
    assert checked[0].flagged == ""
    assert checked[1].flagged.startswith("spot-not-cheaper: spot 98/h is 1.00x the on-demand")


def test_spot_prices_across_regions_not_compared() -> None:
    # spot is a market price: 3x between regions is normal
    checked = apply_checks([_at("us-east4", 88.0), _at("us-east1", 88.0),
                            _at("us-east4", 10.0, Market.SPOT), _at("us-east1", 30.0, Market.SPOT)])
    assert not any(o.flagged for o in checked)


@pytest.mark.parametrize(("price", "rule"), [
    (700.0, "placeholder-price"),   # GCP TPU sentinel
    (0.00001, "near-zero-price"),   # moto's spot price
])
def test_sentinel_and_zero_like_prices_flagged(price: float, rule: str) -> None:
    checked = apply_checks([_at("us-east4", 88.0), _at("us-east1", 88.0), _at("us-west1", 90.0),
                            _at("us-central1", price)])
    assert checked[3].flagged.startswith(f"{rule}: ")
    assert not any(o.flagged for o in checked[:3])  # it does not skew the cluster


def test_flags_accumulate_and_rows_are_kept() -> None:
    offers = [_at("us-east4", 99.0), _at("us-east1", 101.0), _at("us-central1", 43.0,
                                                                  flagged="known bad")]
    checked = apply_checks(offers)
    assert len(checked) == 3
    assert checked[2].flagged.startswith("known bad; below-list-cluster: ")
    assert apply_checks(checked) == checked  # idempotent


def test_checks_reproduce_the_shipped_flags() -> None:
    shipped = list(shipped_catalog().offers)
    assert apply_checks(shipped) == shipped  # the import renders the same flags the checks do
    assert sum(1 for o in shipped if o.flagged) == 47


def test_h100_rows_flagged_are_only_below_list_on_demand() -> None:
    rows = [o for o in shipped_catalog().offers if o.accelerator.startswith("H100")]
    flagged = [o for o in rows if o.flagged]
    assert (len(rows), len(flagged)) == (95, 22)  # was 44 of 95, spot rows included
    assert all(o.market is Market.ON_DEMAND for o in flagged)
    assert all(o.flagged.startswith("below-list-cluster: ") for o in flagged)
