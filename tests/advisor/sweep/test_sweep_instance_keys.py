"""A sweep's ``instance`` offer key follows the shared rule: no market means on-demand."""

from __future__ import annotations

import pytest

from advisor.errors import AdvisorError
from advisor.sweep.accounting.instances import find_offer
from pricing import Market, shipped_catalog

CATALOG = shipped_catalog()


@pytest.mark.parametrize(("key", "market"), [
    ("aws:g5.xlarge:us-east-1", Market.ON_DEMAND),          # no market: on-demand
    ("aws:g5.xlarge:us-east-1:spot", Market.SPOT),
])
def test_instance_key_without_market_is_on_demand(key: str, market: Market) -> None:
    offer = find_offer(key, CATALOG)
    assert (offer.instance_type, offer.region, offer.market) == ("g5.xlarge", "us-east-1", market)


def test_unknown_instance_suggests_the_same_instance_type() -> None:
    with pytest.raises(AdvisorError) as info:
        find_offer("aws:g5.xlarge:us-east-9:spot", CATALOG)
    message = str(info.value)
    assert message.startswith("instance: no offer 'aws:g5.xlarge:us-east-9:spot'")
    assert "did you mean aws:g5.xlarge:us-east-" in message and "ap-northeast-1" not in message


def test_malformed_instance_key_names_the_field() -> None:
    with pytest.raises(AdvisorError, match="^instance: 'aws:g5.xlarge' is not an offer key"):
        find_offer("aws:g5.xlarge", CATALOG)
