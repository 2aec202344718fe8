"""A wall-clock limit on a block of the user's code (profiling an entrypoint, say).

A timer signal interrupts the block, so it needs the main thread of a POSIX process; elsewhere
the block runs without a limit (stated in ``time_limit``'s docstring, not hidden). Code that
never returns to the interpreter (a blocking C call) is interrupted when it does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from advisor.errors import AdvisorError

__all__ = ["time_limit"]


class _TimedOut(BaseException):
    """Raised in the interrupted block; a BaseException so user code's ``except Exception``
    cannot swallow it."""


@contextmanager
def time_limit(seconds: float, message: str) -> Iterator[None]:
    """Raise ``AdvisorError(message)`` when the block runs longer than ``seconds``; no limit
    off the main thread or where the platform has no interval timer."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, expire)
    try:  # the timer may fire at once (a tiny limit) or while it is being disarmed
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _TimedOut:
        raise AdvisorError(message) from None
    finally:
        signal.signal(signal.SIGALRM, previous)
