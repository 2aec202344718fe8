"""Files the product writes (caches, snapshots, probe results, reports): whole or not at all.

Lives in ``pricing``, the bottom layer, so every package can use the one mechanism.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

__all__ = ["atomic_write", "warn_cache_unwritable", "write_cache"]

_warned: set[str] = set()  # each reason a cache cannot be written is said once per process


def atomic_write(path: Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` so that readers see the old file or the
    whole new one, never a part: a temporary file in the same folder, fsync, ``os.replace``.

    Creates missing folders. Raises OSError (a full disk, a read-only folder) after removing
    the temporary file; ``path`` is then unchanged. Returns ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name[:100]}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    # created as open() creates files (0666 less the umask), not mkstemp's 0600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
