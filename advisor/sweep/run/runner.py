"""Run a sweep's trials in this process: one worker loop against the shared Optuna study.

One ``study.optimize`` call per worker: before the first trial and after every trial a
callback asks the budget gate (two aggregate queries, ``advisor.sweep.accounting.ledger``) whether
another trial may start, under the admission lock (``advisor.sweep.accounting.admission``), and stops
the study when not. The wrapped objective pre-applies the YAML search space, calls the user's
entrypoint, and records wall time and dollars on the trial in one write
(``advisor.sweep.run.objective``); after every trial the cleanup policy runs. A dead worker's
trial is failed by heartbeat (a live one failed so keeps its own, larger charge); database
errors are retried.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.errors import AdvisorError
from advisor.storage import db_error_line
from advisor.sweep.accounting.admission import Admission
from advisor.sweep.accounting.budget import BudgetGate
from advisor.sweep.accounting.instances import resolve_instance
from advisor.sweep.accounting.ledger import Ledger, read_ledger
from advisor.sweep.accounting.records import StudySettings, write_settings, write_stop
from advisor.sweep.accounting.timestamps import check_study_clock
from advisor.sweep.errors import StoreUnavailable
from advisor.sweep.run.artifacts import SweepArtifactStore, bind_store, open_artifact_store
from advisor.sweep.run.cleanup import cleanup_study
from advisor.sweep.run.database import (
    OPEN_RETRY_S,
    db_error_in,
    open_rdb_storage,
    storage_origin,
    storage_url_of,
    with_db_retry,
)
from advisor.sweep.run.heartbeat import charge_stale_trial, fail_stale_trials
from advisor.sweep.run.objective import (
    Objective,
    charged_objective,
    check_search_space,
    load_entrypoint,
)
from advisor.sweep.spec.outcomes import StopKind, StopReason, render_stop_reason
from advisor.sweep.spec.sampling import make_pruner, make_sampler
from advisor.sweep.spec.sweep_spec import Direction, SamplerKind, SweepSpec

__all__ = ["WorkerResult", "open_study", "run_worker"]

log = logging.getLogger("advisor.sweep")

_MAX_CUT_IN_A_ROW = 20
_DIRECTIONS = {Direction.MINIMIZE: optuna.study.StudyDirection.MINIMIZE,
               Direction.MAXIMIZE: optuna.study.StudyDirection.MAXIMIZE}


@dataclass(frozen=True)
class WorkerResult:
    """What one worker loop did: trials it ran and why it stopped."""

    trials_run: int
    stop: StopReason

    @property
    def stop_reason(self) -> str:
        """Why it stopped, as a sentence."""
        return render_stop_reason(self.stop)


def open_study(spec: SweepSpec, *, storage_url: str | None = None,
               price_usd_per_hour: float | None = None, instance: str | None = None,
               artifacts_url: str | None = None,
               prices_captured_at: str | None = None) -> optuna.Study:
    """Create the study, or load it when it exists (re-running resumes).

    Records on the study what reports need (``advisor.sweep.accounting.records.StudySettings``): search
    space, cleanup policy, price, instance, artifact location, dollar cap and the ISO date of
    the catalog price trials are charged at; and the heartbeat interval and instance share,
    so any process can fail and charge the trials of a dead worker (``advisor.sweep.run.heartbeat``).
    """
    storage = open_rdb_storage(storage_url_of(spec, storage_url),
                               origin=storage_origin(spec, storage_url),
                               heartbeat_s=spec.heartbeat_s, on_stale=charge_stale_trial)
    study = optuna.create_study(
        study_name=spec.study, storage=storage, sampler=make_sampler(spec),
        pruner=make_pruner(spec), direction=_DIRECTIONS[spec.direction], load_if_exists=True)
    check_study_clock(study, record=True)  # before this worker adds a trial
    if study.direction.name.lower() != str(spec.direction):
        raise AdvisorError(f"direction: study {spec.study!r} already exists with direction "
                           f"{study.direction.name.lower()}; use a new study name")
    check_search_space(study, spec.search_space)  # before the new space is recorded
    write_settings(study, StudySettings(
        search_space=spec.search_space, cleanup=spec.cleanup, heartbeat_s=spec.heartbeat_s,
        share=spec.trials_per_instance, price_usd_per_hour=price_usd_per_hour,
        instance=instance, artifacts_url=artifacts_url, max_usd=spec.budget.max_usd,
        prices_captured_at=None if prices_captured_at is None
        else date.fromisoformat(prices_captured_at)))
    return study


class _FailureStreak:
    """A worker's trials that failed one after another, and the error of the last one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0

    def record(self, trial: FrozenTrial, error: str | None) -> StopReason | None:
        """Count the finished trial; the stop reason once ``limit`` failed in a row."""
        if trial.state is not TrialState.FAIL:
            self.count = 0
            return None
        self.count += 1
        if self.count < self.limit:
            return None
        return StopReason(StopKind.FAILURES_IN_A_ROW, trials=self.count,
                          last_error=error or "none recorded")


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


def _grid_done(spec: SweepSpec, ledger: Ledger) -> StopReason | None:
    if spec.sampler.kind is not SamplerKind.GRID:
        return None
    size = 1
    for p in spec.search_space:
        size *= len(p.grid_values())
    used = sum(ledger.counts.values()) - ledger.count(TrialState.WAITING)
    return StopReason(StopKind.GRID_EXHAUSTED, trials=size) if used >= size else None


class _WorkerLoop:
    """One worker's loop: the gate before every trial, the trials it ran and why it stopped.

    Optuna calls ``after_trial`` from several threads when trials share an instance, so the
    count and the reason change under a lock. A thread that passed the gate holds the
    admission lock (across workers) and ``slot`` (across this worker's threads) until its
    new trial exists (``trial_started``), so the next check counts it.
    """

    def __init__(self, spec: SweepSpec, study: optuna.Study, *, price_usd_per_hour: float,
                 clock: Callable[[], float], store: SweepArtifactStore | None,
                 on_trial_end: Callable[[optuna.Study, FrozenTrial], None] | None,
                 stop: threading.Event | None) -> None:
        self.spec, self.study, self.store = spec, study, store
        self.price_usd_per_hour = price_usd_per_hour
        self.gate = BudgetGate.for_sweep(spec, price_usd_per_hour, clock=clock)
        self.admission = Admission(study)
        if spec.trials_per_instance > 1:  # several threads per worker: gate without the lock
            self.admission.active = False
        self.slot = _Slot()
        self.errors: dict[int, str] = {}  # the one-line error of each failed trial, by number
        self.interrupted = threading.Event()  # Ctrl-C in a trial
        self.ended_elsewhere: set[int] = set()  # trials failed as stale while they ran
        self.ran = 0
        self.reason: StopReason | None = None
        self._on_trial_end, self._stop = on_trial_end, stop
        self._lock = threading.Lock()
        self._streak = _FailureStreak(spec.budget.max_consecutive_failures)

    def trial_started(self) -> None:
        """The new trial exists: let the next check (in any worker or thread) count it."""
        self.admission.leave()
        self.slot.release()

    def _reason_now(self) -> tuple[StopReason | None, Ledger]:
        ledger = read_ledger(self.study, price_usd_per_hour=self.price_usd_per_hour,
                             share=self.spec.trials_per_instance)
        return self.gate.stop_reason(ledger) or _grid_done(self.spec, ledger), ledger

    def check(self) -> StopReason | None:
        """The stop reason, or None with the admission lock held until the next trial starts."""
        if self._stop is not None and self._stop.is_set():
            return StopReason(StopKind.STOPPED)
        if self.spec.trials_per_instance > 1:
            self.slot.acquire()
        try:
            self.admission.enter(exclusive=False)
            # once per check: a dead worker's trial is failed and charged before it is counted
            # (Optuna fails stale trials again as it starts the next one)
            fail_stale_trials(self.study)
            reason, ledger = self._reason_now()
            if (reason is None and self.admission.active
                    and self.gate.headroom_trials(ledger) <= self.admission.workers()):
                self.admission.enter(exclusive=True)  # near the cap: count every admitted trial
                reason, _ = self._reason_now()
        except BaseException:
            self.trial_started()
            raise
        if reason is not None:
            self.trial_started()
        return reason

    def after_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        """Optuna's callback: clean up, count a failure streak, and stop the study if due."""
        with self._lock:
            self.ran += 1
            if self.store is not None:
                cleanup_study(study, self.store, self.spec.cleanup)
            if self._on_trial_end is not None:
                self._on_trial_end(study, trial)
            error = self.errors.pop(trial.number, None)
            if trial.state is TrialState.FAIL:
                log.warning("trial %d failed: %s", trial.number, error or "none recorded")
            failed = self._streak.record(trial, error)
            if self.interrupted.is_set() and self.reason is None:
                self.reason = StopReason(StopKind.INTERRUPTED)
            if self.reason is None:
                self.reason = failed or with_db_retry("reading the dollar totals", self.check)
            if self.reason is not None:
                study.stop()

    def run(self, objective: Objective) -> StopReason:
        """Run trials until a stop reason comes up; returns it."""
        cut = 0
        try:
            while self.reason is None:
                self.reason = with_db_retry("reading the dollar totals", self.check)
                if self.reason is not None:
                    break
                ran_before = self.ran
                try:
                    # one optimize call for the whole worker: the gate runs in the callback
                    # after every trial and stops the study; no per-trial optimize set-up
                    self.study.optimize(objective, n_jobs=self.spec.trials_per_instance,
                                        catch=(Exception,), callbacks=[self.after_trial],
                                        gc_after_trial=False)
                except Exception as exc:  # noqa: BLE001 - re-raised unless the database went away
                    self.trial_started()
                    if isinstance(exc, ValueError) and self.ended_elsewhere:
                        self._count_ended_elsewhere()
                        continue
                    if db_error_in(exc) is None:
                        raise
                    cut = 0 if self.ran > ran_before else cut + 1
                    _go_on_after_cut(exc, cut)
        except KeyboardInterrupt:  # between trials (in a trial, the objective's wrapper has it)
            self.reason = StopReason(StopKind.INTERRUPTED)
        finally:
            self.slot.release()  # a thread may have passed the gate as a sibling stopped
            self.admission.close()
        return self.reason

    def _count_ended_elsewhere(self) -> None:
        # Optuna cannot tell a trial another process failed as stale: it is recorded and
        # charged already, so the worker goes on
        log.warning("trials %s were failed by another process (late heartbeats) while they "
                    "ran; charged for the time they ran", sorted(self.ended_elsewhere))
        self.ran += len(self.ended_elsewhere)
        self.ended_elsewhere.clear()


def _go_on_after_cut(exc: Exception, cut: int) -> None:
    """Log a trial cut by a database error; StoreUnavailable after too many in a row."""
    if cut >= _MAX_CUT_IN_A_ROW:
        raise StoreUnavailable(f"storage: {_MAX_CUT_IN_A_ROW} trials in a row were cut by "
                               f"database errors; last: {db_error_line(exc)}") from exc
    log.warning("storage: a trial was cut by a database error (%s); going on",
                db_error_line(exc))
    time.sleep(0.5)


def run_worker(
    spec: SweepSpec, *, storage_url: str | None = None, clock: Callable[[], float] = time.time,
    artifact_store: SweepArtifactStore | None = None,
    on_trial_end: Callable[[optuna.Study, FrozenTrial], None] | None = None,
    stop: threading.Event | None = None, objective: Objective | None = None,
    worker_id: str | None = None,
) -> WorkerResult:
    """Run trials until the budget, the trial count, the grid, ``stop`` or Ctrl-C ends the sweep.

    Entrypoint exceptions, ``sys.exit()`` and a return value that is not a number fail that
    trial only (its one-line error is recorded on it and logged), but
    ``budget.max_consecutive_failures`` failures in a row stop the worker. Ctrl-C fails the
    running trial with "interrupted (Ctrl-C)", charged for its time, and stops the worker
    with that reason.
    ``objective`` overrides the entrypoint (tests, benchmarks); ``clock`` (seconds) drives
    cost accounting and ``max_hours``; ``worker_id`` names the launched cloud worker this
    loop runs on (recorded on its trials, ``advisor.sweep.run.objective``).
    """
    choice = resolve_instance(spec)
    user_fn = objective or load_entrypoint(spec)
    store = artifact_store
    if store is None and spec.artifacts:
        store = open_artifact_store(spec.artifacts, base_dir=spec.source_dir)
    study = with_db_retry("opening the study", lambda: open_study(
        spec, storage_url=storage_url, price_usd_per_hour=choice.price_usd_per_hour,
        instance=choice.label, artifacts_url=store.url if store else None,
        prices_captured_at=choice.prices_captured_at), retry_s=OPEN_RETRY_S)
    loop = _WorkerLoop(spec, study, price_usd_per_hour=choice.price_usd_per_hour, clock=clock,
                       store=store, on_trial_end=on_trial_end, stop=stop)
    wrapped = charged_objective(user_fn, spec, choice.price_usd_per_hour, clock=clock,
                                on_start=loop.trial_started, errors=loop.errors,
                                interrupted=loop.interrupted,
                                ended_elsewhere=loop.ended_elsewhere, worker_id=worker_id)
    bind_store(spec.study, store)
    try:
        reason = loop.run(wrapped)
    finally:
        bind_store(spec.study, None)
    with_db_retry("recording the stop reason", lambda: write_stop(study, reason))
    log.info("worker stopped after %d trials: %s", loop.ran, render_stop_reason(reason))
    return WorkerResult(loop.ran, reason)
