"""How a ranking is asked for: which figure orders it (``RankBy``) and whether a tuned
configuration's throughput stands for a probe's (``TunedPolicy``).

Plain enums with no other imports, so that the commands' ``--rank-by`` and ``--tuned``
options (and their ``--help``) do not import the ranking itself.
"""

from __future__ import annotations

import enum

__all__ = ["RankBy", "TunedPolicy"]


class RankBy(enum.StrEnum):
    """Which figure of samples per dollar orders the ranking."""

    CONSERVATIVE = "conservative"  # the low end of the interval: evidence first
    ESTIMATE = "estimate"  # the point estimate: the best guess, however weak its basis

    @property
    def order_text(self) -> str:
        """What orders the ranking, as the terminal's title and the HTML's subtitle say it
        ("best samples per dollar first, by ...")."""
        return ("the low end of its range" if self is RankBy.CONSERVATIVE
                else "its point estimate")


class TunedPolicy(enum.StrEnum):
    """Whether a tuned configuration's throughput replaces the probe's own: never, only one
    with the spec's numerics (precision and batch unchanged), or any the tune measured."""

    OFF = "off"
    SAME_NUMERICS = "same_numerics"
    ANY = "any"
