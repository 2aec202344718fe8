"""Pure statistics of step times: warm-up detection and a confidence interval of throughput.

Step times are autocorrelated (allocator growth, thermal, neighbours), so the interval is
computed on batch means: the measured steps are cut into about ``sqrt(n)`` consecutive blocks
and the blocks' mean step times are treated as independent.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["percentile", "relative_drift", "relative_halfwidth", "t_quantile_975",
           "warmup_done"]


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (Cornish-Fisher)."""
    if df < 1:
        raise ValueError(f"df must be >= 1, got {df}")
    exact = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571}
    if df in exact:
        return exact[df]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def relative_halfwidth(step_times_s: Sequence[float], *, min_blocks: int = 5) -> float:
    """Relative 95% half-width of the mean step time (so of samples/s, to first order).

    Infinity until there are enough steps for ``min_blocks`` blocks.
    """
    n = len(step_times_s)
    block = max(1, math.isqrt(n))
    blocks = n // block
    if blocks < min_blocks:
        return math.inf
    means = [statistics.fmean(step_times_s[i * block:(i + 1) * block]) for i in range(blocks)]
    mean = statistics.fmean(means)
    if mean <= 0:
        return math.inf
    spread = statistics.stdev(means)
    return t_quantile_975(blocks - 1) * spread / math.sqrt(blocks) / mean


def warmup_done(step_times_s: Sequence[float], *, window: int = 3, tolerance: float = 0.05) -> bool:
    """True once step times have stopped falling.

    Compares the median of the last ``window`` steps with the median of the ``window``
    before them: warm-up is over when the newer window is no more than ``tolerance``
    (relative) faster than the older one.
    """
    if len(step_times_s) < 2 * window:
        return False
    newer = statistics.median(step_times_s[-window:])
    older = statistics.median(step_times_s[-2 * window:-window])
    return newer >= older * (1.0 - tolerance)


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) with linear interpolation."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def relative_drift(step_times_s: Sequence[float]) -> float:
    """How far the mean step time of the second half is from the first half's, relative.

    A stable interval is not enough when the steps still drift (warm-up not over, a
    neighbour arriving); measuring continues until both halves agree.
    """
    n = len(step_times_s)
    if n < 4:
        return math.inf
    first = statistics.fmean(step_times_s[:n // 2])
    second = statistics.fmean(step_times_s[n // 2:])
    mean = (first + second) / 2.0
    return abs(second - first) / mean if mean > 0 else math.inf
