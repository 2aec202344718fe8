"""The fitted default throughput model, cached on disk so ``recommend`` starts fast.

Fitting ``TransferModel`` with its residual calibration takes about a second; the
fitted model is pickled under ``<data dir>/cache/`` keyed by a hash of the reference file,
the published training figures, the shipped reference operator mixes, the accelerator specs
and the model's hyper-parameters, and refitted whenever one changes.
A missing, stale or unreadable cache file only costs a refit.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Mapping
from pathlib import Path

from advisor.profiling import REFERENCE_OP_MIX_JSON
from advisor.storage import data_dir
from advisor.throughput.published import PUBLISHED_CSV, load_published
from advisor.throughput.reference import REFERENCE_CSV, load_reference
from advisor.throughput.transfer import TransferModel
from pricing import AcceleratorSpec
from pricing.files import write_cache

__all__ = ["CACHE_VERSION", "cached_transfer_model"]

CACHE_VERSION = 13


def _cache_key(reference_path: Path, accelerators: Mapping[str, AcceleratorSpec],
               model: TransferModel) -> str:
    digest = hashlib.sha256()
    digest.update(f"v{CACHE_VERSION}".encode())
    digest.update(reference_path.read_bytes())
    digest.update(PUBLISHED_CSV.read_bytes())
    digest.update(REFERENCE_OP_MIX_JSON.read_bytes())
    digest.update(repr(sorted(accelerators.items())).encode())
    digest.update(repr(sorted(vars(model).items())).encode())
    return digest.hexdigest()[:24]


def cached_transfer_model(accelerators: Mapping[str, AcceleratorSpec], *,
                          reference_path: Path = REFERENCE_CSV,
                          cache_dir: Path | None = None) -> TransferModel:
    """``TransferModel()`` fitted on the reference file and anchored to the shipped published
    training figures (those of ``accelerators``), from the disk cache when possible."""
    model = TransferModel()
    folder = cache_dir or data_dir() / "cache"
    path = folder / f"throughput-{_cache_key(reference_path, accelerators, model)}.pkl"
    try:
        with path.open("rb") as handle:
            cached = pickle.load(handle)  # noqa: S301 - our own cache file
        if isinstance(cached, TransferModel):
            return cached
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        pass
    published = [r for r in load_published() if r.accelerator in accelerators]
    model.fit(load_reference(reference_path), accelerators, published=published)
    model.roofline()  # fitted on first use: fit it now so the cache holds it
    # a read-only or full data directory only costs the next run a refit (one warning line)
    write_cache(path, pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
    return model
