"""Expected run time lost to spot interruptions, from published interruption bands.

The model (pure; every figure it uses is in the record it returns):

- A band gives ``f``, the fraction of instances interrupted per month. Read as the chance that
  an instance running for a whole month (``HOURS_PER_MONTH`` = 730 h) is interrupted at least
  once, with a constant hazard, the hourly interruption rate is
  ``rate_per_hour = -ln(1 - f) / 730`` (for small ``f`` about ``f / 730``).
- Each interruption loses, on average, half a checkpoint interval of work plus the restart
  (provisioning a new instance, loading the checkpoint): ``lost_h = checkpoint_h / 2 + restart_h``.
- Lost time is itself exposed to interruptions, so a run of ``T`` hours takes
  ``T_total = T + rate * T_total * lost_h``, i.e. ``overhead_fraction = rate * lost_h /
  (1 - rate * lost_h)`` (infinite when ``rate * lost_h >= 1``: the run never finishes).

The conservative figure uses the band's upper bound; the open top band ``>20%`` has none and is
modelled at ``OVER_20_MODEL_FRACTION``. Where no band is published (GCP, Azure, AWS types not
shipped), ``DEFAULT_BUCKET`` (the top band) is assumed and the record says so. Not modelled: the
time spent writing checkpoints, waiting for spot capacity to return, and clustered interruptions
(the band is a monthly mean).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from datetime import date

from advisor.errors import AdvisorError
from pricing import Cloud, InstanceOffer, Market
from pricing.spot import ANY, InterruptionBucket, SpotData, spot_risk, spot_terms

__all__ = [
    "DEFAULT_BUCKET",
    "HOURS_PER_MONTH",
    "OVER_20_MODEL_FRACTION",
    "SpotOverhead",
    "SpotRiskBasis",
    "hourly_interruption_rate",
    "overhead_fraction",
    "spot_overhead",
]

HOURS_PER_MONTH = 730.0  # 365.25 * 24 / 12, rounded as cloud bills do
DEFAULT_BUCKET = InterruptionBucket.OVER_20  # where no band is published: the worst one
OVER_20_MODEL_FRACTION = 0.40  # ">20%" has no published ceiling: modelled at twice its floor


class SpotRiskBasis(enum.StrEnum):
    """Where an offer's interruption band comes from."""

    PUBLISHED = "published"  # a shipped row of pricing/data/spot_interruption.csv
    ASSUMED = "assumed"  # no published band: DEFAULT_BUCKET


def hourly_interruption_rate(monthly_fraction: float) -> float:
    """Interruptions per instance-hour for a fraction of instances interrupted per month."""
    if not 0.0 <= monthly_fraction < 1.0:
        raise AdvisorError(f"monthly interruption fraction must be in [0, 1), got "
                           f"{monthly_fraction!r}")
    return -math.log1p(-monthly_fraction) / HOURS_PER_MONTH


def overhead_fraction(rate_per_hour: float, lost_hours_per_interruption: float) -> float:
    """Extra run time as a fraction of the uninterrupted run; ``inf`` if it never finishes."""
    exposure = rate_per_hour * lost_hours_per_interruption
    return math.inf if exposure >= 1.0 else exposure / (1.0 - exposure)


def _model_fraction(bucket: InterruptionBucket, *, conservative: bool) -> float:
    if not conservative:
        return bucket.low_fraction
    high = bucket.high_fraction
    return OVER_20_MODEL_FRACTION if high is None else high


def _percent(fraction: float) -> str:
    return "never finishes" if math.isinf(fraction) else f"+{fraction * 100:.2g}% run time"


def _short(source: str) -> str:
    """The first reference of a source text (before its first ',' or ';')."""
    return source.split(";")[0].split(",")[0].split(" (")[0].strip()


@dataclass(frozen=True, slots=True)
class SpotOverhead:
    """Expected run time lost to interruptions of one spot offer, with its band and source.

    ``overhead_fraction`` (conservative: the band's upper bound) and ``overhead_fraction_low``
    (its lower bound) are extra hours per hour of uninterrupted run; ``overhead_hours`` and
    ``expected_interruptions`` are for ``run_hours`` at the conservative rate.
    """

    cloud: Cloud
    instance_type: str
    region: str
    bucket: InterruptionBucket
    basis: SpotRiskBasis
    band_region: str | None  # the band's region: the offer's, ANY, or None when assumed
    source: str
    captured: date
    notice_s: float
    monthly_fraction: float  # the fraction the conservative figure is modelled at
    rate_per_hour: float
    run_hours: float
    checkpoint_minutes: float
    restart_hours: float
    overhead_fraction: float
    overhead_fraction_low: float
    overhead_hours: float
    expected_interruptions: float

    @property
    def bucket_label(self) -> str:
        """The band as the cloud prints it, per month (``5-10%/month``)."""
        return f"{self.bucket.value}/month"

    def describe(self) -> str:
        """One line for assumption and rejection texts: band, basis, source, date, overhead."""
        cost = (f"{_percent(self.overhead_fraction)} with {self.checkpoint_minutes:g}-min "
                f"checkpoints and {self.restart_hours:g} h restarts")
        modelled = ("" if self.bucket.high_fraction is not None
                    else f" (modelled at {self.monthly_fraction:.0%})")
        if self.basis is SpotRiskBasis.PUBLISHED:
            where = "all regions" if self.band_region == ANY else self.region
            return (f"spot: {self.cloud.value.upper()} band {self.bucket_label}{modelled} for "
                    f"{self.instance_type}, {where} ({_short(self.source)}, captured "
                    f"{self.captured}): {cost}")
        return (f"spot: no published interruption frequency for {self.cloud.value} "
                f"{self.instance_type} in {self.region} (policy: {self.notice_s:g} s notice; "
                f"{_short(self.source)}, {self.captured}); assumed the top band "
                f"{self.bucket_label}{modelled}: {cost}")


def _check(name: str, value: float, *, positive: bool) -> None:
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "> 0" if positive else ">= 0"
        raise AdvisorError(f"spot_overhead: {name} must be a finite number {bound}, got {value!r}")


def spot_overhead(
    offer: InstanceOffer,
    run_hours_on_demand: float,
    *,
    checkpoint_minutes: float,
    restart_hours: float,
    data: SpotData | None = None,
) -> SpotOverhead:
    """Expected interruption overhead of running ``run_hours_on_demand`` hours on a spot offer.

    ``run_hours_on_demand`` is the run's length without interruptions (start-up excluded);
    ``restart_hours`` the time to get going again after one (e.g. the start-up hours).
    ``data`` defaults to the shipped spot data. Raises AdvisorError for an on-demand offer or a
    negative, zero (checkpoint) or non-finite figure.
    """
    if offer.market is not Market.SPOT:
        raise AdvisorError(f"spot_overhead: {offer.key} is not a spot offer")
    _check("run_hours_on_demand", run_hours_on_demand, positive=False)
    _check("checkpoint_minutes", checkpoint_minutes, positive=True)
    _check("restart_hours", restart_hours, positive=False)
    risk = spot_risk(offer, data)
    terms = spot_terms(offer.cloud, data)
    if risk is not None:
        bucket, basis, band_region = risk.bucket, SpotRiskBasis.PUBLISHED, risk.region
        source, captured, notice_s = risk.source, risk.captured, risk.notice_s
    else:
        bucket, basis, band_region = DEFAULT_BUCKET, SpotRiskBasis.ASSUMED, None
        source, captured, notice_s = terms.source, terms.captured, terms.notice_s
    lost_hours = checkpoint_minutes / 60.0 / 2.0 + restart_hours
    monthly = _model_fraction(bucket, conservative=True)
    rate = hourly_interruption_rate(monthly)
    fraction = overhead_fraction(rate, lost_hours)
    low = overhead_fraction(hourly_interruption_rate(_model_fraction(bucket, conservative=False)),
                            lost_hours)
    overhead_hours = fraction * run_hours_on_demand if run_hours_on_demand else 0.0
    return SpotOverhead(
        cloud=offer.cloud, instance_type=offer.instance_type, region=offer.region,
        bucket=bucket, basis=basis, band_region=band_region, source=source, captured=captured,
        notice_s=notice_s, monthly_fraction=monthly, rate_per_hour=rate,
        run_hours=run_hours_on_demand, checkpoint_minutes=checkpoint_minutes,
        restart_hours=restart_hours, overhead_fraction=fraction, overhead_fraction_low=low,
        overhead_hours=overhead_hours,
        expected_interruptions=rate * (run_hours_on_demand + overhead_hours),
    )
