"""The fitted default throughput model, cached so ``recommend`` starts fast.

Fitting ``TransferModel`` with its residual calibration takes a few seconds; the fitted model
(its ``PlainTransferModel``, free of scikit-learn's classes, so loading it imports no
scikit-learn) is pickled under ``<data dir>/cache/`` keyed by a hash of the reference file, the published
training figures, the shipped reference operator mixes, the accelerator specs, the model's
hyper-parameters and the source of ``advisor.throughput``, and refitted whenever one
changes. A missing, stale or unreadable cache file only costs a refit. Within one process
the pickled bytes are also kept in memory, so a second data directory (each test has its
own) does not refit; every caller gets its own copy of the model.

The package ships the fitted model too, as ``advisor/data/throughput-<key>.pkl`` (the cache
file's name and bytes; ``python -m advisor.throughput.shipped_artifacts`` writes it): where
its key is the current one, a first run loads it instead of fitting; a stale one (the data or
this code changed since) is ignored, and the model fitted and cached as before.

A first run without it has two slow parts, profiling the workload with torch and fitting the
model: ``fit_in_background`` starts the fit in another process beside the profiling, and
``cached_transfer_model`` waits for that process instead of fitting again.
"""

from __future__ import annotations

import atexit
import hashlib
import pickle
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from advisor.profiling import REFERENCE_OP_MIX_JSON
from advisor.storage import data_dir
from advisor.throughput._plain import PlainTransferModel
from advisor.throughput.published import PUBLISHED_CSV, load_published
from advisor.throughput.reference import REFERENCE_CSV, load_reference
from pricing import AcceleratorSpec
from pricing.files import write_cache

__all__ = ["CACHE_VERSION", "SHIPPED_MODEL_DIR", "cached_transfer_model", "fit_in_background",
           "shipped_model_file", "write_shipped_model"]

CACHE_VERSION = 17
# The shipped fitted model. Pickle, like the cache: a file of our own package, not user input.
SHIPPED_MODEL_DIR = Path(__file__).parent.parent / "data"
BACKGROUND_WAIT_S = 300.0  # a background fit that takes longer is left, and the model refitted

_fitted: dict[str, bytes] = {}  # cache key -> the pickled fitted model, in this process
_background: dict[Path, subprocess.Popen[bytes]] = {}  # cache file -> the process fitting it


def _cache_key(reference_path: Path, accelerators: Mapping[str, AcceleratorSpec],
               model: PlainTransferModel) -> str:
    digest = hashlib.sha256()
    digest.update(f"v{CACHE_VERSION}".encode())
    digest.update(reference_path.read_bytes())
    digest.update(PUBLISHED_CSV.read_bytes())
    digest.update(REFERENCE_OP_MIX_JSON.read_bytes())
    digest.update(repr(sorted(accelerators.items())).encode())
    digest.update(repr(sorted(vars(model).items())).encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):  # the code that fits it
        digest.update(source.read_bytes())
    return digest.hexdigest()[:24]


def _file_name(key: str) -> str:
    return f"throughput-{key}.pkl"


def _cache_path(accelerators: Mapping[str, AcceleratorSpec], reference_path: Path,
                cache_dir: Path | None) -> tuple[str, Path]:
    key = _cache_key(reference_path, accelerators, PlainTransferModel())
    return key, (cache_dir or data_dir() / "cache") / _file_name(key)


def shipped_model_file(accelerators: Mapping[str, AcceleratorSpec], *,
                       reference_path: Path = REFERENCE_CSV) -> Path:
    """Where the shipped model fitted for ``accelerators`` on ``reference_path`` is, were it
    current (the file is there only when its key is today's)."""
    return SHIPPED_MODEL_DIR / _file_name(_cache_key(reference_path, accelerators,
                                                     PlainTransferModel()))


def _load(blob: bytes) -> PlainTransferModel | None:
    try:
        model = pickle.loads(blob)  # noqa: S301 - our own cache or package file
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        return None
    return model if isinstance(model, PlainTransferModel) else None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _wait_for_background(path: Path) -> None:
    """Wait for a fit this process started in the background for ``path``, if any."""
    process = _background.pop(path, None)
    if process is not None:
        try:
            process.wait(timeout=BACKGROUND_WAIT_S)
        except subprocess.TimeoutExpired:
            process.kill()


def cached_transfer_model(accelerators: Mapping[str, AcceleratorSpec], *,
                          reference_path: Path = REFERENCE_CSV,
                          cache_dir: Path | None = None,
                          use_shipped: bool = True) -> PlainTransferModel:
    """``TransferModel()`` fitted on the reference file and anchored to the shipped published
    training figures (those of ``accelerators``), as its ``PlainTransferModel``: from this
    process's memory, the disk cache, the shipped file (unless ``use_shipped`` is False) or
    a background fit when possible, else fitted now (and cached)."""
    key, path = _cache_path(accelerators, reference_path, cache_dir)
    _wait_for_background(path)
    on_disk = _read(path)
    for blob in (_fitted.get(key), on_disk):
        if blob is not None and (cached := _load(blob)) is not None:
            _fitted[key] = blob
            if on_disk is None:  # fitted earlier in this process: the next one reads it
                write_cache(path, blob)
            return cached
    # the shipped model, where its key is today's (not copied to the cache: each run reads it)
    shipped = _read(SHIPPED_MODEL_DIR / _file_name(key)) if use_shipped else None
    if shipped is not None and (model := _load(shipped)) is not None:
        return model
    model = _fit(accelerators, reference_path)
    blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
    _fitted[key] = blob
    # a read-only or full data directory only costs the next run a refit (one warning line)
    write_cache(path, blob)
    return model


def _fit(accelerators: Mapping[str, AcceleratorSpec], reference_path: Path) -> PlainTransferModel:
    """The default model fitted now."""
    from advisor.throughput.transfer import TransferModel  # scikit-learn: only to fit

    published = [r for r in load_published() if r.accelerator in accelerators]
    model = TransferModel().fit(load_reference(reference_path), accelerators=accelerators,
                                published=published).plain()
    model.warm()  # the roofline and pair shift are fitted on first use: now, for the cache
    return model


def write_shipped_model(accelerators: Mapping[str, AcceleratorSpec]) -> Path:
    """Fit the default model for ``accelerators`` and write it as the shipped file, removing
    the shipped files of older keys; the path written."""
    path = shipped_model_file(accelerators)
    blob = pickle.dumps(_fit(accelerators, REFERENCE_CSV), protocol=pickle.HIGHEST_PROTOCOL)
    for old in SHIPPED_MODEL_DIR.glob(_file_name("*")):
        old.unlink()
    path.write_bytes(blob)
    return path


@atexit.register
def _end_background_fits() -> None:
    """A fit still running when this process ends is stopped (its cache file is written
    whole or not at all), so no process outlives the command that started it."""
    while _background:
        _, process = _background.popitem()
        process.kill()
        process.wait()


def fit_in_background(accelerators: Mapping[str, AcceleratorSpec]) -> bool:
    """Start fitting the default model into the disk cache in another process when neither
    this process, the cache nor the shipped file has it (a first run: the caller profiles
    meanwhile, and ``cached_transfer_model`` waits for it); True when a fit was started. The
    other process fits for the shipped accelerator specs: for others the wait finds nothing
    and refits."""
    key, path = _cache_path(accelerators, REFERENCE_CSV, None)
    if key in _fitted or path in _background or path.is_file() \
            or (SHIPPED_MODEL_DIR / _file_name(key)).is_file():
        return False
    try:
        _background[path] = subprocess.Popen(  # noqa: S603 - this interpreter, our module
            [sys.executable, "-m", "advisor.throughput.model_cache"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # no process to spare: the fit happens in this one when needed
        return False
    return True


if __name__ == "__main__":  # the background fit: python -m advisor.throughput.model_cache
    from pricing.accelerators import load_accelerators

    # started only where the shipped model is not current: fit into the cache regardless
    cached_transfer_model(load_accelerators(), use_shipped=False)
