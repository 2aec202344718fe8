"""The one exception root of the advisor package."""

from __future__ import annotations

__all__ = ["AdvisorError", "NoFeasibleOffer", "SpecError"]


class AdvisorError(Exception):
    """Anything the advisor cannot do; the message says what to change."""


class SpecError(AdvisorError, ValueError):
    """A user file (model.yaml, sweep.yaml) has a bad field.

    ``field`` is the dotted path (``constraints.budget_usd``); the message names the bad
    value and how to fix it.
    """

    def __init__(self, field: str, problem: str, *, source: str = "") -> None:
        self.field = field
        self.problem = problem
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{field}: {problem}")


class NoFeasibleOffer(AdvisorError):
    """No offer meets every constraint of a workload: its ranking is empty.

    ``rejected`` is how many offers were rejected (0: the catalog had none to rank); the
    recommendation's advice says which constraint to loosen.
    """

    def __init__(self, message: str, *, workload: str = "", rejected: int = 0) -> None:
        self.workload = workload
        self.rejected = rejected
        super().__init__(message)
