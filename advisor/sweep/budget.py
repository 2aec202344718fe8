"""Dollar accounting of a sweep: what each trial cost, and whether another trial may start.

A trial costs its wall time times the price per hour of the instance it ran on, divided by the
number of trials sharing that instance at once. The cost is stored on the trial as user
attributes (``advisor.sweep.state``), so every worker and ``advisor sweep status`` see it;
``advisor.sweep.cost`` has the arithmetic, and charges a trial whose worker died until it was
found dead. A launched cloud worker is charged for the instance time its cloud
bills as well: the instance time beyond the trials it ran (boot, set-up, idle time between
trials, shut-down; ``advisor.sweep.instances``) is part of ``spent`` in the ledger, and an
instance still running accrues until it is terminated.

The gate lets a new trial start only while the worst case still fits: ``spent + worst-case
charge of each running trial + worst-case charge of one more <= max_usd``, where a trial's
worst case is its expected cost (at least what it ran so far) plus ``stale_after_s`` of
instance time, the longest a trial that dies now may be charged before it is found dead
(``worst_case_trial_usd``). Spent is checked before every start, so the final overshoot is
at most what running trials cost beyond their worst case. With several workers
on PostgreSQL the check and the trial's creation are admitted under an advisory lock
(``advisor.sweep.admission``), so concurrent starts cannot slip past the cap or
``max_trials`` together; the totals come from ``advisor.sweep.ledger``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from advisor.sweep.caps import dollar_cap_reason, stale_after_s, trial_cap_reason
from advisor.sweep.cost import worst_case_trial_usd
from advisor.sweep.spec import BudgetSpec, SweepSpec
from advisor.sweep.stops import StopKind, StopReason

__all__ = ["BudgetGate", "Totals"]


class Totals(Protocol):
    """What the gate reads of a study's totals: a ``Ledger`` (``advisor.sweep.ledger``), or
    the stored totals a rerun of a finished sweep reads with plain SQL (``advisor.sweep
    .finished``). Dollars in USD, times in seconds."""

    @property
    def trials_started(self) -> int:
        """Complete, pruned, failed and running trials."""

    @property
    def spent_usd(self) -> float:
        """The finished trials' charges plus the instance overhead of launched workers."""

    @property
    def expected_trial_usd(self) -> float:
        """What one more trial is expected to cost."""

    @property
    def running_elapsed_s(self) -> tuple[float, ...]:
        """How long each running trial has run."""


@dataclass
class BudgetGate:
    """Decides, before each trial, whether the sweep may start another one.

    ``clock`` returns seconds (``time.time`` by default; tests inject a fake). ``max_hours``
    counts from this gate's first check. ``stale_after_s`` is how long after it dies a trial
    may still be charged (the heartbeat grace period plus one interval; 0 without heartbeats).
    Not thread-safe; one gate per worker loop. The totals come from a ``Ledger``
    (``advisor.sweep.ledger.read_ledger``), not from a list of trials, so a check stays cheap
    however long the study is. ``for_sweep`` builds the gate of a sweep.yaml: every check of a
    sweep's caps (its workers, the launcher, a rerun of a finished sweep) asks one.
    """

    budget: BudgetSpec
    price_usd_per_hour: float
    share: int = 1
    clock: Callable[[], float] = time.time
    stale_after_s: float = 0.0
    _started_s: float | None = None

    @classmethod
    def for_sweep(cls, spec: SweepSpec, price_usd_per_hour: float, *,
                  clock: Callable[[], float] = time.time) -> BudgetGate:
        """The gate of ``spec``'s budget at ``price_usd_per_hour``, its instance share and the
        time a trial of a dead worker may still be charged (from its heartbeat interval)."""
        return cls(spec.budget, price_usd_per_hour, spec.trials_per_instance, clock,
                   stale_after_s=stale_after_s(spec.heartbeat_s))

    def worst_case_usd(self, ledger: Totals, *, elapsed_s: float = 0.0) -> float:
        """The most a trial that has run ``elapsed_s`` may be charged (0 s: one more trial)."""
        return worst_case_trial_usd(ledger.expected_trial_usd, elapsed_s=elapsed_s,
                                    stale_after_s=self.stale_after_s,
                                    price_usd_per_hour=self.price_usd_per_hour,
                                    share=self.share)

    def in_flight_usd(self, ledger: Totals) -> float:
        """Worst-case charges of the running trials (each at least what it spent so far)."""
        return sum(self.worst_case_usd(ledger, elapsed_s=elapsed)
                   for elapsed in ledger.running_elapsed_s)

    def headroom_trials(self, ledger: Totals) -> float:
        """How many more trials fit in ``max_trials`` and ``max_usd`` (inf when unbounded)."""
        room = float("inf")
        budget = self.budget
        if budget.max_trials is not None:
            room = min(room, budget.max_trials - ledger.trials_started)
        worst = self.worst_case_usd(ledger)
        if budget.max_usd is not None and worst > 0:
            room = min(room, (budget.max_usd - ledger.spent_usd - self.in_flight_usd(ledger))
                       / worst)
        return room

    def stop_reason(self, ledger: Totals) -> StopReason | None:
        """Why no new trial may start, or None when one may."""
        now = self.clock()
        if self._started_s is None:
            self._started_s = now
        budget = self.budget
        reason = trial_cap_reason(budget, trials_started=ledger.trials_started)
        if reason is not None:
            return reason
        if budget.max_hours is not None and now - self._started_s >= budget.max_hours * 3600:
            return StopReason(StopKind.MAX_HOURS, max_hours=budget.max_hours)
        if budget.max_usd is None:
            return None
        return dollar_cap_reason(budget, spent_usd=ledger.spent_usd,
                                 running_usd=self.in_flight_usd(ledger),
                                 expected_usd=self.worst_case_usd(ledger))
