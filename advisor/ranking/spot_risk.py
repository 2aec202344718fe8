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

Three figures per offer, each an overhead fraction of the same formula:

- low: the band's lower bound;
- point (``overhead_fraction``, the run cost's point estimate): the band's upper bound; the open
  top band ``>20%`` has none and is modelled at ``OVER_20_MODEL_FRACTION``;
- pessimistic (``overhead_fraction_high``, the run cost's high end and the conservative samples
  per dollar the ranking orders by): the band's upper bound where the band is closed; where it
  is open (``>20%``) or none is published (GCP, Azure, TPUs, AWS types not shipped, for which
  ``DEFAULT_BUCKET`` is assumed and the record says so), the measured GPU preemption rate of
  ``advisor/data/spot_preemption_measured.csv`` (``MEASURED_PESSIMISTIC``: one spot V100 kept
  running on AWS for a week in four zones, 0.47 preemptions per running hour). A monthly band
  read as a constant hazard gives a few interruptions per thousand hours, which is no risk;
  the measured trace shows one every two hours, which is what an unlucky run meets.

Not modelled: the time spent writing checkpoints, waiting unbilled for spot capacity to return,
and clustered interruptions (the band is a monthly mean).
"""

from __future__ import annotations

import csv
import enum
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

from advisor.errors import AdvisorError
from pricing import Cloud, InstanceOffer, Market
from pricing.spot import ANY, InterruptionBucket, SpotData, spot_risk, spot_terms

__all__ = [
    "DEFAULT_BUCKET",
    "HOURS_PER_MONTH",
    "MEASURED_RATES_FILE",
    "OVER_20_MODEL_FRACTION",
    "MeasuredPreemptions",
    "SpotOverhead",
    "SpotRiskBasis",
    "hourly_interruption_rate",
    "load_measured_preemptions",
    "measured_pessimistic_rate",
    "overhead_fraction",
    "spot_legend",
    "spot_overhead",
]

HOURS_PER_MONTH = 730.0  # 365.25 * 24 / 12, rounded as cloud bills do
DEFAULT_BUCKET = InterruptionBucket.OVER_20  # where no band is published: the worst one
OVER_20_MODEL_FRACTION = 0.40  # ">20%" has no published ceiling: modelled at twice its floor


MEASURED_RATES_FILE = Path(__file__).parents[1] / "data" / "spot_preemption_measured.csv"
_MEASURED_COLUMNS = ("cloud", "instance_type", "accelerator", "zone", "measured_from",
                     "measured_to", "sample_s", "running_hours", "preemptions", "note", "source",
                     "captured")


@dataclass(frozen=True, slots=True)
class MeasuredPreemptions:
    """Spot preemptions counted on running GPU instances, pooled over the rows of a measurement:
    ``preemptions`` over ``running_hours``, on ``instance_type`` in ``zones`` between
    ``measured_from`` and ``measured_to``, with the source that published the trace."""

    cloud: Cloud
    instance_type: str
    accelerator: str
    zones: tuple[str, ...]
    measured_from: date
    measured_to: date
    running_hours: float
    preemptions: int
    source: str
    captured: date

    @property
    def rate_per_hour(self) -> float:
        """Preemptions per running instance-hour (pooled over every zone)."""
        return self.preemptions / self.running_hours

    def describe(self) -> str:
        """One line: the rate, what it was measured on, when, and where it was published."""
        return (f"{self.rate_per_hour:.2f} preemptions per running hour measured on "
                f"{self.cloud.value.upper()} spot {self.instance_type} ({self.accelerator}), "
                f"{len(self.zones)} zones, {self.measured_from} to {self.measured_to} "
                f"({self.preemptions} in {self.running_hours:,.0f} h; "
                f"{self.source.split()[0]}, published {self.captured})")


def load_measured_preemptions(path: Path = MEASURED_RATES_FILE) -> MeasuredPreemptions:
    """Read and pool the measured preemption rows (one measurement, one row per zone); raises
    AdvisorError naming the line for a missing column, an empty source or a bad figure."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != _MEASURED_COLUMNS:
            raise AdvisorError(f"{path}: columns must be {', '.join(_MEASURED_COLUMNS)}")
        rows = list(reader)
    if not rows:
        raise AdvisorError(f"{path}: no measurement rows")
    for line, row in enumerate(rows, start=2):
        empty = [c for c in _MEASURED_COLUMNS if c != "note" and not (row[c] or "").strip()]
        if empty:
            raise AdvisorError(f"{path.name}:{line}: {', '.join(empty)} is empty; every row "
                               "needs it")
        try:
            ok = float(row["running_hours"]) > 0 and int(row["preemptions"]) >= 0
        except ValueError:
            ok = False
        if not ok:
            raise AdvisorError(f"{path.name}:{line}: running_hours must be > 0 and preemptions "
                               f"a whole number >= 0, got {row['running_hours']!r} and "
                               f"{row['preemptions']!r}")
    first = rows[0]
    if any((r["cloud"], r["instance_type"]) != (first["cloud"], first["instance_type"])
           for r in rows):
        raise AdvisorError(f"{path}: every row must measure the same cloud and instance type")
    try:
        return MeasuredPreemptions(
            cloud=Cloud(first["cloud"]), instance_type=first["instance_type"],
            accelerator=first["accelerator"], zones=tuple(r["zone"] for r in rows),
            measured_from=min(date.fromisoformat(r["measured_from"]) for r in rows),
            measured_to=max(date.fromisoformat(r["measured_to"]) for r in rows),
            running_hours=sum(float(r["running_hours"]) for r in rows),
            preemptions=sum(int(r["preemptions"]) for r in rows),
            source=first["source"],
            captured=max(date.fromisoformat(r["captured"]) for r in rows))
    except ValueError as exc:
        raise AdvisorError(f"{path}: {exc}") from exc


@cache
def measured_pessimistic_rate() -> MeasuredPreemptions:
    """The shipped measurement the pessimistic end uses where no closed band is published."""
    return load_measured_preemptions()


class SpotRiskBasis(enum.StrEnum):
    """Where an offer's interruption band comes from."""

    PUBLISHED = "published"  # a shipped row of pricing/data/spot_interruption.csv
    ASSUMED = "assumed"  # no published band: DEFAULT_BUCKET


def spot_legend(bases: Iterable[SpotRiskBasis]) -> str | None:
    """What a table's 'spot X%' cells mean, for the bases of the spot rows it shows (the
    terminal's and the HTML report's legend); the '?' clause where a band is assumed; None
    where no spot row is shown."""
    shown = set(bases)
    if not shown:
        return None
    return ("spot X% = the instance type's published monthly interruption band (AWS Spot "
            "Advisor)" + ("; '?' = none published, the top band assumed"
                          if SpotRiskBasis.ASSUMED in shown else ""))


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

    ``overhead_fraction_low``, ``overhead_fraction`` (the point: the band's upper bound) and
    ``overhead_fraction_high`` (pessimistic: the band's upper bound where it is closed, the
    measured rate ``rate_per_hour_high`` of ``pessimistic`` where it is open or unpublished)
    are extra hours per hour of uninterrupted run; ``overhead_hours`` and
    ``expected_interruptions`` are for ``run_hours`` at the point rate.
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
    overhead_fraction_high: float = 0.0
    rate_per_hour_high: float = 0.0
    pessimistic: MeasuredPreemptions | None = None  # None: the band's top is the pessimistic end

    @property
    def bucket_label(self) -> str:
        """The band as the cloud prints it, per month (``5-10%/month``)."""
        return f"{self.bucket.value}/month"

    def describe(self) -> str:
        """One line for assumption and rejection texts: band, basis, source, date, overhead."""
        cost = (f"{_percent(self.overhead_fraction)} with {self.checkpoint_minutes:g}-min "
                f"checkpoints and {self.restart_hours:g} h restarts")
        if self.pessimistic is not None:
            cost += (f"; pessimistic end {_percent(self.overhead_fraction_high)} at "
                     f"{self.pessimistic.describe()}")
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
    measured = measured_pessimistic_rate() if bucket.high_fraction is None else None
    rate_high = measured.rate_per_hour if measured is not None else rate
    overhead_hours = fraction * run_hours_on_demand if run_hours_on_demand else 0.0
    return SpotOverhead(
        cloud=offer.cloud, instance_type=offer.instance_type, region=offer.region,
        bucket=bucket, basis=basis, band_region=band_region, source=source, captured=captured,
        notice_s=notice_s, monthly_fraction=monthly, rate_per_hour=rate,
        run_hours=run_hours_on_demand, checkpoint_minutes=checkpoint_minutes,
        restart_hours=restart_hours, overhead_fraction=fraction, overhead_fraction_low=low,
        overhead_hours=overhead_hours,
        expected_interruptions=rate * (run_hours_on_demand + overhead_hours),
        overhead_fraction_high=max(fraction, overhead_fraction(rate_high, lost_hours)),
        rate_per_hour_high=rate_high, pessimistic=measured,
    )
