"""The sweep's exceptions a caller can act on, leaves of ``advisor.errors.AdvisorError``.

Every other sweep failure is an ``AdvisorError`` (or a ``SpecError`` for sweep.yaml) whose
message says what to change; ``StoreUnavailable`` says which condition it was, so a script can wait and
retry instead of parsing the text. (A dollar cap is no error: the sweep stops with its
``StopReason``; a ranking with no feasible offer is ``advisor.errors.NoFeasibleOffer``.)
"""

from __future__ import annotations

from advisor.errors import AdvisorError

__all__ = ["StoreUnavailable"]


class StoreUnavailable(AdvisorError):  # noqa: N818 - the condition, as callers name it
    """The study's database could not be reached (a server down or restarting, a network cut)
    for as long as the sweep waits for it; trying again later may work. The message names
    what failed and the database's own error."""
