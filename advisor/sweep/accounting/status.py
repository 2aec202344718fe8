"""The one read model of a sweep: ``SweepStatus``, its totals and one ``TrialCost`` per trial.

``advisor sweep status`` (table and ``--json``), the progress bar, ``run_sweep``'s outcome and
the sweep report (HTML, CSV) all render this record; nothing downstream reads Optuna or the
study's attributes. ``sweep_status(study)`` builds it: each trial's dollars from ``cost_of``
(the cost recorded on the trial at the price it ran at, never re-priced; a running trial at
what it cost so far), each trial costed once.

Savings by pruning are an estimate: a pruned trial that reported ``k`` intermediate values
when a full trial reports ``n`` ran ``k/n`` of its length, so completing it would have cost
``cost * n / k``; the saving is that minus what it cost. Tests and benchmarks build
``SweepStatus`` by hand (a trial's state may be given as its string).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError
from advisor.sweep.accounting.budget import cost_of
from advisor.sweep.accounting.instances import overhead_usd
from advisor.sweep.accounting.ledger import usd_by_worker
from advisor.sweep.accounting.records import (
    cleaned_bytes,
    instances_of,
    read_settings,
    read_stop,
    trial_record,
)
from advisor.sweep.accounting.timestamps import frozen_moment
from advisor.sweep.spec.outcomes import TrialStatus, render_stop_reason
from pricing.records import JsonView, Record

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

__all__ = ["STATES", "StudyListing", "SweepStatus", "TrialCost", "pruning_savings_usd",
           "study_listing", "sweep_status"]

STATES = tuple(TrialStatus)  # the order reports list states in


@dataclass(frozen=True)
class TrialCost:
    """One trial: its state, objective, dollars at the price it ran at, and when it ran (UTC).

    ``value`` is the final objective of a completed trial, or the last reported intermediate
    value of a pruned one (``value_is_intermediate`` then True); None otherwise. ``error`` is
    the one-line error recorded on a failed trial.
    """

    number: int
    state: TrialStatus
    value: float | None
    cost_usd: float
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wall_s: float | None = None
    price_usd_per_hour: float | None = None
    steps_reported: int = 0
    value_is_intermediate: bool = False
    params: Mapping[str, object] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.state, TrialStatus):  # a hand-built row: "complete"...
            object.__setattr__(self, "state", TrialStatus(self.state))


@dataclass(frozen=True)
class SweepStatus(JsonView):
    """A sweep's progress and spend, with every trial's cost; ``to_dict()`` gives plain types
    for ``--json`` (the totals, not the trials).

    ``spent_usd`` is the ended trials' charges plus ``instance_overhead_usd``: the instance
    time the cloud billed beyond the trials of the sweep's ``worker_instances`` launched
    workers (boot, set-up, idle, shut-down; running instances until now). ``budget_usd`` is
    the planned budget (the sweep's ``max_usd`` unless a report overrides it).
    """

    study: str
    direction: str
    instance: str
    price_usd_per_hour: float
    trials: tuple[TrialCost, ...] = ()
    budget_usd: float | None = None
    saved_by_pruning_usd: float = 0.0
    bytes_cleaned: int = 0
    stop_reason: str = ""
    prices_captured_at: date | None = None
    instance_overhead_usd: float = 0.0
    worker_instances: int = 0

    @property
    def spent_usd(self) -> float:
        """Dollars of all trials that have ended (complete, pruned, failed), plus the
        instance overhead of launched workers."""
        return sum(t.cost_usd for t in self.trials if t.state.ended) + self.instance_overhead_usd

    @property
    def trials_by_state(self) -> dict[str, int]:
        """Trials per state, by state name (as ``--json`` and the status table list them)."""
        return {str(s): n for s, n in sorted(self.count_by_state().items())}

    @property
    def usd_by_state(self) -> dict[str, float]:
        """Dollars per state, by state name, to the micro-dollar (running: cost so far)."""
        return {str(s): round(v, 6) for s, v in sorted(self.spend_by_state().items())}

    def count_by_state(self) -> dict[TrialStatus, int]:
        """Trials per state, in :data:`STATES` order, states with trials only."""
        counts = Counter(t.state for t in self.trials)
        return {s: counts[s] for s in STATES if s in counts}

    def spend_by_state(self) -> dict[TrialStatus, float]:
        """Dollars per state, in :data:`STATES` order, states with trials only."""
        out = dict.fromkeys(self.count_by_state(), 0.0)
        for t in self.trials:
            out[t.state] += t.cost_usd
        return out

    @property
    def finished(self) -> int:
        """Trials that reached an end state."""
        return sum(1 for t in self.trials if t.state.ended)

    @property
    def all_failed(self) -> bool:
        """True when trials ended and every one of them failed (none completed or pruned)."""
        by = self.count_by_state()
        return by.get(TrialStatus.FAIL, 0) > 0 and \
            by.get(TrialStatus.COMPLETE, 0) + by.get(TrialStatus.PRUNED, 0) == 0

    @property
    def last_error(self) -> str:
        """The recorded error of the latest failed trial that has one ("" when none)."""
        errors = [t.error for t in self.trials if t.state is TrialStatus.FAIL]
        return next((e for e in reversed(errors) if e), "")

    def best_trial(self) -> TrialCost | None:
        """The completed trial with the best finite objective (ties: lower number)."""
        done = [t for t in self.trials if t.state is TrialStatus.COMPLETE
                and t.value is not None and math.isfinite(t.value)]
        if not done:
            return None
        sign = -1.0 if self.direction == "maximize" else 1.0
        return min(done, key=lambda t: (sign * float(t.value or 0.0), t.number))

    @property
    def best_value(self) -> float | None:
        """The best trial's objective (None before a trial completed)."""
        best = self.best_trial()
        return None if best is None else best.value

    @property
    def best_params(self) -> dict[str, Any]:
        """The best trial's hyper-parameters ({} before a trial completed)."""
        best = self.best_trial()
        return {} if best is None else dict(best.params)

    def to_dict(self) -> dict[str, Any]:
        """The totals as JSON-able plain types (dollars to the micro-dollar): the ``--json``
        of ``advisor sweep status``, without the trials."""
        best = self.best_trial()
        return {
            "study": self.study, "direction": self.direction, "instance": self.instance,
            "price_usd_per_hour": self.price_usd_per_hour,
            "trials_by_state": self.trials_by_state, "usd_by_state": self.usd_by_state,
            "spent_usd": round(self.spent_usd, 6),
            "saved_by_pruning_usd": self.saved_by_pruning_usd,
            "bytes_cleaned": self.bytes_cleaned, "best_value": self.best_value,
            "best_params": self.best_params, "best_trial": None if best is None else best.number,
            "stop_reason": self.stop_reason, "last_error": self.last_error,
            "instance_overhead_usd": self.instance_overhead_usd,
            "worker_instances": self.worker_instances,
        }


def _full_length(trials: Sequence[FrozenTrial]) -> int:
    lengths = [len(t.intermediate_values) for t in trials
               if TrialStatus.of(t.state) is TrialStatus.COMPLETE]
    return max(lengths, default=0)


def pruning_savings_usd(trials: Sequence[FrozenTrial], costs_usd: Sequence[float]) -> float:
    """Estimated dollars pruning saved: each pruned trial's full-length cost minus its cost
    (``costs_usd``: one per trial, in order, as ``cost_of`` gives them)."""
    full = _full_length(trials)
    saved = 0.0
    for t, cost in zip(trials, costs_usd, strict=True):
        if TrialStatus.of(t.state) is not TrialStatus.PRUNED or full == 0:
            continue
        done = max(len(t.intermediate_values), 1)
        if done >= full:
            continue
        saved += cost * full / done - cost
    return saved


def _trial_cost(trial: FrozenTrial, cost_usd: float) -> TrialCost:
    state = TrialStatus.of(trial.state)
    value: float | None = None
    intermediate = False
    if state is TrialStatus.COMPLETE and trial.values and len(trial.values) == 1:
        value = trial.values[0]
    elif state is TrialStatus.PRUNED and trial.intermediate_values:
        value = trial.intermediate_values[max(trial.intermediate_values)]
        intermediate = True
    record = trial_record(trial)

    def utc(moment: datetime | None) -> datetime | None:  # naive local time, as aware UTC
        return None if moment is None else frozen_moment(moment)

    return TrialCost(
        number=trial.number, state=state, value=value, cost_usd=cost_usd,
        started_at=utc(trial.datetime_start), finished_at=utc(trial.datetime_complete),
        wall_s=record.wall_s, price_usd_per_hour=record.price_usd_per_hour,
        steps_reported=len(trial.intermediate_values), value_is_intermediate=intermediate,
        params=dict(trial.params), error=record.error)


def sweep_status(study: optuna.Study, *, now_s: float | None = None,
                 trials: Sequence[FrozenTrial] | None = None,
                 budget_usd: float | None = None) -> SweepStatus:
    """Summarize a study run by ``advisor sweep`` (any Optuna study works, at price 0).

    ``spent_usd`` counts ended trials and the instance overhead of launched workers; running
    trials are costed at what they cost so far (at ``now_s``, default now). ``trials``
    replaces the study's own (a reader's view); ``budget_usd`` the budget the sweep recorded.
    """
    attrs = study.user_attrs
    settings = read_settings(attrs)
    price = settings.price_usd_per_hour or 0.0
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    now = time.time() if now_s is None else now_s
    costs = [cost_of(t, price_usd_per_hour=price, share=settings.share, now_s=now)
             for t in trials]  # each once, shared as the ledger shares them
    instances = instances_of(attrs)
    overhead = overhead_usd(instances, usd_by_worker(trials, costs), now_s=now)
    stop = read_stop(attrs)
    return SweepStatus(
        study=study.study_name, direction=study.direction.name.lower(),
        instance=settings.instance or "local", price_usd_per_hour=price,
        trials=tuple(_trial_cost(t, cost) for t, cost in zip(trials, costs, strict=True)),
        budget_usd=settings.max_usd if budget_usd is None else budget_usd,
        saved_by_pruning_usd=round(pruning_savings_usd(trials, costs), 6),
        bytes_cleaned=sum(cleaned_bytes(attrs).values()),
        stop_reason="" if stop is None else render_stop_reason(stop),
        prices_captured_at=settings.prices_captured_at,
        instance_overhead_usd=round(overhead, 6), worker_instances=len(instances))


@dataclass(frozen=True)
class StudyListing(Record):
    """One study of a storage as ``advisor sweep status`` with no name lists it: its trials
    (in all, and by state) and ``spent_usd`` as :class:`SweepStatus` counts it. Its
    ``--json`` is every field (a ``Record``)."""

    _error = AdvisorError

    study: str
    direction: str
    trials: int
    trials_by_state: dict[str, int]
    spent_usd: float
    instance: str
    stop_reason: str


def study_listing(study: optuna.Study) -> StudyListing:
    """The listing row of a study (one with several objectives: Optuna's own, at price 0)."""
    if len(study.directions) > 1:
        counts = Counter(str(TrialStatus.of(t.state)) for t in study.get_trials(deepcopy=False))
        return StudyListing(study.study_name, "/".join(d.name.lower() for d in study.directions),
                            sum(counts.values()), dict(sorted(counts.items())), 0.0, "local", "")
    status = sweep_status(study)
    return StudyListing(status.study, status.direction, len(status.trials),
                        status.trials_by_state, round(status.spent_usd, 6), status.instance,
                        status.stop_reason)
