"""One refresh: fetch from a price source, check, merge with what we had, write a snapshot.

All-or-nothing: the snapshot is written only after the source answered completely; a source
error, an empty answer or a failed write raises PricingError saying what failed and which
snapshot stays in use. Regions not refreshed keep their rows from the previous snapshot (or
the shipped catalog), so ``--region`` narrows the refresh without shrinking the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pricing.catalog import read_offers_csv, shipped_catalog
from pricing.checks import apply_checks
from pricing.errors import PricingError
from pricing.snapshots import newest_snapshots, write_snapshot
from pricing.sources.base import FetchResult, PriceSource
from pricing.types import Cloud, InstanceOffer

__all__ = ["RefreshResult", "refresh"]

# The pip extra that installs a cloud's SDK (Azure's price API needs none).
_EXTRAS = {Cloud.AWS: "aws", Cloud.GCP: "gcp"}


@dataclass(frozen=True)
class RefreshResult:
    """What a refresh wrote: the snapshot path and its row counts."""

    cloud: Cloud
    path: Path
    fetched_rows: int
    kept_rows: int
    flagged_rows: int
    skipped: tuple[str, ...]
    regions: tuple[str, ...]


def _previous(directory: Path, cloud: Cloud) -> tuple[str, list[InstanceOffer]]:
    newest = newest_snapshots(directory).get(cloud)
    if newest is not None:
        return f"snapshot {newest}", read_offers_csv(newest)
    return "the shipped catalog", [o for o in shipped_catalog().offers if o.cloud == cloud]


def refresh(
    source: PriceSource, directory: Path, *, regions: Sequence[str] | None = None
) -> RefreshResult:
    """Fetch ``source`` for ``regions`` and write a new snapshot under ``directory``."""
    cloud = source.cloud
    in_use, previous = _previous(directory, cloud)
    try:
        result: FetchResult = source.fetch(regions)
    except PricingError as exc:
        raise PricingError(f"{cloud} refresh failed, {in_use} stays in use: {exc}") from exc
    except ModuleNotFoundError as exc:  # the cloud's SDK is an optional extra
        extra = _EXTRAS.get(cloud)
        fix = f"pip install 'advisor[{extra}]'" if extra else f"pip install {exc.name}"
        raise PricingError(f"{cloud} refresh needs the {cloud} SDK ({exc.name} is not "
                           f"installed); run: {fix}") from exc
    if not result.offers:
        why = (
            f" ({len(result.skipped)} entries skipped, e.g. {result.skipped[0]})"
            if result.skipped else ""
        )
        raise PricingError(
            f"{cloud} refresh got no offers for {', '.join(result.regions)}{why}; "
            f"{in_use} stays in use"
        )
    refreshed = set(result.regions)
    kept = [o for o in previous if o.region not in refreshed]
    offers = apply_checks([*kept, *result.offers])
    offers.sort(key=lambda o: (o.instance_type, o.region, o.market.value, o.zone or ""))
    try:
        path = write_snapshot(
            directory, cloud, offers, captured_at=result.captured_at, regions=result.regions,
            skipped=result.skipped,
            note=f"{len(result.offers)} rows fetched, {len(kept)} kept from {in_use}",
        )
    except OSError as exc:
        raise PricingError(f"{cloud} refresh could not write its snapshot ({exc}); "
                           f"{in_use} stays in use") from exc
    return RefreshResult(
        cloud=cloud, path=path, fetched_rows=len(result.offers), kept_rows=len(kept),
        flagged_rows=sum(1 for o in offers if o.flagged), skipped=result.skipped,
        regions=result.regions,
    )
