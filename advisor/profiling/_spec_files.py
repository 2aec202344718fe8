"""What profiling a spec starts from and where its results are cached: the recipe that builds
its model, and the files in the profile cache folder (shared by the profile, the operator mix
and the operator names)."""

from __future__ import annotations

from pathlib import Path

from advisor.spec import WorkloadSpec
from advisor.storage import data_dir, profile_cache_dir
from pricing.files import warn_cache_unwritable
from probes import WorkloadRecipe

__all__ = ["profile_cache_file", "recipe_for"]


def recipe_for(spec: WorkloadSpec, *, samples_per_device: int) -> WorkloadRecipe:
    """The plain recipe that builds ``spec``'s model with ``samples_per_device`` per step."""
    return WorkloadRecipe(
        builtin=spec.model.builtin, entrypoint=spec.model.entrypoint,
        options=dict(spec.model.options), batch_size=samples_per_device,
        precision=spec.precision, base_dir=spec.source_dir)


def profile_cache_file(name: str) -> Path | None:
    """``name`` in the profile cache folder; None (with one warning line) when the folder
    cannot be created (a read-only or full ADVISOR_HOME): profiles are then not cached."""
    try:
        return profile_cache_dir() / name
    except OSError as exc:
        warn_cache_unwritable(data_dir() / "profiles", exc)
        return None
