"""Dollar accounting of a sweep: what each trial cost, and whether another trial may start.

A trial costs its wall time times the price per hour of the instance it ran on, divided by the
number of trials sharing that instance at once. The cost is stored on the trial as user
attributes (``advisor:cost_usd`` ...), so every worker and ``advisor sweep status`` see it.

A trial whose worker died (failed by heartbeat, ``advisor.sweep.heartbeat``) is charged from
its start to ``killed_trial_end_s``: the moment it was found dead, or its last heartbeat plus
the heartbeat interval, whichever is later, in sub-second seconds, so its charge is never
less than the time it ran. A launched cloud worker is charged for the instance time its cloud
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
from typing import TYPE_CHECKING, Any

from optuna.trial import FrozenTrial, TrialState

from advisor.sweep.caps import dollar_cap_reason, trial_cap_reason
from advisor.sweep.spec import BudgetSpec

if TYPE_CHECKING:
    from advisor.sweep.ledger import Ledger

__all__ = [
    "COST_ATTR",
    "ERROR_ATTR",
    "PRICE_ATTR",
    "SHARE_ATTR",
    "STARTED_ATTR",
    "WALL_ATTR",
    "WORKER_ATTR",
    "BudgetGate",
    "cost_of",
    "killed_trial_end_s",
    "trial_cost_usd",
    "worst_case_trial_usd",
]

COST_ATTR = "advisor:cost_usd"
WALL_ATTR = "advisor:wall_s"
PRICE_ATTR = "advisor:price_usd_per_hour"
SHARE_ATTR = "advisor:share"
STARTED_ATTR = "advisor:started_at_s"
ERROR_ATTR = "advisor:error"  # why a failed trial failed, one line
WORKER_ATTR = "advisor:worker"  # the launched cloud worker that ran the trial

_COUNTED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)


def trial_cost_usd(wall_s: float, price_usd_per_hour: float, share: int = 1) -> float:
    """Dollars for ``wall_s`` seconds on an instance shared by ``share`` concurrent trials."""
    if wall_s < 0 or price_usd_per_hour < 0 or share < 1:
        raise ValueError(f"bad cost inputs: wall_s={wall_s}, price={price_usd_per_hour}, "
                         f"share={share}")
    return wall_s / 3600.0 * price_usd_per_hour / share


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


def worst_case_trial_usd(expected_usd: float, *, elapsed_s: float = 0.0, stale_after_s: float,
                         price_usd_per_hour: float, share: int = 1) -> float:
    """The most one trial may be charged: its expected cost or what it ran so far, whichever
    is more, plus ``stale_after_s`` of instance time (dying now, it is found dead that late)."""
    ran = trial_cost_usd(max(elapsed_s, 0.0), price_usd_per_hour, share)
    return max(expected_usd, ran) + trial_cost_usd(max(stale_after_s, 0.0), price_usd_per_hour,
                                                   share)


def _attr_float(trial: FrozenTrial, key: str) -> float | None:
    value: Any = trial.user_attrs.get(key)
    return float(value) if isinstance(value, int | float) else None


def cost_of(trial: FrozenTrial, *, price_usd_per_hour: float, share: int = 1,
            now_s: float | None = None) -> float:
    """The trial's cost: its recorded attribute, else estimated from its timestamps.

    A running trial (no recorded cost) costs its elapsed time so far when ``now_s`` is given
    and it recorded its start; a trial failed by heartbeat costs start-to-end time.
    """
    recorded = _attr_float(trial, COST_ATTR)
    if recorded is not None:
        return recorded
    price = _attr_float(trial, PRICE_ATTR)
    price = price_usd_per_hour if price is None else price
    started = _attr_float(trial, STARTED_ATTR)
    if started is None and trial.datetime_start is not None:
        started = trial.datetime_start.timestamp()
    if trial.state is TrialState.RUNNING:
        if now_s is None or started is None:
            return 0.0
        return trial_cost_usd(max(now_s - started, 0.0), price, share)
    if trial.datetime_start is not None and trial.datetime_complete is not None:
        wall = (trial.datetime_complete - trial.datetime_start).total_seconds()
        return trial_cost_usd(max(wall, 0.0), price, share)
    return 0.0


@dataclass
class BudgetGate:
    """Decides, before each trial, whether the sweep may start another one.

    ``clock`` returns seconds (``time.time`` by default; tests inject a fake). ``max_hours``
    counts from this gate's first check. ``stale_after_s`` is how long after it dies a trial
    may still be charged (the heartbeat grace period plus one interval; 0 without heartbeats).
    Not thread-safe; one gate per worker loop. The totals come from a ``Ledger``
    (``advisor.sweep.ledger.read_ledger``), not from a list of trials, so a check stays cheap
    however long the study is.
    """

    budget: BudgetSpec
    price_usd_per_hour: float
    share: int = 1
    clock: Callable[[], float] = time.time
    stale_after_s: float = 0.0
    _started_s: float | None = None

    def worst_case_usd(self, ledger: Ledger, *, elapsed_s: float = 0.0) -> float:
        """The most a trial that has run ``elapsed_s`` may be charged (0 s: one more trial)."""
        return worst_case_trial_usd(ledger.expected_trial_usd, elapsed_s=elapsed_s,
                                    stale_after_s=self.stale_after_s,
                                    price_usd_per_hour=self.price_usd_per_hour,
                                    share=self.share)

    def in_flight_usd(self, ledger: Ledger) -> float:
        """Worst-case charges of the running trials (each at least what it spent so far)."""
        return sum(self.worst_case_usd(ledger, elapsed_s=elapsed)
                   for elapsed in ledger.running_elapsed_s)

    def headroom_trials(self, ledger: Ledger) -> float:
        """How many more trials fit in ``max_trials`` and ``max_usd`` (inf when unbounded)."""
        room = float("inf")
        budget = self.budget
        if budget.max_trials is not None:
            room = min(room, budget.max_trials - ledger.count(*_COUNTED))
        worst = self.worst_case_usd(ledger)
        if budget.max_usd is not None and worst > 0:
            room = min(room, (budget.max_usd - ledger.spent_usd - self.in_flight_usd(ledger))
                       / worst)
        return room

    def stop_reason(self, ledger: Ledger) -> str | None:
        """Why no new trial may start (a sentence), or None when one may."""
        now = self.clock()
        if self._started_s is None:
            self._started_s = now
        budget = self.budget
        reason = trial_cap_reason(budget, trials_started=ledger.count(*_COUNTED))
        if reason is not None:
            return reason
        if budget.max_hours is not None and now - self._started_s >= budget.max_hours * 3600:
            return f"max_hours reached ({budget.max_hours:g} h)"
        if budget.max_usd is None:
            return None
        return dollar_cap_reason(budget, spent_usd=ledger.spent_usd,
                                 running_usd=self.in_flight_usd(ledger),
                                 expected_usd=self.worst_case_usd(ledger))
