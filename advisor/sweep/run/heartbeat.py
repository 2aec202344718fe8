"""Trials of dead workers: failed once their heartbeat is stale, charged until found dead.

A worker records a heartbeat for its running trial every ``heartbeat_s`` seconds (Optuna's
RDB storage). When the worker is killed, its trial stays RUNNING until some process fails
it: every worker does so before each budget check, and so do ``advisor sweep status`` and
``cleanup`` (they read the heartbeat interval from the study's settings). A report fails
nothing: ``trials_seen_dead`` shows such trials failed and charged, in memory only. The trial is then charged
from its start (sub-second, Optuna's ``datetime_start``) to the moment it was found dead or
its last heartbeat plus the interval, whichever is later (``killed_trial_end_s``): never
less than it ran. Its cost is recorded once, so it stops growing, and the status totals
stay the sum of their rows; if the trial was alive after all (its heartbeat late under load),
its own process raises the charge to what it really ran when it ends (``record_charge``).
The last heartbeat only ever raises the charge: SQLite stores it to the whole second, by
the database's clock.
"""

from __future__ import annotations

import copy
import time
import warnings
from datetime import UTC, datetime

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.sweep.accounting.budget import grace_period_s, killed_trial_end_s, stale_after_s
from advisor.sweep.accounting.ledger import record_charge
from advisor.sweep.accounting.records import TrialCharge, rdb_of, read_settings
from advisor.sweep.accounting.timestamps import epoch_s, frozen_moment, frozen_value, heartbeat_moment
from advisor.sweep.run.outage import ride_out
from pricing.billing import usd

__all__ = ["charge_stale_trial", "fail_stale_trials", "last_heartbeat_age_s", "stale_after_s",
           "stale_charge", "trials_seen_dead"]


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
    # both by the database clock, in UTC (SQLite's CURRENT_TIMESTAMP; PostgreSQL's session
    # time zone, set to UTC by open_rdb_storage)
    age = heartbeat_moment(row[0]) - heartbeat_moment(row[1])
    return max(age.total_seconds(), 0.0)


def stale_charge(study: optuna.Study, trial: FrozenTrial, *, found_dead_s: float,
                 heartbeat_age_s: float | None) -> TrialCharge:
    """The charge of a trial found dead at ``found_dead_s``: from its start to then or its
    last heartbeat (``heartbeat_age_s`` before) plus the interval, whichever is later.

    The price and the number of trials sharing an instance are the study's (``open_study``
    records them).
    """
    settings = read_settings(study.user_attrs)
    price = settings.price_usd_per_hour or 0.0
    started = (epoch_s(frozen_moment(trial.datetime_start)) if trial.datetime_start
               else found_dead_s)
    heartbeat = settings.heartbeat_s
    ended = killed_trial_end_s(
        found_dead_s=found_dead_s,
        last_heartbeat_s=None if heartbeat_age_s is None else found_dead_s - heartbeat_age_s,
        heartbeat_s=heartbeat)
    wall = max(ended - started, 0.0)
    silence = "long" if heartbeat is None else f"more than {grace_period_s(heartbeat)} s"
    return TrialCharge(
        started_at_s=started, price_usd_per_hour=price, share=settings.share, wall_s=wall,
        cost_usd=usd(wall, price, settings.share), found_dead_at_s=found_dead_s,
        error=f"its worker stopped sending heartbeats ({silence} without one): killed, "
              "crashed, cut off from the database or too loaded to send them")


def charge_stale_trial(study: optuna.Study, trial: FrozenTrial) -> None:
    """Record a trial failed for a stale heartbeat, charged from its start to now (found
    dead) or its last heartbeat plus the interval, whichever is later.

    Used as the storage's stale-trial callback, right after the trial was failed.
    """
    charge = stale_charge(study, trial, found_dead_s=time.time(),
                          heartbeat_age_s=last_heartbeat_age_s(study, trial))
    ride_out("recording a trial's charge", lambda: record_charge(study, trial, charge))


def trials_seen_dead(study: optuna.Study, *, now_s: float) -> list[FrozenTrial]:
    """The study's trials, those whose heartbeat is stale shown failed and charged as
    ``fail_stale_trials`` would record them, in memory: nothing is written."""
    trials = study.get_trials(deepcopy=False)
    heartbeat = read_settings(study.user_attrs).heartbeat_s
    if heartbeat is None:
        return trials
    out = []
    for trial in trials:
        age = last_heartbeat_age_s(study, trial) if trial.state is TrialState.RUNNING else None
        if age is None or age <= grace_period_s(heartbeat):
            out.append(trial)
            continue
        charge = stale_charge(study, trial, found_dead_s=now_s, heartbeat_age_s=age)
        seen = copy.deepcopy(trial)
        seen.state = TrialState.FAIL
        seen.datetime_complete = frozen_value(datetime.fromtimestamp(now_s, UTC))
        seen.user_attrs = {**trial.user_attrs, **charge.attrs()}
        out.append(seen)
    return out


def fail_stale_trials(study: optuna.Study) -> None:
    """Fail the study's trials whose heartbeat is stale (when its storage has heartbeats)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
