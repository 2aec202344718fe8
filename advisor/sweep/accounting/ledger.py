"""The sweep's running dollar totals, read with two small queries instead of every trial.

Before each new trial a worker needs: how many trials exist per state, the dollars of the
finished ones, the largest finished cost (the expected cost of one more), and how long the
running ones have been running. Reading ``study.trials`` for that rebuilds every unfinished
trial with all its attributes (several queries per call); ``read_ledger`` instead asks the
database for a grouped sum over the trials' recorded costs (``advisor.sweep.accounting.records``) plus
the start times of the trials that have no cost yet (running ones and those a dead worker
left behind), so one check costs about a millisecond whatever the study's size, and every
worker sees the others' spend at once. A launched sweep's worker instances
(``advisor.sweep.accounting.records.record_instance``) add the instance time their cloud bills beyond the
trials each ran (``instance_overhead_usd``, ``advisor.sweep.accounting.instances``), read with two more
small queries.

``record_charge`` records a trial's ``TrialCharge`` in one transaction (Optuna's
``set_user_attr`` commits once per key, and refuses a finished trial), keeping the larger
of two charges written for the same trial. Both use Optuna's own table models, so table and
column names follow the installed Optuna; any other storage falls back to the public API.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

from advisor.sweep.accounting.budget import cost_of, expected_trial_usd, trial_wall_s
from advisor.sweep.accounting.instances import WorkerInstance, overhead_usd
from advisor.sweep.accounting.records import (
    COST_ATTR,
    INSTANCE_ATTR_PREFIX,
    WALL_ATTR,
    WORKER_ATTR,
    TrialCharge,
    instances_of,
    rdb_of,
    trial_record,
)
from advisor.sweep.accounting.timestamps import TrialClock, column_moment, epoch_s, installed_clock
from pricing.billing import usd

__all__ = ["Ledger", "ledger_from_trials", "rdb_of", "read_ledger", "record_charge",
           "usd_by_worker"]

_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
_STARTED = (*_FINISHED, TrialState.RUNNING)
_RAISED = frozenset({COST_ATTR, WALL_ATTR})  # charge attributes: a second write keeps the larger


@dataclass(frozen=True)
class Ledger:
    """Dollar and trial totals of a study at one moment.

    ``max_complete_usd`` / ``max_finished_usd`` are the largest cost of a completed trial and
    of any finished trial (None when there is none); ``running_elapsed_s`` has one entry per
    running trial. ``spent_usd`` is the finished trials' charges plus
    ``instance_overhead_usd``, the instance time billed beyond the trials of each launched
    worker (running instances accrue until terminated; 0 without launched workers).
    """

    counts: Mapping[TrialState, int] = field(default_factory=dict)
    spent_usd: float = 0.0
    max_complete_usd: float | None = None
    max_finished_usd: float | None = None
    running_elapsed_s: tuple[float, ...] = ()
    instance_overhead_usd: float = 0.0

    def count(self, *states: TrialState) -> int:
        """Trials in any of ``states``."""
        return sum(self.counts.get(s, 0) for s in states)

    @property
    def trials_started(self) -> int:
        """Complete, pruned, failed and running trials (what ``max_trials`` counts)."""
        return self.count(*_STARTED)

    @property
    def expected_trial_usd(self) -> float:
        """What one more trial is expected to cost: the largest completed (else finished) cost."""
        return expected_trial_usd(self.max_complete_usd, self.max_finished_usd)


def ledger_from_trials(trials: Sequence[FrozenTrial], *, price_usd_per_hour: float,
                       share: int = 1, now_s: float | None = None,
                       instances: Sequence[WorkerInstance] = ()) -> Ledger:
    """The ledger of a list of trials (any storage; also what the tests build by hand), with
    the overhead of the launched worker ``instances``."""
    now = time.time() if now_s is None else now_s
    costs = [cost_of(t, price_usd_per_hour=price_usd_per_hour, share=share, now_s=now)
             for t in trials]
    counts: dict[TrialState, int] = {}
    spent, max_complete, max_finished = 0.0, None, None
    running: list[float] = []
    for t, cost in zip(trials, costs, strict=True):
        counts[t.state] = counts.get(t.state, 0) + 1
        if t.state is TrialState.RUNNING:
            running.append(trial_wall_s(t, now_s=now))
            continue
        if not t.state.is_finished():
            continue
        spent += cost
        max_finished = cost if max_finished is None else max(max_finished, cost)
        if t.state is TrialState.COMPLETE:
            max_complete = cost if max_complete is None else max(max_complete, cost)
    overhead = overhead_usd(instances, usd_by_worker(trials, costs), now_s=now)
    return Ledger(counts, spent + overhead, max_complete, max_finished, tuple(running), overhead)


def usd_by_worker(trials: Sequence[FrozenTrial], costs_usd: Sequence[float]) -> dict[str, float]:
    """Charges of the trials each launched worker ran: ``costs_usd`` has one per trial, in
    order (``cost_of``; running ones at what they cost so far)."""
    out: dict[str, float] = {}
    for t, cost in zip(trials, costs_usd, strict=True):
        worker = trial_record(t).worker
        if worker is not None:
            out[worker] = out.get(worker, 0.0) + cost
    return out


def _column_s(value: datetime | None, clock: TrialClock) -> float | None:
    """A raw trial-time column as seconds since the epoch (its zone: ``clock``)."""
    return None if value is None else epoch_s(column_moment(value, clock))


def read_ledger(study: optuna.Study, *, price_usd_per_hour: float, share: int = 1,
                now_s: float | None = None) -> Ledger:
    """The study's ledger from two aggregate queries (RDB storages), else from its trials.

    Finished trials without a recorded cost (failed by heartbeat) are charged start to end at
    ``price_usd_per_hour / share``; running trials report their elapsed wall time. With
    launched worker instances on the study, their overhead is added (two more queries).
    """
    rdb = rdb_of(study)
    if rdb is None:
        return ledger_from_trials(study.get_trials(deepcopy=False),
                                  price_usd_per_hour=price_usd_per_hour, share=share,
                                  now_s=now_s, instances=instances_of(study.user_attrs))
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    trials = models.TrialModel.__table__
    attrs = models.TrialUserAttributeModel.__table__
    joined = trials.outerjoin(attrs, sa.and_(attrs.c.trial_id == trials.c.trial_id,
                                             attrs.c.key == COST_ATTR))
    cost = sa.cast(attrs.c.value_json, sa.Float)
    where = trials.c.study_id == study._study_id  # noqa: SLF001
    grouped = (sa.select(trials.c.state, sa.func.count(), sa.func.sum(cost), sa.func.max(cost))
               .select_from(joined).where(where).group_by(trials.c.state))
    uncosted = (sa.select(trials.c.state, trials.c.datetime_start, trials.c.datetime_complete)
                .select_from(joined).where(where, attrs.c.value_json.is_(None),
                                           trials.c.state != TrialState.WAITING))
    study_attrs = models.StudyUserAttributeModel.__table__
    recorded = sa.select(study_attrs.c.value_json).where(
        study_attrs.c.study_id == study._study_id,  # noqa: SLF001
        study_attrs.c.key.startswith(INSTANCE_ATTR_PREFIX, autoescape=True))
    now = time.time() if now_s is None else now_s
    with rdb.engine.connect() as conn:
        groups = conn.execute(grouped).all()
        loose = conn.execute(uncosted).all()
        instances = [WorkerInstance.from_json(v) for v in conn.execute(recorded)
                     .scalars()]
        by_worker = _rdb_usd_by_worker(conn, where, price_usd_per_hour, share,
                                       now) if instances else {}
    counts: dict[TrialState, int] = {}
    spent, max_complete, max_finished = 0.0, None, None
    for state_value, count, total, largest in groups:
        state = _state(state_value)
        counts[state] = int(count)
        if state in _FINISHED and largest is not None:
            spent += float(total)
            max_finished = max(float(largest), max_finished or 0.0)
            if state is TrialState.COMPLETE:
                max_complete = float(largest)
    running: list[float] = []
    for state_value, started, completed in loose:
        state = _state(state_value)
        if state is TrialState.RUNNING:
            running.append(_wall_s(state, started, completed, now))
        elif state in _FINISHED:
            estimated = usd(_wall_s(state, started, completed, now), price_usd_per_hour,
                            share)
            spent += estimated
            max_finished = max(estimated, max_finished or 0.0)
            if state is TrialState.COMPLETE:
                max_complete = max(estimated, max_complete or 0.0)
    overhead = overhead_usd(instances, by_worker, now_s=now)
    return Ledger(counts, spent + overhead, max_complete, max_finished, tuple(running), overhead)


def _state(value: Any) -> TrialState:
    return value if isinstance(value, TrialState) else TrialState[value]


def _wall_s(state: TrialState, started: datetime | None, completed: datetime | None,
            now_s: float) -> float:
    """Seconds a trial without a recorded cost ran: until now while running, else to its end
    (its raw columns, in the installed Optuna's zone: ``advisor.sweep.accounting.timestamps``)."""
    clock = installed_clock()
    start_s, end_s = _column_s(started, clock), _column_s(completed, clock)
    end_s = now_s if state is TrialState.RUNNING else end_s
    return max(end_s - start_s, 0.0) if start_s is not None and end_s is not None else 0.0


def _rdb_usd_by_worker(conn: Any, where: Any, price_usd_per_hour: float, share: int,
                       now_s: float) -> dict[str, float]:
    """``usd_by_worker`` with two queries: recorded costs summed per worker, and the trials
    without one (running, or failed by heartbeat) estimated from their times."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    trials = models.TrialModel.__table__
    worker = models.TrialUserAttributeModel.__table__.alias("worker")
    charge = models.TrialUserAttributeModel.__table__.alias("charge")
    on_workers = trials.join(worker, sa.and_(worker.c.trial_id == trials.c.trial_id,
                                             worker.c.key == WORKER_ATTR)).outerjoin(
        charge, sa.and_(charge.c.trial_id == trials.c.trial_id, charge.c.key == COST_ATTR))
    summed = (sa.select(worker.c.value_json, sa.func.sum(sa.cast(charge.c.value_json, sa.Float)))
              .select_from(on_workers).where(where, charge.c.value_json.is_not(None))
              .group_by(worker.c.value_json))
    loose = (sa.select(worker.c.value_json, trials.c.state, trials.c.datetime_start,
                       trials.c.datetime_complete)
             .select_from(on_workers).where(where, charge.c.value_json.is_(None)))
    out: dict[str, float] = {}
    for name, total in conn.execute(summed):
        out[json.loads(name)] = float(total)
    for name, state, started, completed in conn.execute(loose):
        worker = json.loads(name)
        out[worker] = out.get(worker, 0.0) + usd(
            _wall_s(_state(state), started, completed, now_s), price_usd_per_hour, share)
    return out


def record_charge(study: optuna.Study, trial: FrozenTrial | optuna.Trial,
                  charge: TrialCharge) -> TrialState:
    """Record a trial's charge whatever its state; returns the trial's state.

    Attributes the trial lacks are inserted; a cost or wall time already there is
    raised to the one in ``values`` when that is larger, never lowered; other keys already
    there are kept. So the two writers of a trial's charge, its own process when the trial
    ends and a process that failed it as stale while it still ran (a late heartbeat under
    load), leave the larger charge, counted once, in whichever order they write. Any storage
    other than an RDB one: Optuna's ``set_user_attr`` (a running trial only).
    """
    values = charge.attrs()
    rdb = rdb_of(study)
    if rdb is None:
        return _record_with_api(study, trial, values)
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    attrs = models.TrialUserAttributeModel.__table__
    trials = models.TrialModel.__table__
    trial_id = trial._trial_id  # noqa: SLF001 - the storage's own key
    mine = attrs.c.trial_id == trial_id

    def write() -> Any:
        with rdb.engine.begin() as conn:
            have = set(conn.execute(sa.select(attrs.c.key).where(
                mine, attrs.c.key.in_(list(values)))).scalars())
            rows = [{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)}
                    for k, v in values.items() if k not in have]
            if rows:
                conn.execute(sa.insert(attrs), rows)
            for key in sorted(have & _RAISED.intersection(values)):
                amount = float(values[key])
                conn.execute(sa.update(attrs).where(
                    mine, attrs.c.key == key, sa.cast(attrs.c.value_json, sa.Float) < amount
                ).values(value_json=json.dumps(amount)))
            return conn.execute(sa.select(trials.c.state).where(
                trials.c.trial_id == trial_id)).scalar_one()

    # another writer inserted a key first: the next try raises it instead (3 tries, no wait);
    # a lost connection is the caller's to ride out (advisor.sweep.run.outage.ride_out), as
    # the trial's other storage calls are
    state = Retrying(stop=stop_after_attempt(3), reraise=True,
                     retry=retry_if_exception_type(sa.exc.IntegrityError))(write)
    return _state(state)


def _record_with_api(study: optuna.Study, trial: FrozenTrial | optuna.Trial,
                     values: Mapping[str, Any]) -> TrialState:
    frozen = study._storage.get_trial(trial._trial_id)  # noqa: SLF001
    if frozen.state is TrialState.RUNNING:
        for key, value in values.items():
            old = frozen.user_attrs.get(key)
            if old is None or (key in _RAISED and float(value) > float(old)):
                study._storage.set_trial_user_attr(trial._trial_id, key, value)  # noqa: SLF001
    return frozen.state
