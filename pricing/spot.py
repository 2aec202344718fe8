"""Spot interruption risk as shipped data: published frequency bands and each cloud's policy.

``pricing/data/spot_interruption.csv`` has two kinds of rows, each with its ``source`` and
``captured`` date:

- ``frequency``: a published interruption band for an instance type (AWS Spot Instance
  Advisor's ``<5%`` ... ``>20%`` of instances interrupted per month) in a region, or in every
  region (``*``) when the source names none. A region row wins over a ``*`` row.
- ``policy``: one per cloud (instance type and region ``*``): the interruption notice and what
  the cloud publishes. GCP publishes no frequency; Azure shows bands only in its portal.

A spot offer with no frequency row has no published frequency: ``spot_risk`` returns None and
callers say so; nothing here guesses a band.
"""

from __future__ import annotations

import csv
import enum
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache, cached_property
from pathlib import Path

from pricing.accelerators import SHIPPED_DATA_DIR
from pricing.errors import PricingError
from pricing.types import Cloud, InstanceOffer, Market

__all__ = [
    "ANY",
    "SPOT_DATA_FILE",
    "InterruptionBucket",
    "SpotData",
    "SpotRisk",
    "SpotTerms",
    "load_spot_data",
    "shipped_spot_data",
    "spot_risk",
    "spot_terms",
    "unmatched_rows",
]

SPOT_DATA_FILE = SHIPPED_DATA_DIR / "spot_interruption.csv"
ANY = "*"  # a region or instance type column that covers every one
_COLUMNS = ("cloud", "region", "instance_type", "kind", "bucket", "notice_s", "note", "source",
            "captured")


class InterruptionBucket(enum.Enum):
    """A published band of the fraction of spot instances interrupted per month.

    The value is the label as AWS's Spot Instance Advisor prints it; ``low_fraction`` and
    ``high_fraction`` bound it (``high_fraction`` is None for the open top band ``>20%``).
    """

    UNDER_5 = "<5%"
    FROM_5_TO_10 = "5-10%"
    FROM_10_TO_15 = "10-15%"
    FROM_15_TO_20 = "15-20%"
    OVER_20 = ">20%"

    @property
    def low_fraction(self) -> float:
        """The band's lower bound, as a fraction of instances interrupted per month."""
        return _BOUNDS[self][0]

    @property
    def high_fraction(self) -> float | None:
        """The band's upper bound per month; None for ``>20%``, which has none."""
        return _BOUNDS[self][1]

    @classmethod
    def parse(cls, label: str) -> InterruptionBucket:
        """The band for a label (``<5%``, ``5-10%``, ...); raises PricingError naming the known ones."""
        try:
            return cls(label.strip())
        except ValueError:
            known = ", ".join(b.value for b in cls)
            raise PricingError(f"unknown interruption band {label!r}; known: {known}") from None


_BOUNDS: dict[InterruptionBucket, tuple[float, float | None]] = {
    InterruptionBucket.UNDER_5: (0.0, 0.05),
    InterruptionBucket.FROM_5_TO_10: (0.05, 0.10),
    InterruptionBucket.FROM_10_TO_15: (0.10, 0.15),
    InterruptionBucket.FROM_15_TO_20: (0.15, 0.20),
    InterruptionBucket.OVER_20: (0.20, None),
}


@dataclass(frozen=True, slots=True)
class SpotRisk:
    """A published interruption band for one instance type, in one region or (``ANY``) all.

    ``notice_s`` is the warning before an interruption, in seconds; ``note`` qualifies the
    figure as its source does.
    """

    cloud: Cloud
    region: str
    instance_type: str
    bucket: InterruptionBucket
    notice_s: float
    note: str
    source: str
    captured: date


@dataclass(frozen=True, slots=True)
class SpotTerms:
    """One cloud's spot policy: the interruption notice (seconds) and what it publishes."""

    cloud: Cloud
    notice_s: float
    note: str
    source: str
    captured: date


@dataclass(frozen=True)
class SpotData:
    """Every frequency row and one policy per cloud, as read from the CSV."""

    risks: tuple[SpotRisk, ...]
    terms: dict[Cloud, SpotTerms]

    def risk(self, cloud: Cloud, instance_type: str, region: str) -> SpotRisk | None:
        """The band for this type in this region, else its all-regions band, else None."""
        index = self._index
        found = index.get((cloud, instance_type, region))
        return found if found is not None else index.get((cloud, instance_type, ANY))

    @cached_property
    def _index(self) -> dict[tuple[Cloud, str, str], SpotRisk]:
        return {(r.cloud, r.instance_type, r.region): r for r in self.risks}


def _row(path: Path, line: int, row: dict[str, str]) -> SpotRisk | SpotTerms:
    where = f"{path.name}:{line}"
    for column in ("cloud", "region", "instance_type", "kind", "notice_s", "source", "captured"):
        if not (row.get(column) or "").strip():
            raise PricingError(f"{where}: {column} is empty; every row needs it")
    try:
        cloud = Cloud(row["cloud"])
        captured = date.fromisoformat(row["captured"])
        notice_s = float(row["notice_s"])
    except ValueError as exc:
        raise PricingError(f"{where}: {exc}") from exc
    if row["kind"] == "policy":
        if (row["region"], row["instance_type"], row["bucket"]) != (ANY, ANY, ""):
            raise PricingError(f"{where}: a policy row has region and instance_type '*' and no "
                               "bucket")
        return SpotTerms(cloud=cloud, notice_s=notice_s, note=row["note"],
                         source=row["source"], captured=captured)
    if row["kind"] != "frequency":
        raise PricingError(f"{where}: kind must be 'frequency' or 'policy', got {row['kind']!r}")
    if row["instance_type"] == ANY:
        raise PricingError(f"{where}: a frequency row names one instance type, not '*'")
    try:
        bucket = InterruptionBucket.parse(row["bucket"])
    except PricingError as exc:
        raise PricingError(f"{where}: {exc}") from None
    return SpotRisk(cloud=cloud, region=row["region"], instance_type=row["instance_type"],
                    bucket=bucket, notice_s=notice_s, note=row["note"], source=row["source"],
                    captured=captured)


def load_spot_data(path: Path = SPOT_DATA_FILE) -> SpotData:
    """Read and check a spot interruption CSV; raises PricingError naming the bad line."""
    risks: list[SpotRisk] = []
    terms: dict[Cloud, SpotTerms] = {}
    seen: set[tuple[Cloud, str, str]] = set()
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != _COLUMNS:
            raise PricingError(f"{path}: columns must be {', '.join(_COLUMNS)}; got "
                               f"{', '.join(reader.fieldnames or ())}")
        for line, row in enumerate(reader, start=2):
            parsed = _row(path, line, row)
            if isinstance(parsed, SpotTerms):
                if parsed.cloud in terms:
                    raise PricingError(f"{path.name}:{line}: a second policy row for "
                                       f"{parsed.cloud}")
                terms[parsed.cloud] = parsed
                continue
            key = (parsed.cloud, parsed.instance_type, parsed.region)
            if key in seen:
                raise PricingError(f"{path.name}:{line}: a second row for {key}")
            seen.add(key)
            risks.append(parsed)
    missing = sorted(c.value for c in Cloud if c not in terms)
    if missing:
        raise PricingError(f"{path}: no policy row for {', '.join(missing)}")
    return SpotData(risks=tuple(risks), terms=terms)


@cache
def shipped_spot_data() -> SpotData:
    """The spot interruption data shipped with the package (cached)."""
    return load_spot_data()


def spot_risk(offer: InstanceOffer, data: SpotData | None = None) -> SpotRisk | None:
    """The published interruption band of a spot offer; None when no source publishes one.

    On-demand offers are not interrupted and get None as well.
    """
    if offer.market is not Market.SPOT:
        return None
    return (data or shipped_spot_data()).risk(offer.cloud, offer.instance_type, offer.region)


def spot_terms(cloud: Cloud, data: SpotData | None = None) -> SpotTerms:
    """A cloud's spot policy (notice, what it publishes), with its source."""
    return (data or shipped_spot_data()).terms[cloud]


def unmatched_rows(data: SpotData, offers: Iterable[InstanceOffer]) -> list[str]:
    """Frequency rows no spot offer in ``offers`` matches (type, and region unless ``*``).

    Shipped data must give none: a band for an instance type the catalog does not sell on spot
    is a typo or a stale row.
    """
    spot = [o for o in offers if o.market is Market.SPOT]
    types = {(o.cloud, o.instance_type) for o in spot}
    places = {(o.cloud, o.instance_type, o.region) for o in spot}
    return [f"{r.cloud}:{r.instance_type}:{r.region}" for r in data.risks
            if (r.cloud, r.instance_type) not in types
            or (r.region != ANY and (r.cloud, r.instance_type, r.region) not in places)]
