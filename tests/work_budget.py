"""Asserting "fast" as bounded work, not seconds: a block runs under a budget of Python and C
function calls, which a loaded machine cannot break and an exponential expansion (an alias
bomb, a retry loop) cannot stay under."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class TooMuchWork(Exception):
    """The block made more calls than its budget (raised out of the profiled code)."""


@contextmanager
def at_most_calls(limit: int) -> Iterator[None]:
    """Fail with ``TooMuchWork`` once the block has made more than ``limit`` calls."""
    calls = 0

    def count(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1
            if calls > limit:
                raise TooMuchWork(f"more than {limit:,} calls")

    previous = sys.getprofile()
    sys.setprofile(count)
    try:
        yield
    finally:
        sys.setprofile(previous)
