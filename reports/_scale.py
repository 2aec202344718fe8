"""Axis scales and tick labels for the SVG charts (linear and log10, pure arithmetic)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Scale", "compact_number", "nice_ticks", "wants_log_axis"]


def compact_number(value: float) -> str:
    """Short tick label: 0.05, 1.5, 12, 3.4k, 2M, 1.2G."""
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if magnitude >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


def wants_log_axis(values: Sequence[float]) -> bool:
    """Whether positive ``values`` span more than 20x (then a log axis reads better)."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > 20


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round ticks (steps of 1, 2 or 5 x 10^k) covering [low, high]."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9)
    last = math.ceil(high / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


@dataclass(frozen=True)
class Scale:
    """Maps a data interval onto a pixel interval, linearly or by log10.

    ``low``/``high`` are data values (both > 0 for a log scale); ``start``/``end`` pixels
    (``end`` may be smaller than ``start`` for a y axis that grows upwards).
    """

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    @classmethod
    def fit(cls, values: list[float], start: float, end: float, *, log: bool = False,
            zero: bool = False, pad: float = 0.05) -> Scale:
        """A scale covering ``values`` (with padding; from zero when ``zero``)."""
        finite = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
        if not finite:
            return cls(1.0, 10.0, start, end, log) if log else cls(0.0, 1.0, start, end)
        low, high = min(finite), max(finite)
        if log:
            if high <= low:
                low, high = low / 2, high * 2
            span = math.log10(high) - math.log10(low)
            return cls(low / 10 ** (span * pad), high * 10 ** (span * pad), start, end, True)
        if zero:
            low = min(low, 0.0)
            high = max(high, 0.0)
        if high <= low:
            low, high = low - (abs(low) or 1.0) / 2, high + (abs(high) or 1.0) / 2
        span = high - low
        ticks = nice_ticks(low - (0 if zero and low == 0 else span * pad), high + span * pad)
        return cls(ticks[0], ticks[-1], start, end)

    def __call__(self, value: float) -> float:
        """Pixel position of ``value`` (clamped into the scale's domain)."""
        if self.log:
            value = max(value, self.low)
            fraction = (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low))
        else:
            fraction = (value - self.low) / (self.high - self.low)
        fraction = min(max(fraction, 0.0), 1.0)
        return self.start + fraction * (self.end - self.start)

    def ticks(self) -> list[float]:
        """Tick values inside the domain: round numbers, or 1/2/5 per decade on a log scale."""
        if not self.log:
            return [t for t in nice_ticks(self.low, self.high)
                    if self.low - 1e-9 <= t <= self.high + 1e-9]
        first, last = math.floor(math.log10(self.low)), math.ceil(math.log10(self.high))
        mantissas = (1, 2, 5) if last - first <= 3 else (1,)
        values = [m * 10.0 ** p for p in range(first, last + 1) for m in mantissas]
        return [v for v in values if self.low <= v <= self.high]
