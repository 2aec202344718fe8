"""Trials of dead workers: failed once their heartbeat is stale, charged up to that heartbeat.

A worker records a heartbeat for its running trial every ``heartbeat_s`` seconds (Optuna's
RDB storage). When the worker is killed, its trial stays RUNNING until some process fails
it: every worker does so before each trial, and so do ``advisor sweep status`` and
``cleanup`` (they read ``advisor:heartbeat_s`` from the study). The trial's cost is then
recorded as if it ended at its last heartbeat, so it stops growing at the moment the worker
was last seen alive, and the status totals stay the sum of their rows.
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
    trial_cost_usd,
)
from advisor.sweep.database import grace_period_s
from advisor.sweep.ledger import insert_trial_attrs, rdb_of

__all__ = ["HEARTBEAT_ATTR", "charge_stale_trial", "fail_stale_trials", "last_heartbeat_age_s"]

HEARTBEAT_ATTR = "advisor:heartbeat_s"


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
    """Record a trial failed for a stale heartbeat: its cost up to its last heartbeat.

    Used as the storage's stale-trial callback; the price and the number of trials sharing
    an instance are the study's (``open_study`` records them).
    """
    attrs = study.user_attrs
    price = attrs.get(PRICE_ATTR)
    price = float(price) if isinstance(price, int | float) else 0.0
    share = attrs.get(SHARE_ATTR)
    share = int(share) if isinstance(share, int) and share >= 1 else 1
    started = trial.datetime_start.timestamp() if trial.datetime_start else time.time()
    age = last_heartbeat_age_s(study, trial)
    ended = time.time() - age if age is not None else started
    wall = max(ended - started, 0.0)
    heartbeat = attrs.get(HEARTBEAT_ATTR)
    silence = f"more than {grace_period_s(heartbeat)} s" if isinstance(heartbeat, int) else "long"
    insert_trial_attrs(study, trial, {
        STARTED_ATTR: started, PRICE_ATTR: price, SHARE_ATTR: share, WALL_ATTR: wall,
        COST_ATTR: trial_cost_usd(wall, price, share),
        ERROR_ATTR: f"its worker stopped sending heartbeats ({silence} without one): "
                    "killed, crashed or cut off from the database"})


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail the study's trials whose heartbeat is stale (when its storage has heartbeats)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
