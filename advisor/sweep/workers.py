"""Run a sweep with one or many workers: in this process, as local processes, or on cloud.

``run_sweep`` is what ``advisor sweep sweep.yaml`` calls. With ``workers > 1`` it starts
worker processes (``python -m advisor.sweep.workers SWEEP_YAML``, the same as ``advisor sweep
worker SWEEP_YAML``) against one PostgreSQL-backed study and polls its status until they end.
With ``launch=True`` the workers run on cloud instances instead (``advisor.sweep.run.launch``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import optuna

from advisor.errors import AdvisorError
from advisor.storage import is_postgres_url, shown_url
from advisor.sweep.accounting.finished import finished_sweep
from advisor.sweep.accounting.instances import resolve_instance
from advisor.sweep.accounting.records import read_stop
from advisor.sweep.accounting.status import SweepStatus, sweep_status
from advisor.sweep.run.artifacts import open_artifact_store
from advisor.sweep.run.cleanup import CleanupReport, cleanup_study
from advisor.sweep.run.database import check_storage_url, storage_origin, storage_url_of
from advisor.sweep.run.heartbeat import fail_stale_trials
from advisor.sweep.run.objective import load_entrypoint
from advisor.sweep.run.runner import WorkerResult, open_study, run_worker
from advisor.sweep.spec.outcomes import StopKind, StopReason, TrialStatus, render_stop_reason
from advisor.sweep.spec.sweep_spec import SweepSpec, load_sweep_spec
from probes import ProbeError

if TYPE_CHECKING:
    from advisor.sweep.run.launch import SweepAwsLauncher

__all__ = [
    "SweepOutcome",
    "check_workers_storage",
    "main",
    "run_sweep",
    "spawn_local_workers",
    "worker_command",
]

log = logging.getLogger("advisor.sweep")

ProgressFn = Callable[[SweepStatus], None]


@dataclass(frozen=True)
class SweepOutcome:
    """How a sweep ended: its final status, why it stopped, the workers' exit codes.

    ``failure`` is empty unless the sweep failed: every trial failed, or trials kept failing
    until ``budget.max_consecutive_failures`` stopped it (the study and its artifacts stay).
    """

    status: SweepStatus
    stop: StopReason | None
    worker_exit_codes: tuple[int, ...] = ()
    final_cleanup: CleanupReport | None = None

    @property
    def stop_reason(self) -> str:
        """Why the sweep stopped, as a sentence ("" when no worker recorded why)."""
        return "" if self.stop is None else render_stop_reason(self.stop)

    @property
    def failure(self) -> str:
        """One line saying why the sweep failed, or "" when it did not."""
        status = self.status
        if status.all_failed:
            failed = status.count_by_state().get(TrialStatus.FAIL, 0)
            return (f"every trial failed ({failed}); last error: "
                    f"{status.last_error or 'none recorded'}; fix the objective, then run the "
                    "sweep again to resume it")
        if self.stop is not None and self.stop.failure:
            return f"sweep stopped: {self.stop_reason}"
        return ""


def check_workers_storage(url: str, workers: int) -> None:
    """Refuse several workers on a storage that cannot take concurrent writers."""
    if workers < 1:
        raise AdvisorError(f"--workers: must be 1 or more, got {workers}")
    if workers > 1 and not is_postgres_url(url):
        raise AdvisorError(
            f"--workers {workers} needs a PostgreSQL storage URL, but the storage is {shown_url(url)!r}: "
            "SQLite locks the whole file on every write, so parallel workers would fail with "
            "'database is locked' and heartbeats would not be reliable. Set 'storage: "
            "postgresql://USER@HOST/DB' in sweep.yaml (or --storage / ADVISOR_STORAGE_URL), "
            "or run with --workers 1")


def worker_command(spec_path: str | Path, *, storage_url: str | None = None) -> list[str]:
    """The command line of one local worker process."""
    cmd = [sys.executable, "-m", "advisor.sweep.workers", str(Path(spec_path).resolve())]
    return cmd + (["--storage", storage_url] if storage_url else [])


def spawn_local_workers(spec_path: str | Path, workers: int, *,
                        storage_url: str | None = None) -> list[subprocess.Popen[bytes]]:
    """Start ``workers`` local worker processes; the caller waits for (or kills) them.

    Their standard output (the "worker done" line, the objective's prints) goes to this
    process's standard error: standard output is the sweep's own (its table, or its JSON).
    """
    return [subprocess.Popen(worker_command(spec_path, storage_url=storage_url),
                             stdout=sys.stderr.fileno() if _has_fileno(sys.stderr)
                             else subprocess.DEVNULL)
            for _ in range(workers)]


def _has_fileno(stream: object) -> bool:
    try:
        return isinstance(stream.fileno(), int)  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


def _run_launched(spec_path: str | Path, spec: SweepSpec, workers: int, url: str,
                  launcher: SweepAwsLauncher | None, on_progress: ProgressFn | None,
                  poll_s: float) -> tuple[optuna.Study, StopReason | None]:
    """``--launch``: the workers run on cloud instances of the offer (see advisor.sweep.run.launch)."""
    from advisor.sweep.accounting.budget import BudgetGate
    from advisor.sweep.accounting.ledger import read_ledger
    from advisor.sweep.run.launch import (
        check_reachable,
        launch_requests,
        make_sweep_launcher,
        run_launched,
    )

    if not is_postgres_url(url):
        raise AdvisorError(f"--launch: cloud workers need a PostgreSQL storage they can reach, "
                           f"but the storage is {shown_url(url)!r}; set 'storage: postgresql://USER@HOST/DB' "
                           "in sweep.yaml or pass --storage")
    if spec.instance == "local":
        raise AdvisorError("--launch: sweep.yaml says 'instance: local'; name the offer to run "
                           "on, e.g. 'instance: aws:g5.xlarge:us-east-1:spot'")
    choice = resolve_instance(spec)
    spec = replace(spec, instance=choice.label)
    check_reachable(url, spec.artifacts)
    launcher = launcher or make_sweep_launcher(
        spec, url, sweep_yaml_name=Path(spec_path).name,
        bucket=os.environ.get("ADVISOR_AWS_BUCKET", ""))
    try:  # before the study is touched: missing credentials are a setting
        launcher.check_credentials()
    except ProbeError as exc:
        raise AdvisorError(f"--launch: {exc}") from exc
    study = open_study(spec, storage_url=url, price_usd_per_hour=choice.price_usd_per_hour,
                       instance=choice.label, prices_captured_at=choice.prices_captured_at)
    gate = BudgetGate.for_sweep(spec, choice.price_usd_per_hour)  # the workers' own gate

    def stopped() -> bool:
        ledger = read_ledger(study, price_usd_per_hour=choice.price_usd_per_hour,
                             share=spec.trials_per_instance)
        return gate.stop_reason(ledger) is not None

    def poll() -> None:
        if on_progress is not None:
            on_progress(sweep_status(study))

    requests = launch_requests(spec, workers, choice.price_usd_per_hour)
    reason = run_launched(launcher, requests, study, stopped=stopped, on_poll=poll,
                          poll_s=poll_s)
    return study, read_stop(study.user_attrs) or reason


def _fail_orphans(spec: SweepSpec, study: optuna.Study) -> None:
    """Fail trials left running by dead workers, waiting at most one grace period for it."""
    deadline = time.monotonic() + 3 * spec.heartbeat_s + 1
    running = optuna.trial.TrialState.RUNNING
    while True:
        fail_stale_trials(study)
        if not study.get_trials(deepcopy=False, states=(running,)):
            return
        if time.monotonic() > deadline:
            return
        time.sleep(0.5)


def _final_pass(spec: SweepSpec, study: optuna.Study) -> CleanupReport | None:
    _fail_orphans(spec, study)
    if not spec.artifacts:
        return None
    store = open_artifact_store(spec.artifacts, base_dir=spec.source_dir)
    return cleanup_study(study, store, spec.cleanup)


def _wait(procs: Sequence[subprocess.Popen[bytes]], study: optuna.Study,
          on_progress: ProgressFn | None, poll_s: float) -> tuple[int, ...]:
    try:
        while any(p.poll() is None for p in procs):
            if on_progress is not None:
                on_progress(sweep_status(study))
            time.sleep(poll_s)
    except KeyboardInterrupt:
        _stop_workers(procs)
        raise
    return tuple(int(p.returncode) for p in procs)


def _stop_workers(procs: Sequence[subprocess.Popen[bytes]], *, grace_s: float = 5.0) -> None:
    """After Ctrl-C: let the workers fail their trials as interrupted, then make sure they end.

    Ctrl-C in a terminal reaches the workers too; a worker that did not get it (the signal was
    sent to this process only) gets SIGINT after ``grace_s``, and SIGTERM 30 s later.
    """
    deadline = time.monotonic() + grace_s
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.1)
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.terminate()
            p.wait(timeout=30)


def run_sweep(spec_path: str | Path, *, workers: int | None = None,
              storage_url: str | None = None, launch: bool = False,
              on_progress: ProgressFn | None = None, poll_s: float = 1.0,
              stop: threading.Event | None = None,
              launcher: SweepAwsLauncher | None = None,
              finished_checked: bool = False) -> SweepOutcome:
    """Run (or resume) the sweep described by sweep.yaml until its budget or trials end.

    Everything is checked (spec, workers, storage URL, instance, entrypoint) before the first
    ``on_progress`` call, so a bad input raises AdvisorError before any progress is shown.
    ``launch`` runs the ``workers`` on cloud instances of the sweep's offer (``launcher``
    overrides the one built from the offer, for tests) and terminates them at the end.
    A single local worker first asks ``finished_sweep`` whether the stored sweep is finished
    (then the objective is not even imported), unless ``finished_checked``: the caller asked
    already and it was not.
    """
    spec = load_sweep_spec(spec_path)
    n = workers if workers is not None else spec.workers
    url = storage_url_of(spec, storage_url)
    check_workers_storage(url, n)
    check_storage_url(url, origin=storage_origin(spec, storage_url))
    codes: tuple[int, ...] = ()
    if launch:
        study, reason = _run_launched(spec_path, spec, n, url, launcher, on_progress, poll_s)
    elif n == 1 and not finished_checked and (done := finished_sweep(spec, url)) is not None:
        # nothing may run: answer from the stored study, without importing the objective
        reason = done.stop
        study = open_study(spec, storage_url=storage_url)
    elif n == 1:
        def progress(st: optuna.Study, _trial: optuna.trial.FrozenTrial) -> None:
            if on_progress is not None:
                on_progress(sweep_status(st))

        result: WorkerResult = run_worker(spec, storage_url=storage_url, on_trial_end=progress,
                                          stop=stop)
        reason = result.stop
        study = open_study(spec, storage_url=storage_url)
    else:
        choice = resolve_instance(spec)
        load_entrypoint(spec)  # a broken entrypoint is one error here, not one per worker
        study = open_study(spec, storage_url=storage_url,
                           price_usd_per_hour=choice.price_usd_per_hour, instance=choice.label,
                           prices_captured_at=choice.prices_captured_at)
        codes = _wait(spawn_local_workers(spec_path, n, storage_url=storage_url), study,
                      on_progress, poll_s)
        reason = read_stop(study.user_attrs)
        if any(codes):
            log.warning("worker exit codes: %s", codes)
    report = _final_pass(spec, study)
    status = sweep_status(study)
    if on_progress is not None:
        on_progress(status)
    return SweepOutcome(status, reason, codes, report)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m advisor.sweep.workers SWEEP_YAML [--storage URL] [--worker-id ID]``: one
    worker loop (``--worker-id``: the launched cloud worker it runs on, recorded on its trials)."""
    parser = argparse.ArgumentParser(prog="advisor sweep worker")
    parser.add_argument("sweep_yaml")
    parser.add_argument("--storage", default=None)
    parser.add_argument("--worker-id", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        spec = load_sweep_spec(args.sweep_yaml)
        result = run_worker(spec, storage_url=args.storage, worker_id=args.worker_id)
    except AdvisorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s = "" if result.trials_run == 1 else "s"
    print(f"worker done: {result.trials_run} trial{s}; {result.stop_reason}")
    if result.stop.kind is StopKind.INTERRUPTED:
        return 130
    return 1 if result.stop.failure else 0


if __name__ == "__main__":
    raise SystemExit(main())
