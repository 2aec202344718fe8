"""Refresh: all-or-nothing; the previous snapshot stays in use when anything fails."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pricing import Cloud, PricingError, shipped_catalog
from pricing.refresh import refresh
from pricing.snapshots import current_catalog, newest_snapshots, write_snapshot
from pricing.sources import AwsPriceSource, FetchResult, PriceSource, SourceError
from pricing.sources.fakes_aws import AwsFakeFleet, stubbed_aws_factory

NOW = datetime(2025, 7, 1, 12, 0, tzinfo=UTC)
AWS = [o for o in shipped_catalog().offers if o.cloud is Cloud.AWS]


class _Canned(PriceSource):
    cloud = Cloud.AWS
    default_regions = ("us-east-1",)

    def __init__(self, result: FetchResult | Exception) -> None:
        self.result = result

    def fetch(self, regions: Sequence[str] | None = None) -> FetchResult:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def _aws_source(regions: list[str], **faults: object) -> AwsPriceSource:
    fleet = AwsFakeFleet.from_offers(AWS, now=NOW)
    factory, _ = stubbed_aws_factory(fleet, regions, page_size=10, **faults)  # type: ignore[arg-type]
    return AwsPriceSource(client_factory=factory, clock=lambda: NOW, sleep=lambda _: None)


def test_refresh_of_some_regions_keeps_the_others(tmp_path: Path) -> None:
    result = refresh(_aws_source(["us-east-1"]), tmp_path, regions=["us-east-1"])
    written = current_catalog(tmp_path)
    aws = [o for o in written.offers if o.cloud is Cloud.AWS]
    assert {o.region for o in aws} == {o.region for o in AWS}  # other regions kept
    assert {o.observed_at for o in aws if o.region == "us-east-1"} == {NOW.date()}
    assert result.kept_rows == sum(1 for o in AWS if o.region != "us-east-1")
    assert newest_snapshots(tmp_path) == {Cloud.AWS: result.path}


@pytest.mark.parametrize(("faults", "message"), [
    ({"fail_price_page": 2}, r"get_products \(page 2\) failed"),  # a page fails mid-way
])
def test_failed_refresh_keeps_previous_snapshot(tmp_path: Path, faults: dict, message: str) -> None:  # type: ignore[type-arg]
    previous = write_snapshot(tmp_path, Cloud.AWS, AWS, captured_at=datetime(2025, 6, 1, tzinfo=UTC))
    with pytest.raises(PricingError, match=rf"aws refresh failed, snapshot .*{previous.name} "
                                           rf"stays in use: .*{message}"):
        refresh(_aws_source(["us-east-1"], **faults), tmp_path, regions=["us-east-1"])
    assert newest_snapshots(tmp_path) == {Cloud.AWS: previous}
    assert len(list((tmp_path / "aws").iterdir())) == 2


def test_empty_answer_writes_nothing_and_says_so(tmp_path: Path) -> None:
    empty = FetchResult(cloud=Cloud.AWS, offers=(), captured_at=NOW, regions=("us-east-1",),
                        skipped=("us-east-1 p5.48xlarge: zero on-demand price",))
    with pytest.raises(PricingError, match="got no offers for us-east-1 .*1 entries skipped.*"
                                           "the shipped catalog stays in use"):
        refresh(_Canned(empty), tmp_path)
    assert newest_snapshots(tmp_path) == {}


def test_source_error_message_says_what_failed(tmp_path: Path) -> None:
    with pytest.raises(PricingError, match="aws refresh failed, the shipped catalog stays in use: "
                                           "eu-west-1 describe_spot_price_history"):
        refresh(_Canned(SourceError("eu-west-1 describe_spot_price_history failed")), tmp_path)


def test_refresh_flags_doubtful_rows(tmp_path: Path) -> None:
    from dataclasses import replace

    from pricing import Market, read_offers_csv

    on_demand = next(o for o in AWS if o.region == "us-east-1" and o.market is Market.ON_DEMAND)
    spot = replace(on_demand, market=Market.SPOT, price_usd_per_hour=on_demand.price_usd_per_hour * 2)
    result = FetchResult(cloud=Cloud.AWS, offers=(on_demand, spot), captured_at=NOW,
                         regions=("us-east-1",))
    out = refresh(_Canned(result), tmp_path)
    (row,) = [o for o in read_offers_csv(out.path) if o.key == spot.key]
    assert row.flagged.startswith("spot-not-cheaper: ")
