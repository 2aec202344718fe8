"""A local probe's harness ends with the process that launched it.

The local launcher starts the harness in its own session (so ending a probe ends its loader
workers too), which also keeps it alive when its launcher dies: a ``kill -9`` of
``advisor probe --on local`` would leave it measuring for the rest of its time box. The
launcher names itself in :data:`PARENT_PID_ENV`; the harness then polls its parent pid (a
reparented process has a new one) and, once the launcher is gone, kills its own process
group. A result being written is finished first (:func:`writing_result`), so a measurement
that finished is on disk for ``advisor probes gc`` to store.

Polling rather than ``prctl(PR_SET_PDEATHSIG)``: the signal fires when the launching
*thread* ends, which a launcher called from a worker thread does long before its process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator

__all__ = ["PARENT_PID_ENV", "exit_with_parent", "parent_pid_from_env", "writing_result"]

PARENT_PID_ENV = "ADVISOR_PROBE_PARENT_PID"
_POLL_S = 0.25
_WRITING = threading.Lock()


def _end_process_group() -> None:
    with _WRITING:  # a result being written is finished first
        with contextlib.suppress(OSError):
            os.killpg(os.getpgid(0), signal.SIGKILL)
        os._exit(1)


def exit_with_parent(parent_pid: int | None, *, poll_s: float = _POLL_S) -> None:
    """End this process and its process group once ``parent_pid`` is no longer its parent
    (checked every ``poll_s`` seconds by a daemon thread); None: nothing to watch."""
    if parent_pid is None or parent_pid <= 0:
        return
    if os.getppid() != parent_pid:  # gone before we looked
        _end_process_group()

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        _end_process_group()

    threading.Thread(target=watch, name="advisor-parent-watch", daemon=True).start()


def parent_pid_from_env() -> int | None:
    """The launcher's pid from :data:`PARENT_PID_ENV` (None when unset or not a number)."""
    text = os.environ.get(PARENT_PID_ENV, "")
    return int(text) if text.isdigit() else None


@contextlib.contextmanager
def writing_result() -> Iterator[None]:
    """Hold off the parent watch while a result is written (it ends the process after)."""
    with _WRITING:
        yield
