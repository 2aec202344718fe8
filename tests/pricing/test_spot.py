"""Spot interruption data: the shipped file is sound, and lookups never guess a band."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from pricing import Cloud, InstanceOffer, PricingError, shipped_catalog
from pricing.spot import (
    ANY,
    SPOT_DATA_FILE,
    InterruptionBucket,
    load_spot_data,
    shipped_spot_data,
    spot_risk,
    spot_terms,
    unmatched_rows,
)

HEADER = "cloud,region,instance_type,kind,bucket,notice_s,note,source,captured\n"
POLICIES = (
    "aws,*,*,policy,,120,bands per type,aws page,2026-11-24\n"
    "gcp,*,*,policy,,30,no frequency,gcp page,2026-11-24\n"
    "azure,*,*,policy,,30,portal only,azure page,2026-11-24\n"
)


def _write(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "spot.csv"
    path.write_text(HEADER + POLICIES + rows)
    return path


# the shipped catalog's offers by key (cloud:instance_type:region:market)
OFFERS = {offer.key: offer for offer in shipped_catalog().offers}


def test_shipped_rows_have_known_bands_sources_and_dates() -> None:
    data = shipped_spot_data()
    assert data.risks, "the AWS bands found in public sources are shipped"
    for risk in data.risks:
        assert isinstance(risk.bucket, InterruptionBucket)
        assert risk.source.strip() and risk.captured <= date.today()
    assert set(data.terms) == set(Cloud)
    assert all(t.source.strip() and t.notice_s > 0 for t in data.terms.values())


def test_every_shipped_band_is_for_a_spot_offer_the_catalog_sells() -> None:
    assert unmatched_rows(shipped_spot_data(), shipped_catalog().offers) == []


def test_shipped_file_is_the_one_read() -> None:
    assert load_spot_data(SPOT_DATA_FILE) == shipped_spot_data()


@pytest.mark.parametrize(("label", "low", "high"), [
    ("<5%", 0.0, 0.05),     # the lowest band starts at zero
    ("5-10%", 0.05, 0.10),  # a closed band
    (">20%", 0.20, None),   # the top band has no ceiling
])
def test_band_bounds(label: str, low: float, high: float | None) -> None:
    bucket = InterruptionBucket.parse(label)
    assert (bucket.low_fraction, bucket.high_fraction) == (low, high)


def test_region_row_wins_over_all_regions_row(tmp_path: Path) -> None:
    data = load_spot_data(_write(tmp_path, "aws,*,p4d.24xlarge,frequency,5-10%,120,,src a,2026-02-24\n"
                                           "aws,us-east-1,p4d.24xlarge,frequency,>20%,120,,src b,"
                                           "2026-02-24\n"))
    east = spot_risk(OFFERS["aws:p4d.24xlarge:us-east-1:spot"], data)
    west = spot_risk(OFFERS["aws:p4d.24xlarge:us-west-2:spot"], data)
    assert east is not None and east.bucket is InterruptionBucket.OVER_20
    assert west is not None and west.bucket is InterruptionBucket.FROM_5_TO_10
    assert west.region == ANY


@pytest.mark.parametrize("offer", [
    OFFERS["aws:g5.xlarge:us-east-1:spot"],           # AWS type with no shipped band
    OFFERS["gcp:a3-highgpu-8g:us-central1:spot"],     # GCP publishes no frequency
    OFFERS["aws:p4d.24xlarge:us-east-1:on-demand"],   # on-demand is not interrupted
])
def test_no_published_band_is_none_not_a_guess(offer: InstanceOffer) -> None:
    assert spot_risk(offer) is None


def test_policy_per_cloud_names_notice_and_source() -> None:
    gcp = spot_terms(Cloud.GCP)
    assert gcp.notice_s == 30 and "no interruption frequency" in gcp.note
    assert spot_terms(Cloud.AWS).notice_s == 120


@pytest.mark.parametrize(("rows", "message"), [
    ("aws,*,p4d.24xlarge,frequency,1-2%,120,,src,2026-02-24\n", "unknown interruption band"),
    ("aws,*,p4d.24xlarge,frequency,<5%,120,,,2026-02-24\n", "source is empty"),
    ("aws,*,p4d.24xlarge,frequency,<5%,120,,src,someday\n", "spot.csv:5"),
    ("aws,*,*,frequency,<5%,120,,src,2026-02-24\n", "names one instance type"),
    ("aws,*,p4d.24xlarge,guess,<5%,120,,src,2026-02-24\n", "kind must be"),
    ("gcp,*,*,policy,,30,again,src,2026-11-24\n", "a second policy row for gcp"),
])
def test_bad_rows_are_refused_naming_the_line(tmp_path: Path, rows: str, message: str) -> None:
    with pytest.raises(PricingError, match=message):
        load_spot_data(_write(tmp_path, rows))
