"""A probe's progress channel: the harness appends one line per finished step of work (a tune
appends one per configuration run) to a file its launcher names, and the launcher reads back
the lines it has not forwarded yet while it waits for the result.

The file is plain text, one event a line, appended and flushed as each happens; a reader keeps
its byte offset and takes whole lines only, so a line being written is read on the next poll.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["PROGRESS_ENV", "ProgressReader", "progress_writer"]

PROGRESS_ENV = "ADVISOR_PROBE_PROGRESS"  # the file the harness appends its progress lines to


def progress_writer(path: str | None) -> Callable[[str], None] | None:
    """A function appending one line (control characters and newlines folded to spaces) to
    ``path``; None when no path is given. Writing never raises: progress is extra."""
    if not path:
        return None
    target = Path(path)

    def write(line: str) -> None:
        text = "".join(" " if ch in "\r\n" else ch for ch in line)
        try:
            with open(target, "a", encoding="utf-8") as handle:
                handle.write(text + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            pass

    return write


class ProgressReader:
    """Reads the lines appended to one progress file since the last call (not thread-safe)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def new_lines(self) -> list[str]:
        """Whole lines written since the previous call; [] when the file is absent."""
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []
        self._offset += end + 1
        return [line.decode("utf-8", "replace") for line in data[:end].split(b"\n")]
