"""What profiling a spec starts from and where its results are kept: the recipe that builds
its model, the files in the profile cache folder (shared by the profile, the operator mix and
the operator names), and the same files shipped with the package for the built-in examples.

A result is looked up in the user's cache, then among the shipped files, and only then traced.
The shipped files (``advisor.profiling.shipped``) are the cache's JSON for the specs of
``examples/*.yaml`` that use a built-in model, named by the same fingerprint, so a user's spec
with the same built-in, options, batch, precision and profile figures finds them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from advisor.spec import WorkloadSpec
from advisor.storage import data_dir, profile_cache_dir
from pricing.files import warn_cache_unwritable
from probes import WorkloadRecipe

__all__ = ["SHIPPED_PROFILES_DIR", "cached_or_shipped", "profile_cache_file", "recipe_for",
           "shipped_profile_file"]

T = TypeVar("T")

SHIPPED_PROFILES_DIR = Path(__file__).parent.parent / "data" / "profiles"


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


def shipped_profile_file(spec: WorkloadSpec, suffix: str) -> Path | None:
    """The shipped file ``<fingerprint><suffix>`` of ``spec`` (``.json``, ``.ops.json``,
    ``.opnames.json``), or None where none is shipped: only built-in models have them (an
    entrypoint's code is the user's and may change under the same fingerprint)."""
    if spec.model.builtin is None:
        return None
    path = SHIPPED_PROFILES_DIR / f"{spec.fingerprint()}{suffix}"
    return path if path.is_file() else None


def cached_or_shipped(spec: WorkloadSpec, cached: Path | None, suffix: str,
                      read: Callable[[Path], T | None]) -> T | None:
    """What ``read`` makes of the user's cache file ``cached``, else of the shipped file of
    ``spec`` with ``suffix``; None where neither is there or readable (stale, damaged)."""
    for path in (cached, shipped_profile_file(spec, suffix)):
        found = read(path) if path is not None else None
        if found is not None:
            return found
    return None
