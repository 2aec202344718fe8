"""How numbers read in every output (terminal tables, JSON texts, HTML), so one figure looks
the same everywhere."""

from __future__ import annotations

import math

from probes import fmt_usd_pair, fmt_usd_small  # probe dollars

__all__ = ["fmt_bytes", "fmt_compact", "fmt_count", "fmt_money", "fmt_number", "fmt_usd",
           "fmt_usd_pair", "fmt_usd_small"]

_SIGNIFICANT_BELOW_USD_1 = 3  # fmt_usd's figures for amounts under a dollar


def fmt_count(count: int, noun: str) -> str:
    """``1 trial``, ``2,000 trials``: a count with its noun in the right number."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def fmt_number(value: float) -> str:
    """Three significant figures with thousands separators (12,300 / 45.6 / 0.0789)."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def fmt_usd(value: float) -> str:
    """US dollars with thousands separators, no sign: to the cent from $1 up (1,234.56 /
    3.63), three significant figures below, zeros past the cents dropped (0.523 / 0.0213 /
    0.50 / 0.004), so cheap runs that differ read differently."""
    magnitude = abs(value)
    if magnitude == 0 or magnitude >= 1 or not math.isfinite(value):
        return f"{value:,.2f}"
    decimals = _SIGNIFICANT_BELOW_USD_1 - 1 - math.floor(math.log10(magnitude))
    whole, _, fraction = f"{value:.{max(decimals, 2)}f}".partition(".")
    return f"{whole}.{fraction[:2]}{fraction[2:].rstrip('0')}"


def fmt_money(value: float) -> str:
    """:func:`fmt_usd` with the dollar sign (``$3.63``, ``-$1,200.00``)."""
    return f"-${fmt_usd(-value)}" if value < 0 else f"${fmt_usd(value)}"


def fmt_bytes(count: int) -> str:
    """A size in binary units: ``512 B``, ``141.0 KiB``, ``2.3 GiB``."""
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024:
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f} TiB"


def fmt_compact(value: float) -> str:
    """Three significant figures with a k / M / G suffix for large values (14.6M / 932)."""
    rounded = float(f"{value:.3g}")
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(rounded) >= scale:
            return f"{rounded / (scale if suffix != 'k' else 1e3):.3g}{suffix}"
    return fmt_number(rounded)
