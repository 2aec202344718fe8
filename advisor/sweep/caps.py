"""The budget's caps as arithmetic on totals: whether ``max_trials`` or ``max_usd`` stop a sweep.

Pure functions of numbers (no Optuna, no database), of the gate that runs before every trial
(``advisor.sweep.budget``); the same gate answers a rerun of a finished sweep from its stored
totals (``advisor.sweep.finished``), which is why none of this imports Optuna.
"""

from __future__ import annotations

from advisor.sweep.spec import BudgetSpec
from advisor.sweep.stops import StopKind, StopReason

__all__ = ["dollar_cap_reason", "grace_period_s", "stale_after_s", "trial_cap_reason"]


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
    more (``advisor.sweep.cost.worst_case_trial_usd``).
    """
    cap = budget.max_usd
    if cap is None:
        return None
    if spent_usd + running_usd + expected_usd > cap or spent_usd >= cap:
        return StopReason(StopKind.DOLLAR_CAP, spent_usd=spent_usd, running_usd=running_usd,
                          next_usd=expected_usd, max_usd=cap)
    return None
