"""Trials of dead workers: failed once their heartbeat is stale, charged until found dead.

A worker records a heartbeat for its running trial every ``heartbeat_s`` seconds (Optuna's
RDB storage). When the worker is killed, its trial stays RUNNING until some process fails
it: every worker does so before each budget check, and so do ``advisor sweep status`` and
``cleanup`` (they read ``advisor:heartbeat_s`` from the study). The trial is then charged
from its start (sub-second, Optuna's ``datetime_start``) to the moment it was found dead or
its last heartbeat plus the interval, whichever is later (``killed_trial_end_s``): never
less than it ran. Its cost is recorded once, so it stops growing, and the status totals
stay the sum of their rows; if the trial was alive after all (its heartbeat late under load),
its own process raises the charge to what it really ran when it ends (``record_charge``).
The last heartbeat only ever raises the charge: SQLite stores it to the whole second, by
the database's clock.
"""

from __future__ import annotations

import time
import warnings
from datetime import timedelta

import optuna
from optuna.trial import FrozenTrial

from advisor.sweep.budget import (
    COST_ATTR,
    ERROR_ATTR,
    PRICE_ATTR,
    SHARE_ATTR,
    STARTED_ATTR,
    WALL_ATTR,
    killed_trial_end_s,
    trial_cost_usd,
)
from advisor.sweep.caps import grace_period_s, stale_after_s
from advisor.sweep.ledger import rdb_of, record_charge

__all__ = ["FOUND_DEAD_ATTR", "HEARTBEAT_ATTR", "charge_stale_trial", "fail_stale_trials",
           "last_heartbeat_age_s", "stale_after_s"]

HEARTBEAT_ATTR = "advisor:heartbeat_s"
FOUND_DEAD_ATTR = "advisor:found_dead_at_s"  # when a process failed the trial by heartbeat


def last_heartbeat_age_s(study: optuna.Study, trial: FrozenTrial) -> float | None:
    """Seconds since the trial's last heartbeat, by the database clock (None: no heartbeat)."""
    rdb = rdb_of(study)
    if rdb is None:
        return None
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    table = models.TrialHeartbeatModel.__table__
    query = sa.select(sa.func.now(), table.c.heartbeat).where(
        table.c.trial_id == trial._trial_id)  # noqa: SLF001 - the storage's own key
    with rdb.engine.connect() as conn:
        row = conn.execute(query).first()
    if row is None or row[0] is None or row[1] is None:
        return None
    # PostgreSQL returns now() with its time zone and stores the heartbeat without it
    age: timedelta = row[0].replace(tzinfo=None) - row[1]
    return max(age.total_seconds(), 0.0)


def charge_stale_trial(study: optuna.Study, trial: FrozenTrial) -> None:
    """Record a trial failed for a stale heartbeat, charged from its start to now (found
    dead) or its last heartbeat plus the interval, whichever is later.

    Used as the storage's stale-trial callback, right after the trial was failed; the price
    and the number of trials sharing an instance are the study's (``open_study`` records
    them).
    """
    attrs = study.user_attrs
    price = attrs.get(PRICE_ATTR)
    price = float(price) if isinstance(price, int | float) else 0.0
    share = attrs.get(SHARE_ATTR)
    share = int(share) if isinstance(share, int) and share >= 1 else 1
    found_dead = time.time()
    started = trial.datetime_start.timestamp() if trial.datetime_start else found_dead
    age = last_heartbeat_age_s(study, trial)
    heartbeat = attrs.get(HEARTBEAT_ATTR)
    ended = killed_trial_end_s(
        found_dead_s=found_dead, last_heartbeat_s=None if age is None else found_dead - age,
        heartbeat_s=heartbeat if isinstance(heartbeat, int) else None)
    wall = max(ended - started, 0.0)
    silence = f"more than {grace_period_s(heartbeat)} s" if isinstance(heartbeat, int) else "long"
    record_charge(study, trial, {
        STARTED_ATTR: started, PRICE_ATTR: price, SHARE_ATTR: share, WALL_ATTR: wall,
        COST_ATTR: trial_cost_usd(wall, price, share), FOUND_DEAD_ATTR: found_dead,
        ERROR_ATTR: f"its worker stopped sending heartbeats ({silence} without one): "
                    "killed, crashed, cut off from the database or too loaded to send them"})


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail the study's trials whose heartbeat is stale (when its storage has heartbeats)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
