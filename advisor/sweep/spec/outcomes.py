"""How trials and sweeps end: a trial's ``TrialStatus``, and why a sweep (or one of its
workers) stopped, a kind and the figures it compared.

Every stop reason is a ``StopReason``: its ``kind`` (a ``StopKind``, whose data say how it
reads and whether the sweep failed) and the numbers that decided it (dollars spent against
the cap, trials started against ``max_trials``...). ``render_stop_reason`` is the one place
that turns it into a sentence; nothing reads a sentence back. Pure values, no Optuna.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Self

from advisor.errors import AdvisorError
from advisor.formatting import fmt_money
from pricing.records import Record

__all__ = ["StopKind", "StopReason", "TrialStatus", "render_stop_reason"]


class TrialStatus(enum.StrEnum):
    """A trial's state as the sweep shows and stores it: Optuna's state name in lower case
    (``fail``, not ``failed``), so JSON, CSV and the dictionaries keyed by it keep the words
    they always had. Defined in the order reports list them."""

    COMPLETE = "complete"  # returned its objective value
    PRUNED = "pruned"  # stopped early by the pruner
    FAIL = "fail"  # raised, returned no number, was interrupted, or its worker died
    RUNNING = "running"  # started, not ended yet
    WAITING = "waiting"  # enqueued, not started

    @classmethod
    def of(cls, state: object) -> TrialStatus:
        """The status of an Optuna ``TrialState`` (or of its stored name, ``COMPLETE``)."""
        name = getattr(state, "name", state)
        return cls(str(name).lower())

    @property
    def ended(self) -> bool:
        """True for complete, pruned and failed trials (what is charged as spent)."""
        return self in _ENDED

    @property
    def stored(self) -> str:
        """The state's name in Optuna's ``trials`` table: ``COMPLETE``, ``FAIL``..."""
        return self.name


_ENDED = frozenset({TrialStatus.COMPLETE, TrialStatus.PRUNED, TrialStatus.FAIL})


class StopKind(enum.Enum):
    """What stopped a sweep; ``template`` renders its figures, ``failure`` means the sweep failed."""

    def __init__(self, key: str, template: str, failure: bool) -> None:
        self.key = key
        self.template = template
        self.failure = failure

    MAX_TRIALS = ("max_trials", "max_trials reached ({trials} of {max_trials})", False)
    MAX_HOURS = ("max_hours", "max_hours reached ({max_hours:g} h)", False)
    DOLLAR_CAP = ("dollar_cap", "dollar cap: {spent_usd} spent + {running_usd} running + "
                  "{next_usd} for one more trial (worst cases) would pass max_usd {max_usd}",
                  False)
    GRID_EXHAUSTED = ("grid_exhausted", "grid exhausted ({trials} points)", False)
    FAILURES_IN_A_ROW = ("failures_in_a_row", "{trials} trials failed in a row; last error: "
                         "{last_error}; fix the objective, then run the sweep again to resume "
                         "it", True)
    INTERRUPTED = ("interrupted", "interrupted (Ctrl-C)", False)
    STOPPED = ("stopped", "interrupted", False)  # the caller's stop event was set
    WORKERS_FINISHED = ("workers_finished", "workers finished", False)
    BUDGET_DRAINED = ("budget_drained", "budget reached; no trial running", False)
    DRAIN_TIMED_OUT = ("drain_timed_out",
                       "budget reached; trials still running after {drain_s:.0f} s", False)
    RECORDED = ("recorded", "{text}", False)  # the sentence a study of an older version stored

    @classmethod
    def of_key(cls, key: str) -> StopKind | None:
        """The kind stored as ``key`` (None for an unknown one)."""
        return next((kind for kind in cls if kind.key == key), None)


@dataclass(frozen=True)
class StopReason(Record):
    """A stop reason with its figures: trial counts, hours, dollars (USD), seconds.

    Only the figures its kind's template names are meaningful; the others stay at zero.
    """

    _error = AdvisorError

    kind: StopKind
    trials: int = 0
    max_trials: int = 0
    max_hours: float = 0.0
    spent_usd: float = 0.0
    running_usd: float = 0.0
    next_usd: float = 0.0
    max_usd: float = 0.0
    drain_s: float = 0.0
    last_error: str = ""
    text: str = ""

    @property
    def failure(self) -> bool:
        """True when the sweep stopped because its trials kept failing."""
        return self.kind.failure

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON, as the study stores it: the kind's key and the figures that differ
        from their defaults."""
        out: dict[str, Any] = {"kind": self.kind.key}
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The reason ``to_dict`` wrote; figures it does not know (a newer version's) are
        left out. Raises AdvisorError naming an unknown kind or a figure of the wrong type."""
        raw = data.get("kind") if isinstance(data, Mapping) else data
        kind = StopKind.of_key(raw) if isinstance(raw, str) else None
        if kind is None:
            raise AdvisorError(f"{cls.record_name()}: bad JSON (kind {raw!r} is not one of "
                               f"{', '.join(k.key for k in StopKind)})")
        figures = {f.name for f in fields(cls)[1:]}
        return super().from_dict({k: v for k, v in data.items() if k in figures} | {"kind": kind})


def render_stop_reason(reason: StopReason) -> str:
    """The reason as one sentence, its figures filled in (dollars as every output writes
    them: ``advisor.formatting.fmt_money``)."""
    figures = {f.name: fmt_money(getattr(reason, f.name)) if f.name.endswith("_usd")
               else getattr(reason, f.name) for f in fields(reason)[1:]}
    return reason.kind.template.format(**figures)
