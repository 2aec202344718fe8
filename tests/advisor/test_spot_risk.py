"""Spot overhead: expected lost work from a published band, checkpoints and restarts."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.ranking.spot_risk import (
    DEFAULT_BUCKET,
    HOURS_PER_MONTH,
    MEASURED_RATES_FILE,
    OVER_20_MODEL_FRACTION,
    SpotRiskBasis,
    hourly_interruption_rate,
    load_measured_preemptions,
    overhead_fraction,
    spot_overhead,
)
from pricing import InstanceOffer, InterruptionBucket, shipped_catalog

# the shipped catalog's offers by key (cloud:instance_type:region:market)
OFFERS = {offer.key: offer for offer in shipped_catalog().offers}
P4D_SPOT = OFFERS["aws:p4d.24xlarge:us-east-1:spot"]


def test_monthly_fraction_to_hourly_rate() -> None:
    # 20% of instances interrupted in a 730-hour month: survival 0.8 = exp(-rate * 730)
    rate = hourly_interruption_rate(0.20)
    assert math.exp(-rate * HOURS_PER_MONTH) == pytest.approx(0.80)
    assert hourly_interruption_rate(0.0) == 0.0


@pytest.mark.parametrize(("rate", "lost", "expected"), [
    (0.0, 1.0, 0.0),        # never interrupted: no overhead
    (0.01, 0.5, 0.005 / 0.995),  # lost time is itself exposed to interruptions
    (0.5, 2.0, math.inf),   # loses an hour per hour: never finishes
])
def test_overhead_fraction(rate: float, lost: float, expected: float) -> None:
    assert overhead_fraction(rate, lost) == pytest.approx(expected)


def test_published_band_gives_overhead_from_checkpoints_and_restarts() -> None:
    got = spot_overhead(OFFERS["aws:p5.48xlarge:us-east-1:spot"], 100.0, checkpoint_minutes=30,
                        restart_hours=0.25)
    assert got.basis is SpotRiskBasis.PUBLISHED
    assert got.bucket is InterruptionBucket.FROM_15_TO_20 and got.monthly_fraction == 0.20
    rate = hourly_interruption_rate(0.20)
    lost = 0.25 + 0.25  # half a 30-minute interval, plus the restart
    assert got.overhead_fraction == pytest.approx(rate * lost / (1 - rate * lost))
    assert got.overhead_hours == pytest.approx(100.0 * got.overhead_fraction)
    assert got.overhead_fraction_low < got.overhead_fraction  # the band's lower bound
    assert got.expected_interruptions == pytest.approx(rate * (100.0 + got.overhead_hours))


def test_longer_checkpoint_interval_costs_more() -> None:
    short = spot_overhead(P4D_SPOT, 10.0, checkpoint_minutes=10, restart_hours=0.25)
    long = spot_overhead(P4D_SPOT, 10.0, checkpoint_minutes=120, restart_hours=0.25)
    assert long.overhead_fraction > short.overhead_fraction


@pytest.mark.parametrize("offer", [
    OFFERS["aws:g5.xlarge:us-east-1:spot"],           # AWS: no band shipped
    OFFERS["gcp:a3-highgpu-8g:us-central1:spot"],     # GCP: none published
])
def test_missing_band_assumes_the_top_one_and_says_so(offer: InstanceOffer) -> None:
    got = spot_overhead(offer, 50.0, checkpoint_minutes=30, restart_hours=0.25)
    assert got.basis is SpotRiskBasis.ASSUMED and got.bucket is DEFAULT_BUCKET
    assert got.monthly_fraction == OVER_20_MODEL_FRACTION
    text = got.describe()
    assert text.startswith(f"spot: no published interruption frequency for {offer.cloud.value}")
    assert "assumed the top band >20%/month (modelled at 40%)" in text


def test_describe_names_band_source_date_and_overhead() -> None:
    text = spot_overhead(P4D_SPOT, 10.0, checkpoint_minutes=30, restart_hours=0.25).describe()
    assert text.startswith("spot: AWS band 5-10%/month for p4d.24xlarge, all regions (")
    assert "captured 2026-02-24" in text
    assert "% run time with 30-min checkpoints and 0.25 h restarts" in text
    assert "\n" not in text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"checkpoint_minutes": 0, "restart_hours": 0.25}, "checkpoint_minutes must be"),
    ({"checkpoint_minutes": 30, "restart_hours": -1}, "restart_hours must be"),
    ({"checkpoint_minutes": math.nan, "restart_hours": 0.25}, "checkpoint_minutes must be"),
])
def test_bad_inputs_are_named(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(AdvisorError, match=message):
        spot_overhead(P4D_SPOT, 10.0, **kwargs)


def test_on_demand_offer_is_refused() -> None:
    with pytest.raises(AdvisorError, match="not a spot offer"):
        spot_overhead(OFFERS["aws:p4d.24xlarge:us-east-1:on-demand"], 10.0,
                      checkpoint_minutes=30, restart_hours=0.25)


def test_measured_preemptions_are_cited_dated_and_pooled() -> None:
    measured = load_measured_preemptions()
    assert "github.com/skypilot-org/spot-traces" in measured.source
    assert "Can't Be Late" in measured.source and measured.captured.isoformat() == "2024-03-31"
    assert (measured.instance_type, measured.accelerator) == ("p3.2xlarge", "V100")
    assert len(measured.zones) == 4
    # 41 + 60 + 44 + 57 preemptions in 55.77 + 105.04 + 140.67 + 129.70 running hours
    assert measured.preemptions == 202
    assert measured.rate_per_hour == pytest.approx(202 / 431.18)
    assert "0.47 preemptions per running hour" in measured.describe()


def test_measured_file_with_an_empty_source_is_refused(tmp_path: Path) -> None:
    lines = MEASURED_RATES_FILE.read_text().splitlines()
    head, row = lines[0], next(csv.reader([lines[1]]))
    row[-2] = ""  # source
    bad = tmp_path / "measured.csv"
    with bad.open("w", newline="") as handle:
        handle.write(head + "\n")
        csv.writer(handle).writerow(row)
    with pytest.raises(AdvisorError, match=r"measured.csv:2: source is empty"):
        load_measured_preemptions(bad)


@pytest.mark.parametrize("key", [
    "aws:trn1.2xlarge:us-east-2:spot",       # AWS, no band shipped for the type
    "gcp:tpu-v5litepod-1:us-central1:spot",  # GCP (a TPU): none published
])
def test_open_or_unpublished_band_takes_the_measured_rate_at_its_pessimistic_end(key: str) -> None:
    # 21.7 h of training: the band read as a monthly rate says +0.035%; the measured GPU
    # preemption rate, with 30-minute checkpoints and 0.25 h restarts, says about +31%.
    got = spot_overhead(OFFERS[key], 21.7, checkpoint_minutes=30, restart_hours=0.25)
    rate = load_measured_preemptions().rate_per_hour
    lost = 0.25 + 0.25
    assert got.rate_per_hour_high == pytest.approx(rate)
    assert got.overhead_fraction_high == pytest.approx(rate * lost / (1 - rate * lost))
    assert got.overhead_fraction_high > 0.25 > got.overhead_fraction
    assert got.pessimistic is not None
    assert "pessimistic end +31% run time at 0.47 preemptions per running hour" in got.describe()


def test_closed_band_pessimistic_end_is_its_top() -> None:
    got = spot_overhead(P4D_SPOT, 10.0, checkpoint_minutes=30, restart_hours=0.25)
    assert got.pessimistic is None
    assert got.overhead_fraction_high == got.overhead_fraction
    assert "pessimistic" not in got.describe()
