"""The sweep's money: what a trial costs, the caps, and the gate that admits a new trial.

A trial costs its wall time times the price per hour of the instance it ran on, divided by the
number of trials sharing that instance at once (``pricing.billing.usd``, the project's one
seconds-times-price formula). The cost is stored on
the trial as user attributes (``advisor.sweep.accounting.records``), so every worker and
``advisor sweep status`` see it. A trial whose worker died (failed by heartbeat,
``advisor.sweep.run.heartbeat``) is charged from its start to ``killed_trial_end_s``: the
moment it was found dead, or its last heartbeat plus the heartbeat interval, whichever is
later, so its charge is never less than the time it ran. A launched cloud worker is charged
for the instance time its cloud bills as well: the instance time beyond the trials it ran
(boot, set-up, idle time between trials, shut-down; ``advisor.sweep.accounting.instances``)
is part of ``spent`` in the ledger, and an instance still running accrues until it is
terminated.

The gate lets a new trial start only while the worst case still fits: ``spent + worst-case
charge of each running trial + worst-case charge of one more <= max_usd``, where a trial's
worst case is its expected cost (at least what it ran so far) plus ``stale_after_s`` of
instance time, the longest a trial that dies now may be charged before it is found dead
(``worst_case_trial_usd``). Spent is checked before every start, so the final overshoot is
at most what running trials cost beyond their worst case. With several workers
on PostgreSQL the check and the trial's creation are admitted under an advisory lock
(``advisor.sweep.accounting.admission``), so concurrent starts cannot slip past the cap or
``max_trials`` together; the totals come from ``advisor.sweep.accounting.ledger``.

The caps are pure functions of numbers (no Optuna, no database): the same gate answers a rerun
of a finished sweep from its stored totals (``advisor.sweep.accounting.finished``), which is
why nothing here imports Optuna at run time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from advisor.sweep.accounting.records import trial_record
from advisor.sweep.accounting.timestamps import epoch_s, frozen_moment
from advisor.sweep.spec.outcomes import StopKind, StopReason
from advisor.sweep.spec.sweep_spec import BudgetSpec, SweepSpec
from pricing.billing import usd

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

__all__ = ["BudgetGate", "Totals", "cost_of", "dollar_cap_reason", "expected_trial_usd",
           "grace_period_s", "killed_trial_end_s", "stale_after_s", "trial_cap_reason",
           "trial_wall_s", "worst_case_trial_usd"]


def killed_trial_end_s(*, found_dead_s: float, last_heartbeat_s: float | None,
                       heartbeat_s: float | None) -> float:
    """When a trial of a dead worker stops being charged (seconds since the epoch).

    The later of the moment it was found dead and its last heartbeat plus the heartbeat
    interval (a trial whose heartbeat is missing or whose interval is unknown: found dead).
    The worker was alive at its last heartbeat and dead when found, so the charge never
    under-counts the time it ran.
    """
    if last_heartbeat_s is None or heartbeat_s is None:
        return found_dead_s
    return max(found_dead_s, last_heartbeat_s + heartbeat_s)


def expected_trial_usd(max_complete_usd: float | None, max_finished_usd: float | None) -> float:
    """What one more trial is expected to cost: the largest cost of a completed trial, else of
    any finished one (0 before any trial finished)."""
    return max_complete_usd if max_complete_usd is not None else max_finished_usd or 0.0


def worst_case_trial_usd(expected_usd: float, *, elapsed_s: float = 0.0, stale_after_s: float,
                         price_usd_per_hour: float, share: int = 1) -> float:
    """The most one trial may be charged: its expected cost or what it ran so far, whichever
    is more, plus ``stale_after_s`` of instance time (dying now, it is found dead that late)."""
    ran = usd(max(elapsed_s, 0.0), price_usd_per_hour, share)
    return max(expected_usd, ran) + usd(max(stale_after_s, 0.0), price_usd_per_hour,
                                                   share)


def trial_wall_s(trial: FrozenTrial, *, now_s: float | None = None) -> float:
    """Seconds a trial ran by its timestamps: until ``now_s`` while it runs (0 without
    ``now_s`` or a recorded start), else start to end (0 when either is missing)."""
    started = trial_record(trial).started_at_s
    if started is None and trial.datetime_start is not None:
        started = epoch_s(frozen_moment(trial.datetime_start))
    if not trial.state.is_finished():  # running (a waiting trial has no start: 0)
        if now_s is None or started is None:
            return 0.0
        return max(now_s - started, 0.0)
    if trial.datetime_start is not None and trial.datetime_complete is not None:
        wall = (frozen_moment(trial.datetime_complete)
                - frozen_moment(trial.datetime_start)).total_seconds()
        return max(wall, 0.0)
    return 0.0


def cost_of(trial: FrozenTrial, *, price_usd_per_hour: float, share: int = 1,
            now_s: float | None = None) -> float:
    """The trial's cost: its recorded charge, else estimated from its timestamps.

    A running trial (no recorded cost) costs its elapsed time so far when ``now_s`` is given
    and it recorded its start; a trial failed by heartbeat costs start-to-end time.
    """
    record = trial_record(trial)
    if record.cost_usd is not None:
        return record.cost_usd
    price = price_usd_per_hour if record.price_usd_per_hour is None else record.price_usd_per_hour
    return usd(trial_wall_s(trial, now_s=now_s), price, share)


def grace_period_s(heartbeat_s: int) -> int:
    """Seconds without a heartbeat after which a running trial is failed."""
    return max(2 * heartbeat_s, 2)


def stale_after_s(heartbeat_s: int | None) -> float:
    """The longest a trial that dies now may be charged before it is found dead: the grace
    period plus one heartbeat interval (0 without heartbeats)."""
    if heartbeat_s is None:
        return 0.0
    return float(grace_period_s(heartbeat_s) + heartbeat_s)


def trial_cap_reason(budget: BudgetSpec, *, trials_started: int) -> StopReason | None:
    """Why ``max_trials`` stops the sweep, or None when another trial fits.

    ``trials_started`` counts complete, pruned, failed and running trials.
    """
    if budget.max_trials is not None and trials_started >= budget.max_trials:
        return StopReason(StopKind.MAX_TRIALS, trials=trials_started,
                          max_trials=budget.max_trials)
    return None


def dollar_cap_reason(budget: BudgetSpec, *, spent_usd: float, running_usd: float,
                      expected_usd: float) -> StopReason | None:
    """Why ``max_usd`` stops the sweep, or None when one more trial fits.

    One more trial fits while ``spent + running + expected <= max_usd``: ``running_usd`` is
    the sum of the running trials' worst-case charges, ``expected_usd`` the worst case of one
    more (``worst_case_trial_usd``).
    """
    cap = budget.max_usd
    if cap is None:
        return None
    if spent_usd + running_usd + expected_usd > cap or spent_usd >= cap:
        return StopReason(StopKind.DOLLAR_CAP, spent_usd=spent_usd, running_usd=running_usd,
                          next_usd=expected_usd, max_usd=cap)
    return None


class Totals(Protocol):
    """What the gate reads of a study's totals: a ``Ledger``
    (``advisor.sweep.accounting.ledger``), or
    the stored totals a rerun of a finished sweep reads with plain SQL
    (``advisor.sweep.accounting.finished``). Dollars in USD, times in seconds."""

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
    (``advisor.sweep.accounting.ledger.read_ledger``), not from a list of trials, so a check
    stays cheap however long the study is. ``for_sweep`` builds the gate of a sweep.yaml: every check of a
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
