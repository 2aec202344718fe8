"""Files the product writes (caches, snapshots, probe results, reports): whole or not at all.

Lives in ``pricing``, the bottom layer, so every package can use the one mechanism.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_open", "atomic_write", "warn_cache_unwritable", "write_cache"]

_warned: set[str] = set()  # each reason a cache cannot be written is said once per process


@contextmanager
def atomic_open(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A handle (``mode`` ``"w"``: text as UTF-8, ``"wb"``: bytes) on a temporary file beside
    ``path`` that replaces ``path`` when the block ends without an error (after fsync), so
    readers see the old file or the whole new one, never a part; written as it goes, so a
    large file never exists whole in memory.

    Creates missing folders. On an error (a full disk, a read-only folder, the caller's own)
    the temporary file is removed, ``path`` is unchanged and the error propagates.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode must be 'w' or 'wb', got {mode!r}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name[:100]}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    # created as open() creates files (0666 less the umask), not mkstemp's 0600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with (os.fdopen(fd, "wb") if mode == "wb"
              else os.fdopen(fd, "w", encoding="utf-8", newline="")) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole or not at all (``atomic_open``);
    raises OSError with ``path`` unchanged. Returns ``path``."""
    with atomic_open(path, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def write_cache(path: Path, data: str | bytes) -> bool:
    """``atomic_write`` for a cache, which no answer needs: on OSError say so in one
    warning line (once per process) and return False."""
    try:
        atomic_write(path, data)
    except OSError as exc:
        warn_cache_unwritable(path.parent, exc)
        return False
    return True


def warn_cache_unwritable(folder: Path, exc: OSError) -> None:
    """One warning line on stderr for a cache folder that cannot be created or written (each
    reason once per process: several caches on one full disk are one line)."""
    reason = exc.strerror or str(exc)
    if reason not in _warned:
        _warned.add(reason)
        sys.stderr.write(f"warning: cannot cache in {folder} ({reason}); the answer is the "
                         "same, the next run measures again\n")
