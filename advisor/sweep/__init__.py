"""Optuna sweeps with pruning, a dollar cap, per-trial cost accounting and artifact cleanup.

An objective written for ``advisor sweep`` is a plain Optuna objective; it may call
``suggest(trial)`` to get the sweep.yaml search space and ``upload_artifact(trial, path)``
to save files that the cleanup policy later deletes.

The names below are imported on first use, so that ``advisor.sweep.finished`` (which answers
a rerun of a finished sweep in a fraction of a second) does not import Optuna.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor._lazy import lazy_exports

if TYPE_CHECKING:
    from advisor.sweep.artifacts import SweepArtifactStore, open_artifact_store, upload_artifact
    from advisor.sweep.budget import BudgetGate
    from advisor.sweep.cleanup import CleanupReport, cleanup_study, plan_cleanup
    from advisor.sweep.cost import cost_of, trial_cost_usd
    from advisor.sweep.objective import suggest
    from advisor.sweep.runner import WorkerResult, open_study, run_worker
    from advisor.sweep.spec import SweepSpec, load_sweep_spec, parse_sweep_spec
    from advisor.sweep.status import SweepStatus, load_status, sweep_status
    from advisor.sweep.stops import StopKind, StopReason, render_stop_reason
    from advisor.sweep.workers import SweepOutcome, check_workers_storage, run_sweep

__all__ = [
    "BudgetGate",
    "CleanupReport",
    "SweepArtifactStore",
    "SweepOutcome",
    "SweepSpec",
    "StopKind",
    "StopReason",
    "SweepStatus",
    "WorkerResult",
    "check_workers_storage",
    "cleanup_study",
    "cost_of",
    "load_status",
    "load_sweep_spec",
    "open_artifact_store",
    "open_study",
    "parse_sweep_spec",
    "plan_cleanup",
    "render_stop_reason",
    "run_sweep",
    "run_worker",
    "suggest",
    "sweep_status",
    "trial_cost_usd",
    "upload_artifact",
]

_HOME = {
    "SweepArtifactStore": "artifacts", "open_artifact_store": "artifacts",
    "upload_artifact": "artifacts",
    "BudgetGate": "budget",
    "CleanupReport": "cleanup", "cleanup_study": "cleanup", "plan_cleanup": "cleanup",
    "cost_of": "cost", "trial_cost_usd": "cost",
    "suggest": "objective",
    "WorkerResult": "runner", "open_study": "runner", "run_worker": "runner",
    "SweepSpec": "spec", "load_sweep_spec": "spec", "parse_sweep_spec": "spec",
    "SweepStatus": "status", "load_status": "status", "sweep_status": "status",
    "StopKind": "stops", "StopReason": "stops", "render_stop_reason": "stops",
    "SweepOutcome": "workers", "check_workers_storage": "workers", "run_sweep": "workers",
}


__getattr__, __dir__ = lazy_exports("advisor.sweep", _HOME, globals(), __all__)
