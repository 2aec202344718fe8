"""What the CLI calls: load inputs from their usual places and run one library flow."""

from __future__ import annotations

from pathlib import Path

from advisor.profile import profile_workload
from advisor.ranking import Recommendation
from advisor.recommend import recommend
from advisor.spec import load_workload_spec
from advisor.storage import data_dir
from pricing import Catalog, shipped_catalog

__all__ = ["current_catalog", "recommend_for_file"]


def current_catalog() -> Catalog:
    """The newest refreshed snapshot per cloud, falling back to the shipped one."""
    try:
        from pricing.snapshots import current_catalog as from_snapshots
    except ImportError:  # pragma: no cover - snapshots land with the refresh work
        return shipped_catalog()
    return from_snapshots(data_dir() / "snapshots")


def recommend_for_file(path: Path, *, include_flagged: bool = False) -> Recommendation:
    """``advisor recommend``: spec from ``path``, current catalog, cached profile."""
    spec = load_workload_spec(path)
    return recommend(spec, catalog=current_catalog(), profile=profile_workload(spec),
                     include_flagged=include_flagged)
