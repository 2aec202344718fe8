"""Offer keys (pricing.offer_keys): one rule for a missing market (on-demand), errors naming the
field, near keys, and the canonical key InstanceOffer.key writes."""

from __future__ import annotations

import pytest

from pricing import (
    Market,
    OfferKeyError,
    PricingError,
    find_catalog_offer,
    nearest_offer_keys,
    parse_offer_key,
    shipped_catalog,
)

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
    with pytest.raises(OfferKeyError) as info:
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
    with pytest.raises(OfferKeyError) as info:
        find_catalog_offer(parse_offer_key("aws:g5.xlarge:us-east-9:spot"), OFFERS,
                           field="instance")
    message = str(info.value)
    assert message.startswith("instance: no offer 'aws:g5.xlarge:us-east-9:spot' in the price "
                              "catalog; did you mean aws:g5.xlarge:")
    assert "ap-northeast-1" not in message and "\n" not in message


def test_local_is_not_a_catalog_offer() -> None:
    with pytest.raises(OfferKeyError, match="instance: 'local' is this machine"):
        find_catalog_offer(parse_offer_key("local"), OFFERS, field="instance")


@pytest.mark.parametrize(("text", "key"), [
    ("local", "local"),
    ("aws:g5.xlarge:us-east-1", "aws:g5.xlarge:us-east-1:on-demand"),   # market defaults
    ("aws:g5.xlarge:us-east-1:spot", "aws:g5.xlarge:us-east-1:spot"),
    ("GCP:tpu-v5litepod-8:us-west4:spot", "gcp:tpu-v5litepod-8:us-west4:spot"),
])
def test_offer_keys_parse(text: str, key: str) -> None:
    assert parse_offer_key(text).key == key


@pytest.mark.parametrize("text", ["aws:g5.xlarge", "ibm:x:y", "aws:g5.xlarge:us-east-1:cheap"])
def test_bad_offer_keys_say_the_format(text: str) -> None:
    with pytest.raises(PricingError, match="offer"):
        parse_offer_key(text)


def test_every_catalog_key_parses_back_to_itself() -> None:
    """parse_offer_key reads what InstanceOffer.key writes."""
    for offer in OFFERS[:500]:
        ref = parse_offer_key(offer.key)
        assert (ref.key, ref.cloud, ref.instance_type, ref.region, ref.market) == (
            offer.key, offer.cloud, offer.instance_type, offer.region, offer.market)
