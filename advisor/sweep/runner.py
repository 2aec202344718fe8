"""Run a sweep's trials in this process: one worker loop against the shared Optuna study.

One ``study.optimize`` call per worker: before the first trial and after every trial a
callback asks the budget gate (two aggregate queries, ``advisor.sweep.ledger``) whether
another trial may start, under the admission lock (``advisor.sweep.admission``), and stops
the study when not. The wrapped objective pre-applies the YAML search space, calls the user's
entrypoint, and records wall time and dollars on the trial in one write
(``advisor.sweep.charged``); after every trial the cleanup policy runs. A dead worker's
trial is failed by heartbeat (a live one failed so keeps its own, larger charge); database
errors are retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.errors import AdvisorError
from advisor.sweep.admission import Admission
from advisor.sweep.artifacts import (
    ARTIFACTS_URL_ATTR,
    SweepArtifactStore,
    bind_store,
    open_artifact_store,
)
from advisor.sweep.budget import SHARE_ATTR, BudgetGate
from advisor.sweep.charged import charged_objective
from advisor.sweep.cleanup import cleanup_study
from advisor.sweep.database import (
    db_error_in,
    open_rdb_storage,
    storage_origin,
    storage_url_of,
    with_db_retry,
)
from advisor.sweep.heartbeat import (
    HEARTBEAT_ATTR,
    charge_stale_trial,
    fail_stale_trials,
    stale_after_s,
)
from advisor.sweep.instance import resolve_instance
from advisor.sweep.ledger import Ledger, read_ledger
from advisor.sweep.objective import (
    INTERRUPTED,
    SEARCH_SPACE_ATTR,
    Objective,
    load_entrypoint,
    param_dict,
)
from advisor.sweep.sampling import make_pruner, make_sampler
from advisor.sweep.service import CLEANUP_POLICY_ATTR
from advisor.sweep.spec import Direction, SamplerKind, SweepSpec

__all__ = [
    "CAPTURED_ATTR",
    "MAX_USD_ATTR",
    "STOP_REASON_ATTR",
    "WorkerResult",
    "failure_stop_reason",
    "is_failure_stop",
    "open_study",
    "run_worker",
]

log = logging.getLogger("advisor.sweep")

STOP_REASON_ATTR = "advisor:stop_reason"
PRICE_STUDY_ATTR = "advisor:price_usd_per_hour"
INSTANCE_ATTR = "advisor:instance"
MAX_USD_ATTR = "advisor:max_usd"
CAPTURED_ATTR = "advisor:prices_captured_at"

_MAX_CUT_IN_A_ROW = 20
_DIRECTIONS = {Direction.MINIMIZE: optuna.study.StudyDirection.MINIMIZE,
               Direction.MAXIMIZE: optuna.study.StudyDirection.MAXIMIZE}


@dataclass(frozen=True)
class WorkerResult:
    """What one worker loop did: trials it ran and why it stopped."""

    trials_run: int
    stop_reason: str


_FAILED_IN_A_ROW = "trials failed in a row"


def failure_stop_reason(count: int, last_error: str) -> str:
    """The stop reason of a worker whose last ``count`` trials all failed."""
    return (f"{count} {_FAILED_IN_A_ROW}; last error: {last_error}; fix the objective, then "
            "run the sweep again to resume it")


def is_failure_stop(reason: str) -> bool:
    """True when ``reason`` says the sweep stopped because its trials kept failing."""
    return _FAILED_IN_A_ROW in reason


def open_study(spec: SweepSpec, *, storage_url: str | None = None,
               price_usd_per_hour: float | None = None, instance: str | None = None,
               artifacts_url: str | None = None,
               prices_captured_at: str | None = None) -> optuna.Study:
    """Create the study, or load it when it exists (re-running resumes).

    Records on the study what reports need: search space, cleanup policy, price, instance,
    artifact location, ``advisor:max_usd`` (when the budget has one) and
    ``advisor:prices_captured_at`` (ISO date of the catalog price trials are charged at); and
    the heartbeat interval and instance share, so any process can fail and charge the trials
    of a dead worker (``advisor.sweep.heartbeat``).
    """
    storage = open_rdb_storage(storage_url_of(spec, storage_url),
                               origin=storage_origin(spec, storage_url),
                               heartbeat_s=spec.heartbeat_s, on_stale=charge_stale_trial)
    study = optuna.create_study(
        study_name=spec.study, storage=storage, sampler=make_sampler(spec),
        pruner=make_pruner(spec), direction=_DIRECTIONS[spec.direction], load_if_exists=True)
    if study.direction.name.lower() != str(spec.direction):
        raise AdvisorError(f"direction: study {spec.study!r} already exists with direction "
                           f"{study.direction.name.lower()}; use a new study name")
    attrs = study.user_attrs
    wanted: dict[str, Any] = {
        SEARCH_SPACE_ATTR: [param_dict(p) for p in spec.search_space],
        CLEANUP_POLICY_ATTR: {"keep_best": spec.cleanup.keep_best,
                              "states": [str(s) for s in spec.cleanup.states]},
        HEARTBEAT_ATTR: spec.heartbeat_s,
        SHARE_ATTR: spec.trials_per_instance,
    }
    if price_usd_per_hour is not None:
        wanted[PRICE_STUDY_ATTR] = price_usd_per_hour
    if instance is not None:
        wanted[INSTANCE_ATTR] = instance
    if artifacts_url is not None:
        wanted[ARTIFACTS_URL_ATTR] = artifacts_url
    if spec.budget.max_usd is not None:
        wanted[MAX_USD_ATTR] = spec.budget.max_usd
    if prices_captured_at is not None:
        wanted[CAPTURED_ATTR] = prices_captured_at
    for key, value in wanted.items():
        if attrs.get(key) != value:
            study.set_user_attr(key, value)
    return study


class _FailureStreak:
    """A worker's trials that failed one after another, and the error of the last one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def record(self, trial: FrozenTrial, error: str | None) -> str:
        """Count the finished trial; the stop reason once ``limit`` failed in a row, else ""."""
        if trial.state is not TrialState.FAIL:
            self.count = 0
            return ""
        self.count += 1
        if self.count < self.limit:
            return ""
        return failure_stop_reason(self.count, error or "none recorded")


class _Slot:
    """A lock that any thread may release, and releasing it when free does nothing."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._guard = threading.Lock()
        self._held = False

    def acquire(self) -> None:
        self._lock.acquire()
        with self._guard:
            self._held = True

    def release(self) -> None:
        with self._guard:
            if self._held:
                self._held = False
                self._lock.release()


def _grid_done(spec: SweepSpec, ledger: Ledger) -> str | None:
    if spec.sampler.kind is not SamplerKind.GRID:
        return None
    size = 1
    for p in spec.search_space:
        size *= len(p.grid_values())
    used = sum(ledger.counts.values()) - ledger.count(TrialState.WAITING)
    return f"grid exhausted ({size} points)" if used >= size else None


def run_worker(
    spec: SweepSpec, *, storage_url: str | None = None, clock: Callable[[], float] = time.time,
    artifact_store: SweepArtifactStore | None = None,
    on_trial_end: Callable[[optuna.Study, FrozenTrial], None] | None = None,
    stop: threading.Event | None = None, objective: Objective | None = None,
    worker_id: str | None = None,
) -> WorkerResult:
    """Run trials until the budget, the trial count, the grid, ``stop`` or Ctrl-C ends the sweep.

    Entrypoint exceptions, ``sys.exit()`` and a return value that is not a number fail that
    trial only (its one-line error is recorded as ``advisor:error`` and logged), but
    ``budget.max_consecutive_failures`` failures in a row stop the worker. Ctrl-C fails the
    running trial with "interrupted (Ctrl-C)", charged for its time, and stops the worker
    with that reason.
    ``objective`` overrides the entrypoint (tests, benchmarks); ``clock`` (seconds) drives
    cost accounting and ``max_hours``; ``worker_id`` names the launched cloud worker this
    loop runs on (recorded on its trials, ``advisor.sweep.charged``).
    """
    choice = resolve_instance(spec)
    user_fn = objective or load_entrypoint(spec)
    store = artifact_store
    if store is None and spec.artifacts:
        store = open_artifact_store(spec.artifacts, base_dir=spec.source_dir)
    study = with_db_retry("opening the study", lambda: open_study(
        spec, storage_url=storage_url, price_usd_per_hour=choice.price_usd_per_hour,
        instance=choice.label, artifacts_url=store.url if store else None,
        prices_captured_at=choice.prices_captured_at))
    # a dead worker's trial must not count as running (and growing) in the first gate check
    with_db_retry("failing trials of dead workers", lambda: fail_stale_trials(study))
    gate = BudgetGate(spec.budget, choice.price_usd_per_hour, spec.trials_per_instance, clock,
                      stale_after_s=stale_after_s(spec.heartbeat_s))
    admission = Admission(study)
    if spec.trials_per_instance > 1:  # several threads per worker: gate without the lock
        admission.active = False
    # With several trials per instance, Optuna runs them in threads of this worker: a thread
    # that passed the gate holds ``slot`` until its new trial exists, so a sibling thread's
    # gate counts it (the database admission lock does the same across workers).
    slot = _Slot()

    def on_start() -> None:
        admission.leave()
        slot.release()

    errors: dict[int, str] = {}
    interrupted = threading.Event()
    ended_elsewhere: set[int] = set()
    wrapped = charged_objective(user_fn, spec, choice.price_usd_per_hour, clock=clock,
                                on_start=on_start, errors=errors, interrupted=interrupted,
                                ended_elsewhere=ended_elsewhere, worker_id=worker_id)
    bind_store(spec.study, store)

    lock = threading.Lock()
    box: dict[str, Any] = {"ran": 0, "reason": ""}
    streak = _FailureStreak(spec.budget.max_consecutive_failures)

    def reason_now() -> tuple[str, Ledger]:
        fail_stale_trials(study)  # a dead worker's trial is charged before the check counts it
        ledger = read_ledger(study, price_usd_per_hour=choice.price_usd_per_hour,
                             share=spec.trials_per_instance)
        return gate.stop_reason(ledger) or _grid_done(spec, ledger) or "", ledger

    def check() -> str:
        """The stop reason, or "" with the admission lock held until the next trial starts."""
        if stop is not None and stop.is_set():
            return "interrupted"
        if spec.trials_per_instance > 1:
            slot.acquire()
        try:
            admission.enter(exclusive=False)
            reason, ledger = reason_now()
            if (not reason and admission.active
                    and gate.headroom_trials(ledger) <= admission.workers()):
                admission.enter(exclusive=True)  # near the cap: count every admitted trial
                reason, _ = reason_now()
        except BaseException:
            admission.leave()
            slot.release()
            raise
        if reason:
            admission.leave()
            slot.release()
        return reason

    def after_trial(st: optuna.Study, trial: FrozenTrial) -> None:
        with lock:  # trials_per_instance > 1 runs callbacks in several threads
            box["ran"] += 1
            if store is not None:
                cleanup_study(st, store, spec.cleanup)
            if on_trial_end is not None:
                on_trial_end(st, trial)
            error = errors.pop(trial.number, None)
            if trial.state is TrialState.FAIL:
                log.warning("trial %d failed: %s", trial.number, error or "none recorded")
            failed = streak.record(trial, error)
            if interrupted.is_set():
                box["reason"] = box["reason"] or INTERRUPTED
            if not box["reason"]:
                box["reason"] = failed or with_db_retry("reading the dollar totals", check)
            if box["reason"]:
                st.stop()

    cut = 0
    try:
        while not box["reason"]:
            box["reason"] = with_db_retry("reading the dollar totals", check)
            if box["reason"]:
                break
            ran_before = box["ran"]
            try:
                # one optimize call for the whole worker: the gate runs in the callback after
                # every trial and stops the study; no per-trial optimize set-up
                study.optimize(wrapped, n_jobs=spec.trials_per_instance, catch=(Exception,),
                               callbacks=[after_trial], gc_after_trial=False)
            except Exception as exc:  # noqa: BLE001 - re-raised unless the database went away
                admission.leave()
                slot.release()
                if isinstance(exc, ValueError) and ended_elsewhere:
                    # Optuna cannot tell a trial another process failed as stale: it is
                    # recorded and charged already, so the worker goes on
                    log.warning("trials %s were failed by another process (late heartbeats) "
                                "while they ran; charged for the time they ran",
                                sorted(ended_elsewhere))
                    box["ran"] += len(ended_elsewhere)
                    ended_elsewhere.clear()
                    continue
                if db_error_in(exc) is None:
                    raise
                cut = 0 if box["ran"] > ran_before else cut + 1
                if cut >= _MAX_CUT_IN_A_ROW:
                    raise AdvisorError(f"storage: {_MAX_CUT_IN_A_ROW} trials in a row were cut "
                                       f"by database errors; last: {exc}") from exc
                log.warning("storage: a trial was cut by a database error (%s); going on",
                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                time.sleep(0.5)
    except KeyboardInterrupt:  # between trials (in a trial, the objective's wrapper has it)
        box["reason"] = INTERRUPTED
    finally:
        slot.release()  # a thread may have passed the gate just as a sibling stopped the study
        admission.close()
        bind_store(spec.study, None)
    reason, ran = str(box["reason"]), int(box["ran"])
    with_db_retry("recording the stop reason",
                   lambda: study.set_user_attr(STOP_REASON_ATTR, reason))
    log.info("worker stopped after %d trials: %s", ran, reason)
    return WorkerResult(ran, reason)
