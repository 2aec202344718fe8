"""The sweep's exceptions a caller can act on, leaves of ``advisor.errors.AdvisorError``.

Every other sweep failure is an ``AdvisorError`` (or a ``SpecError`` for sweep.yaml) whose
message says what to change; these say which condition it was, so a script can wait and
retry (``StoreUnavailable``) or raise the budget (``OverBudget``) instead of parsing the text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.sweep.spec.outcomes import StopReason

__all__ = ["OverBudget", "StoreUnavailable"]


class OverBudget(AdvisorError):  # noqa: N818 - the condition, as callers name it
    """No trial may start: the sweep's dollar cap (``budget.max_usd``) would be passed.

    ``reason`` is the dollar-cap ``StopReason`` with its figures (spent, running, the next
    trial's worst case, the cap); the message is its sentence.
    """

    def __init__(self, reason: StopReason) -> None:
        from advisor.sweep.spec.outcomes import render_stop_reason

        self.reason = reason
        super().__init__(render_stop_reason(reason))


class StoreUnavailable(AdvisorError):  # noqa: N818 - the condition, as callers name it
    """The study's database could not be reached (a server down or restarting, a network cut)
    for as long as the sweep waits for it; trying again later may work. The message names
    what failed and the database's own error."""
