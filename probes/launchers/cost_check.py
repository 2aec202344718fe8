"""The one check of probe quotes against their dollar caps, before anything starts.

``advisor probe`` (through ``advisor.ranking.ProbeBatch``) and ``probes.orchestrate.run_probes``
both ask ``check_cost``; a refusal is ``OverProbeBudget`` (a ``ProbeError``) with the two
figures compared, written so that they never read the same (``fmt_usd_pair``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from probes.errors import ProbeError

if TYPE_CHECKING:
    from probes.launchers.quote import ProbeQuote

__all__ = ["OverProbeBudget", "check_cost", "fmt_usd_pair", "fmt_usd_small"]

_MAX_USD_DECIMALS = 8  # how far fmt_usd_pair goes to tell two amounts apart


class OverProbeBudget(ProbeError):
    """Probes whose quote is over a dollar cap, refused before anything started;
    ``estimate_usd`` and ``max_usd`` are the two figures compared."""

    def __init__(self, message: str, *, estimate_usd: float, max_usd: float) -> None:
        super().__init__(message)
        self.estimate_usd = estimate_usd
        self.max_usd = max_usd


def check_cost(quotes: Sequence[ProbeQuote], max_usd: float | None) -> float:
    """The total of ``quotes``; OverProbeBudget when one is over its own ``max_usd`` or the
    total is over ``max_usd`` (``--max-usd``; None: no cap)."""
    for quote in quotes:
        if quote.max_usd is not None and quote.usd > quote.max_usd:
            own, cap = fmt_usd_pair(quote.usd, quote.max_usd)
            raise OverProbeBudget(f"probe on {quote.offer_key} may cost ${own}, over its max_usd "
                                  f"${cap}; shorten --time-box or raise --max-usd",
                                  estimate_usd=quote.usd, max_usd=quote.max_usd)
    total = sum(quote.usd for quote in quotes)
    if max_usd is not None and total > max_usd:
        shown, cap = fmt_usd_pair(total, max_usd)
        raise OverProbeBudget(f"these probes may cost ${shown}, over --max-usd ${cap}; probe "
                              "fewer offers, shorten --time-box, or raise --max-usd",
                              estimate_usd=total, max_usd=max_usd)
    return total


def fmt_usd_small(amount: float, decimals: int | None = None) -> str:
    """Dollars without the sign for small amounts (probe costs): cents from $0.10 up, four
    decimals below ($0.0123, not $0.01); trailing zeros past the cents dropped ($0.001)."""
    if decimals is None:
        decimals = 2 if amount == 0 or abs(amount) >= 0.1 else 4
    text = f"{amount:.{decimals}f}"
    whole, _, cents = text.partition(".")
    return f"{whole}.{cents[:2]}{cents[2:].rstrip('0')}" if cents else text


def fmt_usd_pair(first: float, second: float) -> tuple[str, str]:
    """Both amounts as ``fmt_usd_small`` writes them, with more decimals while they would
    print the same (an estimate just over a cap must not read as equal to it)."""
    decimals = max(2 if x == 0 or abs(x) >= 0.1 else 4 for x in (first, second))
    while (fmt_usd_small(first, decimals) == fmt_usd_small(second, decimals) and first != second
           and decimals < _MAX_USD_DECIMALS):
        decimals += 1
    return fmt_usd_small(first, decimals), fmt_usd_small(second, decimals)
