"""Where reports go: what a report wrote, early checks of output paths, and safe writes.

A report path may sit in folders that do not exist yet: writing creates them. When a part of
the path is an existing file (``afile/sub``), :func:`check_output_path` says so before any
long work starts, naming the option; the writers raise the same kind of one-line
``ReportError`` if it happens anyway, never an ``OSError`` traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pricing.files import atomic_open
from reports.errors import ReportError

__all__ = ["ReportFiles", "check_output_path", "check_outputs_apart", "ensure_folder",
           "write_stream", "write_text"]


@dataclass(frozen=True)
class ReportFiles:
    """Paths a report wrote (``pdf`` is None unless asked for)."""

    html: Path
    csv: Path
    columns: Path
    pdf: Path | None = None


def _blocking_file(path: Path) -> Path | None:
    """The nearest existing ancestor of ``path`` when it is not a folder, else None."""
    for parent in path.parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def check_output_path(path: Path, *, option: str, folder: bool = False) -> None:
    """Raise ReportError naming ``option`` when ``path`` cannot be written; creates nothing.

    Fails when a folder on the way is an existing file, when ``path`` exists as the wrong kind
    (a folder where a file is wanted, or the reverse), or when the nearest existing folder is
    not writable. Missing folders are fine: the writers create them.
    """
    try:
        _check_output_path(path, option=option, folder=folder)
    except OSError as exc:  # a name too long for the file system, a loop of links...
        raise ReportError(f"{option}: cannot write {_shown(path)}: {exc.strerror or exc}; "
                          f"choose another {option} path") from None


def _shown(path: Path) -> str:
    text = str(path)
    return text if len(text) <= 80 else f"{text[:40]}...{text[-30:]}"


def _check_output_path(path: Path, *, option: str, folder: bool) -> None:
    blocker = _blocking_file(path)
    if blocker is not None:
        raise ReportError(f"{option}: {blocker} is a file, not a folder, so {path} cannot be "
                          f"created; choose another {option} path (or move {blocker} away)")
    if folder and path.exists() and not path.is_dir():
        raise ReportError(f"{option}: {path} is a file; give a folder (created if missing)")
    if not folder and path.is_dir():
        raise ReportError(f"{option}: {path} is a folder; give a file name inside it")
    # the folder the file is created in (atomically: a temporary name, then a rename)
    nearest = next((p for p in ((path,) if folder else ()) + tuple(path.parents)
                    if p.exists()), None)
    if nearest is not None and not os.access(nearest, os.W_OK | os.X_OK):
        raise ReportError(f"{option}: cannot write into {nearest} (permission denied); "
                          "choose a folder you can write to")


def _same_file(a: Path, b: Path) -> bool:
    if a.expanduser().resolve() == b.expanduser().resolve():
        return True
    try:  # a hard link, or two spellings resolve() leaves apart
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs_apart(outputs: Mapping[str, Path], *, reads: Mapping[str, Path]) -> None:
    """ReportError naming the option when an output is a file the command reads (writing it
    would destroy the user's input) or the file of another output; creates nothing."""
    for i, (option, path) in enumerate(outputs.items()):
        for name, source in reads.items():
            if _same_file(path, source):
                raise ReportError(f"{option}: {path} is {name}, the file this command reads; "
                                  "writing there would overwrite it: give another file name")
        for other, earlier in list(outputs.items())[:i]:
            if _same_file(path, earlier):
                raise ReportError(f"{option}: {path} is also where {other} goes; give each "
                                  "output its own file name")


def ensure_folder(folder: Path) -> Path:
    """Create ``folder`` and its missing parents; ReportError (one line) when it cannot."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ReportError(f"cannot create folder {folder}: {folder} is a file") from None
    except OSError as exc:
        blocker = _blocking_file(folder)
        why = f"{blocker} is a file" if blocker is not None else (exc.strerror or str(exc))
        raise ReportError(f"cannot create folder {folder}: {why}") from exc
    return folder


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` as UTF-8 to ``path``, creating missing folders; returns the path.

    Raises ReportError (one line with the path and the reason) instead of an OSError.
    """
    return write_stream(path, lambda handle: handle.write(text))


def write_stream(path: Path, write: Callable[[IO[str]], object]) -> Path:
    """Create ``path`` (and missing folders) by letting ``write`` write to a text handle, as it
    goes and atomically: a full disk leaves the old file, never a truncated one. Returns the
    path; raises ReportError (one line with the path and the reason) instead of an OSError."""
    ensure_folder(path.parent)
    try:
        with atomic_open(path) as handle:
            write(handle)
    except OSError as exc:
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return path
