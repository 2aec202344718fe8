"""How numbers read in every output (terminal tables, JSON texts, HTML), so one figure looks
the same everywhere."""

from __future__ import annotations

__all__ = ["fmt_compact", "fmt_count", "fmt_money", "fmt_number", "fmt_usd"]


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
    """US dollars to the cent with thousands separators, no sign (1,234.56 / 3.63 / 0.02)."""
    return f"{value:,.2f}"


def fmt_money(value: float) -> str:
    """:func:`fmt_usd` with the dollar sign (``$3.63``, ``-$1,200.00``)."""
    return f"-${fmt_usd(-value)}" if value < 0 else f"${fmt_usd(value)}"


def fmt_compact(value: float) -> str:
    """Three significant figures with a k / M / G suffix for large values (14.6M / 932)."""
    rounded = float(f"{value:.3g}")
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(rounded) >= scale:
            return f"{rounded / (scale if suffix != 'k' else 1e3):.3g}{suffix}"
    return fmt_number(rounded)
