"""What a trial costs: its wall time times the instance price, shared by concurrent trials.

A trial whose worker died (failed by heartbeat, ``advisor.sweep.heartbeat``) is charged from
its start to ``killed_trial_end_s``: the moment it was found dead, or its last heartbeat plus
the heartbeat interval, whichever is later, so its charge is never less than the time it ran.
The most a trial may be charged (``worst_case_trial_usd``) is what the budget gate
(``advisor.sweep.budget``) reserves for it. Optuna is not imported here at run time: the gate
also answers a rerun of a finished sweep (``advisor.sweep.finished``) without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor.sweep.state import trial_record
from advisor.sweep.timestamps import epoch_s, frozen_moment

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

__all__ = ["cost_of", "expected_trial_usd", "killed_trial_end_s", "trial_cost_usd",
           "worst_case_trial_usd"]


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


def expected_trial_usd(max_complete_usd: float | None, max_finished_usd: float | None) -> float:
    """What one more trial is expected to cost: the largest cost of a completed trial, else of
    any finished one (0 before any trial finished)."""
    return max_complete_usd if max_complete_usd is not None else max_finished_usd or 0.0


def worst_case_trial_usd(expected_usd: float, *, elapsed_s: float = 0.0, stale_after_s: float,
                         price_usd_per_hour: float, share: int = 1) -> float:
    """The most one trial may be charged: its expected cost or what it ran so far, whichever
    is more, plus ``stale_after_s`` of instance time (dying now, it is found dead that late)."""
    ran = trial_cost_usd(max(elapsed_s, 0.0), price_usd_per_hour, share)
    return max(expected_usd, ran) + trial_cost_usd(max(stale_after_s, 0.0), price_usd_per_hour,
                                                   share)


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
    started = record.started_at_s
    if started is None and trial.datetime_start is not None:
        started = epoch_s(frozen_moment(trial.datetime_start))
    if not trial.state.is_finished():  # running (a waiting trial has no start: 0)
        if now_s is None or started is None:
            return 0.0
        return trial_cost_usd(max(now_s - started, 0.0), price, share)
    if trial.datetime_start is not None and trial.datetime_complete is not None:
        wall = (frozen_moment(trial.datetime_complete)
                - frozen_moment(trial.datetime_start)).total_seconds()
        return trial_cost_usd(max(wall, 0.0), price, share)
    return 0.0
