"""The largest batch that fits: doubling until out of memory, then narrowing the bracket.

Pure logic over a ``try_batch(batch_size) -> (fits, peak_memory_gib)`` callable, so the search
runs the same on every device and tests drive it with a fake. Narrowing alternates a guess
from the measured peaks (memory grows linearly with the batch, so the line through the two
largest fitting batches predicts where it meets the limit) with plain bisection, which keeps
the worst case logarithmic when the guess is off (allocator rounding, fragmentation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["BatchSearch", "is_tight", "search_largest_batch"]

TryBatch = Callable[[int], tuple[bool, float | None]]

# Below the memory limit by this much, so the guess tends to land on the fitting side.
_GUESS_HEADROOM = 0.97


@dataclass(frozen=True)
class BatchSearch:
    """What the search found: ``largest_fit`` (None: not even batch 1, or no time to find one),
    its peak memory, the smallest batch seen to fail, and whether the bracket is tight."""

    largest_fit: int | None
    largest_fit_peak_gib: float | None
    smallest_failure: int | None
    complete: bool
    trials: int


def is_tight(low: int, high: int, *, exact: bool = False) -> bool:
    """A bracket is tight when its ends are adjacent or (unless ``exact``) within 2% of the
    fitting end."""
    return high - low <= (1 if exact else max(1, low // 50))


def _guess(points: dict[int, float], limit_gib: float | None) -> int | None:
    """The batch where the line through the two largest measured fits meets the limit."""
    if limit_gib is None or len(points) < 2:
        return None
    (b1, m1), (b2, m2) = sorted(points.items())[-2:]
    slope = (m2 - m1) / (b2 - b1)
    if slope <= 0:
        return None
    return int(b2 + (limit_gib * _GUESS_HEADROOM - m2) / slope)


def search_largest_batch(
    try_batch: TryBatch,
    *,
    start: int,
    start_fits: bool,
    start_peak_gib: float | None = None,
    limit_gib: float | None = None,
    max_batch: int = 1 << 16,
    out_of_time: Callable[[], bool] = lambda: False,
    exact: bool = False,
) -> BatchSearch:
    """Search from ``start`` (known to fit or not): halve until one fits, double until one
    fails (or ``max_batch``), then narrow until tight. ``limit_gib`` (the memory cap or the
    device's memory) only steers guesses; ``try_batch`` decides. Stops early, with what it
    has, once ``out_of_time()``. ``exact`` narrows to adjacent batches, and past the last
    doubling up to ``max_batch`` itself (for a cheap ``try_batch``, e.g. a memory model)."""
    low: int | None = start if start_fits else None
    high: int | None = None if start_fits else start
    points: dict[int, float] = {start: start_peak_gib} if start_fits and start_peak_gib else {}
    trials = 0
    guess_next = True

    def attempt(batch: int) -> None:
        nonlocal low, high, trials
        trials += 1
        fits, peak = try_batch(batch)
        if fits:
            low = batch
            if peak:
                points[batch] = peak
        else:
            high = batch

    def upper() -> int | None:  # the bracket's failing end (past max_batch when exact)
        return high if high is not None or not exact else max_batch + 1

    while low is None and high is not None and high > 1 and not out_of_time():
        attempt(high // 2)
    while low is not None and high is None and low * 2 <= max_batch and not out_of_time():
        attempt(low * 2)
    while (low is not None and (top := upper()) is not None
           and not is_tight(low, top, exact=exact) and not out_of_time()):
        middle = (low + top) // 2
        guess = _guess(points, limit_gib) if guess_next else None
        attempt(guess if guess is not None and low < guess < top else middle)
        guess_next = not guess_next
    top = upper()
    complete = (high == 1 and low is None) or (
        low is not None and top is not None and is_tight(low, top, exact=exact))
    return BatchSearch(low, points.get(low) if low is not None else None, high, complete, trials)
