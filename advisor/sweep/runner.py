"""Run a sweep's trials in this process: one worker loop against the shared Optuna study.

One ``study.optimize`` call per worker: before the first trial and after every trial a
callback asks the budget gate (two aggregate queries, ``advisor.sweep.ledger``) whether
another trial may start, under the admission lock (``advisor.sweep.admission``), and stops
the study when not. The wrapped objective pre-applies the YAML search space, calls the user's
entrypoint, and records wall time and dollars on the trial in one write; after every trial
the cleanup policy runs. A dead worker's trial is failed by heartbeat; database errors are
retried.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.errors import AdvisorError
from advisor.storage import default_storage_url
from advisor.sweep.admission import Admission
from advisor.sweep.artifacts import (
    ARTIFACTS_URL_ATTR,
    SweepArtifactStore,
    bind_store,
    open_artifact_store,
)
from advisor.sweep.budget import (
    COST_ATTR,
    PRICE_ATTR,
    SHARE_ATTR,
    STARTED_ATTR,
    WALL_ATTR,
    BudgetGate,
    trial_cost_usd,
)
from advisor.sweep.cleanup import cleanup_study
from advisor.sweep.instance import resolve_instance
from advisor.sweep.ledger import Ledger, read_ledger, write_trial_attrs
from advisor.sweep.service import CLEANUP_POLICY_ATTR
from advisor.sweep.spec import (
    Direction,
    Distribution,
    ParamSpec,
    PrunerKind,
    SamplerKind,
    SweepSpec,
)

__all__ = [
    "CAPTURED_ATTR",
    "MAX_USD_ATTR",
    "SEARCH_SPACE_ATTR",
    "STOP_REASON_ATTR",
    "Objective",
    "WorkerResult",
    "load_entrypoint",
    "make_pruner",
    "make_sampler",
    "open_study",
    "run_worker",
    "storage_url_of",
    "suggest",
]

log = logging.getLogger("advisor.sweep")

SEARCH_SPACE_ATTR = "advisor:search_space"
STOP_REASON_ATTR = "advisor:stop_reason"
PRICE_STUDY_ATTR = "advisor:price_usd_per_hour"
INSTANCE_ATTR = "advisor:instance"
MAX_USD_ATTR = "advisor:max_usd"
CAPTURED_ATTR = "advisor:prices_captured_at"
Objective = Callable[[optuna.Trial], Any]

_DB_RETRY_S = 120.0
_MAX_CUT_IN_A_ROW = 20
_DIRECTIONS = {Direction.MINIMIZE: optuna.study.StudyDirection.MINIMIZE,
               Direction.MAXIMIZE: optuna.study.StudyDirection.MAXIMIZE}


@dataclass(frozen=True)
class WorkerResult:
    """What one worker loop did: trials it ran and why it stopped."""

    trials_run: int
    stop_reason: str


def storage_url_of(spec: SweepSpec, override: str | None = None) -> str:
    """The storage URL: the command-line override, sweep.yaml's, else the default SQLite file."""
    return override or spec.storage or default_storage_url()


def _param_dict(p: ParamSpec) -> dict[str, Any]:
    return {"name": p.name, "type": str(p.distribution), "low": p.low, "high": p.high,
            "log": p.log, "step": p.step, "choices": list(p.choices)}


def _params_from_attr(raw: object) -> list[ParamSpec]:
    if not isinstance(raw, list):
        return []
    return [ParamSpec(d["name"], Distribution(d["type"]), low=d["low"], high=d["high"],
                      log=d["log"], step=d["step"], choices=tuple(d["choices"])) for d in raw]


def suggest(trial: optuna.Trial, space: Sequence[ParamSpec] | None = None) -> dict[str, Any]:
    """Suggest every parameter of the sweep's YAML search space; returns name -> value.

    Safe to call again inside the objective (Optuna returns the same values). Without
    ``space``, the study's stored search space is used.
    """
    params = list(space) if space is not None else _params_from_attr(
        trial.study.user_attrs.get(SEARCH_SPACE_ATTR))
    values: dict[str, Any] = {}
    for p in params:
        if p.distribution is Distribution.CATEGORICAL:
            values[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        elif p.distribution is Distribution.INT:
            assert p.low is not None and p.high is not None
            values[p.name] = trial.suggest_int(p.name, int(p.low), int(p.high),
                                               step=int(p.step or 1), log=p.log)
        else:
            assert p.low is not None and p.high is not None
            values[p.name] = trial.suggest_float(p.name, p.low, p.high, step=p.step, log=p.log)
    return values


def make_sampler(spec: SweepSpec) -> optuna.samplers.BaseSampler:
    """The Optuna sampler sweep.yaml names, with its seed and options."""
    s = spec.sampler
    if s.kind is SamplerKind.RANDOM:
        return optuna.samplers.RandomSampler(seed=s.seed)
    if s.kind is SamplerKind.CMAES:
        return optuna.samplers.CmaEsSampler(seed=s.seed, **s.options)
    if s.kind is SamplerKind.GRID:
        grid = {p.name: p.grid_values() for p in spec.search_space}
        return optuna.samplers.GridSampler(grid, seed=s.seed)
    return optuna.samplers.TPESampler(seed=s.seed, **s.options)


def make_pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    """The Optuna pruner sweep.yaml names, with its options."""
    kind, options = spec.pruner.kind, dict(spec.pruner.options)
    if kind is PrunerKind.NONE:
        return optuna.pruners.NopPruner()
    if kind is PrunerKind.PERCENTILE:
        return optuna.pruners.PercentilePruner(options.pop("percentile", 25.0), **options)
    if kind is PrunerKind.SUCCESSIVE_HALVING:
        return optuna.pruners.SuccessiveHalvingPruner(**options)
    if kind is PrunerKind.HYPERBAND:
        return optuna.pruners.HyperbandPruner(**options)
    if kind is PrunerKind.WILCOXON:
        return optuna.pruners.WilcoxonPruner(**options)
    return optuna.pruners.MedianPruner(**options)


def load_entrypoint(spec: SweepSpec) -> Objective:
    """Import ``pkg.mod:func`` with the sweep.yaml folder first on ``sys.path``."""
    module_name, _, func_name = spec.entrypoint.partition(":")
    if spec.source_dir and spec.source_dir not in sys.path:
        sys.path.insert(0, spec.source_dir)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AdvisorError(f"entrypoint: cannot import {module_name!r} ({exc}); the module "
                           f"must be importable from {spec.source_dir or 'the current folder'}"
                           ) from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise AdvisorError(f"entrypoint: {module_name} has no function {func_name!r}")
    return func  # type: ignore[no-any-return]


def _db_error_in(exc: BaseException) -> BaseException | None:
    """The database error behind ``exc`` (itself or in its cause/context chain), if any.

    Optuna can mask a lost connection behind another error raised while it cleans up.
    """
    from sqlalchemy.exc import DBAPIError, OperationalError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OperationalError | DBAPIError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _with_db_retry(what: str, call: Callable[[], Any], *, retry_s: float = _DB_RETRY_S) -> Any:
    """Call, retrying with back-off while the database is unreachable (e.g. restarting)."""
    deadline = time.monotonic() + retry_s
    delay = 0.2
    while True:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - re-raised unless a database error is behind it
            db_error = _db_error_in(exc)
            if db_error is None:
                raise
            first_line = str(db_error).splitlines()[0] if str(db_error) else type(db_error).__name__
            if time.monotonic() > deadline:
                raise AdvisorError(f"storage: {what} failed for {retry_s:.0f} s: "
                                   f"{first_line}") from exc
            log.warning("storage: %s failed (%s); retrying in %.1f s", what, first_line, delay)
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def open_study(spec: SweepSpec, *, storage_url: str | None = None,
               price_usd_per_hour: float | None = None, instance: str | None = None,
               artifacts_url: str | None = None,
               prices_captured_at: str | None = None) -> optuna.Study:
    """Create the study, or load it when it exists (re-running resumes).

    Records on the study what reports need: search space, cleanup policy, price, instance,
    artifact location, ``advisor:max_usd`` (when the budget has one) and
    ``advisor:prices_captured_at`` (ISO date of the catalog price trials are charged at).
    """
    url = storage_url_of(spec, storage_url)
    try:
        with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = optuna.storages.RDBStorage(
                url, engine_kwargs={"pool_pre_ping": True},
                heartbeat_interval=spec.heartbeat_s, grace_period=max(2 * spec.heartbeat_s, 2))
    except (ImportError, ValueError) as exc:
        raise AdvisorError(f"storage: cannot open {url!r}: {exc}") from exc
    study = optuna.create_study(
        study_name=spec.study, storage=storage, sampler=make_sampler(spec),
        pruner=make_pruner(spec), direction=_DIRECTIONS[spec.direction], load_if_exists=True)
    if study.direction.name.lower() != str(spec.direction):
        raise AdvisorError(f"direction: study {spec.study!r} already exists with direction "
                           f"{study.direction.name.lower()}; use a new study name")
    attrs = study.user_attrs
    wanted: dict[str, Any] = {
        SEARCH_SPACE_ATTR: [_param_dict(p) for p in spec.search_space],
        CLEANUP_POLICY_ATTR: {"keep_best": spec.cleanup.keep_best,
                              "states": [str(s) for s in spec.cleanup.states]},
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


def _wrap(objective: Objective, spec: SweepSpec, price: float,
          clock: Callable[[], float], on_start: Callable[[], None]) -> Objective:
    share = spec.trials_per_instance

    def run(trial: optuna.Trial) -> Any:
        on_start()
        started = clock()
        try:
            suggest(trial, spec.search_space)
            return objective(trial)
        finally:
            wall = max(clock() - started, 0.0)
            write_trial_attrs(trial, {
                STARTED_ATTR: started, PRICE_ATTR: price, SHARE_ATTR: share, WALL_ATTR: wall,
                COST_ATTR: trial_cost_usd(wall, price, share)})

    return run


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
) -> WorkerResult:
    """Run trials until the budget, the trial count, the grid or ``stop`` ends the sweep.

    Entrypoint exceptions fail that trial only. ``objective`` overrides the entrypoint
    (tests, benchmarks); ``clock`` (seconds) drives cost accounting and ``max_hours``.
    """
    choice = resolve_instance(spec)
    store = artifact_store
    if store is None and spec.artifacts:
        store = open_artifact_store(spec.artifacts, base_dir=spec.source_dir)
    study = _with_db_retry("opening the study", lambda: open_study(
        spec, storage_url=storage_url, price_usd_per_hour=choice.price_usd_per_hour,
        instance=choice.label, artifacts_url=store.url if store else None,
        prices_captured_at=choice.prices_captured_at))
    user_fn = objective or load_entrypoint(spec)
    gate = BudgetGate(spec.budget, choice.price_usd_per_hour, spec.trials_per_instance, clock)
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

    wrapped = _wrap(user_fn, spec, choice.price_usd_per_hour, clock, on_start)
    bind_store(spec.study, store)

    lock = threading.Lock()
    box: dict[str, Any] = {"ran": 0, "reason": ""}

    def reason_now() -> tuple[str, Ledger]:
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
            if not box["reason"]:
                box["reason"] = _with_db_retry("reading the dollar totals", check)
            if box["reason"]:
                st.stop()

    cut = 0
    try:
        while not box["reason"]:
            box["reason"] = _with_db_retry("reading the dollar totals", check)
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
                if _db_error_in(exc) is None:
                    raise
                cut = 0 if box["ran"] > ran_before else cut + 1
                if cut >= _MAX_CUT_IN_A_ROW:
                    raise AdvisorError(f"storage: {_MAX_CUT_IN_A_ROW} trials in a row were cut "
                                       f"by database errors; last: {exc}") from exc
                log.warning("storage: a trial was cut by a database error (%s); going on",
                            str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                time.sleep(0.5)
        reason, ran = str(box["reason"]), int(box["ran"])
        _with_db_retry("recording the stop reason",
                       lambda: study.set_user_attr(STOP_REASON_ATTR, reason))
    finally:
        slot.release()  # a thread may have passed the gate just as a sibling stopped the study
        admission.close()
        bind_store(spec.study, None)
    log.info("worker stopped after %d trials: %s", ran, reason)
    return WorkerResult(ran, reason)
