"""Optuna sweeps with pruning, a dollar cap, per-trial cost accounting and artifact cleanup.

An objective written for ``advisor sweep`` is a plain Optuna objective; it may call
``suggest(trial)`` to get the sweep.yaml search space and ``upload_artifact(trial, path)``
to save files that the cleanup policy later deletes.

This face is what other packages use (``cli`` and ``reports`` import nothing else of the
sweep). Inside, three parts, each importing only those before it:

- ``advisor.sweep.spec``: sweep.yaml, the search space, sampler and pruner, trial states and
  stop reasons (pure values);
- ``advisor.sweep.accounting``: what trials cost, the caps and the gate, the ledger, the
  launched instances' billing, the stored records and the one read model, ``SweepStatus``;
- ``advisor.sweep.run``: the worker loop, the objective, the storage, heartbeats, cloud
  workers, artifacts and cleanup;

and ``advisor.sweep.workers``, which runs a sweep with its workers (``python -m
advisor.sweep.workers SWEEP_YAML`` is one worker).

The names below are imported on first use, so that ``finished_sweep`` (which answers a rerun
of a finished sweep in a fraction of a second) does not import Optuna.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor._lazy import lazy_exports

if TYPE_CHECKING:
    from advisor.sweep.accounting.budget import BudgetGate, cost_of
    from advisor.sweep.accounting.finished import FinishedSweep, finished_sweep
    from advisor.sweep.accounting.status import (
        STATES,
        StudyListing,
        SweepStatus,
        TrialCost,
        sweep_status,
    )
    from advisor.sweep.errors import StoreUnavailable
    from advisor.sweep.run.artifacts import SweepArtifactStore, open_artifact_store, upload_artifact
    from advisor.sweep.run.cleanup import CleanupReport, cleanup_study, plan_cleanup
    from advisor.sweep.run.objective import suggest
    from advisor.sweep.run.runner import WorkerResult, open_study, run_worker
    from advisor.sweep.run.service import (
        cleanup_stored_study,
        list_studies,
        load_status,
        load_sweep_report_data,
        quiet_optuna_logging,
        sweep_report_data,
    )
    from advisor.sweep.spec.outcomes import StopKind, StopReason, TrialStatus, render_stop_reason
    from advisor.sweep.spec.sweep_spec import SweepSpec, load_sweep_spec, parse_sweep_spec
    from advisor.sweep.workers import SweepOutcome, check_workers_storage, run_sweep

__all__ = [
    "STATES",
    "BudgetGate",
    "CleanupReport",
    "FinishedSweep",
    "StopKind",
    "StopReason",
    "StoreUnavailable",
    "StudyListing",
    "SweepArtifactStore",
    "SweepOutcome",
    "SweepSpec",
    "SweepStatus",
    "TrialCost",
    "TrialStatus",
    "WorkerResult",
    "check_workers_storage",
    "cleanup_stored_study",
    "cleanup_study",
    "cost_of",
    "finished_sweep",
    "list_studies",
    "load_status",
    "load_sweep_report_data",
    "load_sweep_spec",
    "open_artifact_store",
    "open_study",
    "parse_sweep_spec",
    "plan_cleanup",
    "quiet_optuna_logging",
    "render_stop_reason",
    "run_sweep",
    "run_worker",
    "suggest",
    "sweep_report_data",
    "sweep_status",
    "upload_artifact",
]

_HOME = {
    "BudgetGate": "accounting.budget", "cost_of": "accounting.budget",
    "FinishedSweep": "accounting.finished", "finished_sweep": "accounting.finished",
    "STATES": "accounting.status", "StudyListing": "accounting.status",
    "SweepStatus": "accounting.status", "TrialCost": "accounting.status",
    "sweep_status": "accounting.status",
    "StoreUnavailable": "errors",
    "SweepArtifactStore": "run.artifacts", "open_artifact_store": "run.artifacts",
    "upload_artifact": "run.artifacts",
    "CleanupReport": "run.cleanup", "cleanup_study": "run.cleanup", "plan_cleanup": "run.cleanup",
    "suggest": "run.objective",
    "WorkerResult": "run.runner", "open_study": "run.runner", "run_worker": "run.runner",
    "cleanup_stored_study": "run.service", "list_studies": "run.service",
    "load_status": "run.service", "load_sweep_report_data": "run.service",
    "sweep_report_data": "run.service", "quiet_optuna_logging": "run.service",
    "StopKind": "spec.outcomes", "StopReason": "spec.outcomes", "TrialStatus": "spec.outcomes",
    "render_stop_reason": "spec.outcomes",
    "SweepSpec": "spec.sweep_spec", "load_sweep_spec": "spec.sweep_spec",
    "parse_sweep_spec": "spec.sweep_spec",
    "SweepOutcome": "workers", "check_workers_storage": "workers", "run_sweep": "workers",
}


__getattr__, __dir__ = lazy_exports("advisor.sweep", _HOME, globals(), __all__)
