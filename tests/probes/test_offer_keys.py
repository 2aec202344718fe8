"""Offer keys: one rule for a missing market (on-demand), errors naming the field, near keys."""

from __future__ import annotations

import pytest

from pricing import Market, shipped_catalog
from probes.errors import ProbeError
from probes.offer_keys import find_catalog_offer, nearest_offer_keys, parse_offer_key

OFFERS = shipped_catalog().offers


@pytest.mark.parametrize(("text", "market"), [
    ("aws:g5.xlarge:us-east-1", Market.ON_DEMAND),          # no market: on-demand
    ("aws:g5.xlarge:us-east-1:on-demand", Market.ON_DEMAND),
    ("aws:g5.xlarge:us-east-1:SPOT", Market.SPOT),
])
def test_a_missing_market_means_on_demand(text: str, market: Market) -> None:
    assert parse_offer_key(text).market is market


@pytest.mark.parametrize(("text", "message"), [
    ("aws:g5.xlarge", "instance: 'aws:g5.xlarge' is not an offer key; write 'local' or "
                      "'cloud:instance_type:region[:market]'"),
    ("ibm:x:y", "instance: 'ibm:x:y' has unknown cloud 'ibm'; use aws, gcp, azure"),
    ("aws:g5.xlarge:us-east-1:cheap", "instance: 'aws:g5.xlarge:us-east-1:cheap' has market "
                                      "'cheap'; use spot or on-demand"),
])
def test_bad_keys_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ProbeError) as info:
        parse_offer_key(text, field="instance")
    assert str(info.value).startswith(message)


def test_find_without_a_market_finds_the_on_demand_offer() -> None:
    found = find_catalog_offer(parse_offer_key("aws:g5.xlarge:us-east-1"), OFFERS)
    assert found.key == "aws:g5.xlarge:us-east-1:on-demand"


def test_an_unknown_region_suggests_the_same_instance_type_first() -> None:
    near = nearest_offer_keys(parse_offer_key("aws:g5.xlarge:us-east-9:spot"), OFFERS)
    assert near and all(k.startswith("aws:g5.xlarge:") and k.endswith(":spot") for k in near)
    assert near[0] in ("aws:g5.xlarge:us-east-1:spot", "aws:g5.xlarge:us-east-2:spot")


def test_an_unknown_type_suggests_offers_in_the_same_region() -> None:
    near = nearest_offer_keys(parse_offer_key("aws:g5.xlarg:us-east-1:spot"), OFFERS)
    assert near[0] == "aws:g5.xlarge:us-east-1:spot"
    assert all(":us-east-1:" in k for k in near)


def test_a_missing_offer_is_one_line_naming_the_field() -> None:
    with pytest.raises(ProbeError) as info:
        find_catalog_offer(parse_offer_key("aws:g5.xlarge:us-east-9:spot"), OFFERS,
                           field="instance")
    message = str(info.value)
    assert message.startswith("instance: no offer 'aws:g5.xlarge:us-east-9:spot' in the price "
                              "catalog; did you mean aws:g5.xlarge:")
    assert "ap-northeast-1" not in message and "\n" not in message


def test_local_is_not_a_catalog_offer() -> None:
    with pytest.raises(ProbeError, match="instance: 'local' is this machine"):
        find_catalog_offer(parse_offer_key("local"), OFFERS, field="instance")
