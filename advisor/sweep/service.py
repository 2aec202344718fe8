"""Stored studies by name (``status``, ``cleanup``), and cleaning one with its own policy."""

from __future__ import annotations

from dataclasses import replace

import optuna
from optuna.trial import TrialState

from advisor.errors import AdvisorError
from advisor.storage import default_storage_url
from advisor.sweep.artifacts import ARTIFACTS_URL_ATTR, open_artifact_store
from advisor.sweep.cleanup import CleanupReport, cleanup_study
from advisor.sweep.database import open_rdb_storage, shown_url, storage_origin
from advisor.sweep.heartbeat import HEARTBEAT_ATTR, charge_stale_trial, fail_stale_trials
from advisor.sweep.spec import CleanupSpec, CleanupState

__all__ = ["CLEANUP_POLICY_ATTR", "cleanup_stored_study", "load_stored_study"]

CLEANUP_POLICY_ATTR = "advisor:cleanup"


def _load(study_name: str, storage: optuna.storages.RDBStorage, url: str) -> optuna.Study:
    try:
        return optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        summaries = optuna.get_all_study_summaries(storage, include_best_trial=False)
        known = ", ".join(sorted(s.study_name for s in summaries)) or "none"
        raise AdvisorError(f"study {study_name!r} not found in {shown_url(url)} (known: "
                           f"{known}); pass --storage URL if it lives elsewhere") from None


def load_stored_study(study_name: str, storage_url: str | None = None) -> optuna.Study:
    """Load a study by name, or raise AdvisorError naming the studies that exist.

    Trials of dead workers (heartbeat older than the grace period of the heartbeat the sweep
    recorded) are failed first and charged up to their last heartbeat, so what is read next
    adds up. A bad ``storage_url`` is one AdvisorError line naming ``--storage``.
    """
    url = storage_url or default_storage_url()
    origin = storage_origin(None, storage_url)
    study = _load(study_name, open_rdb_storage(url, origin=origin), url)
    heartbeat = study.user_attrs.get(HEARTBEAT_ATTR)
    if not isinstance(heartbeat, int) or heartbeat < 1 or not study.get_trials(
            deepcopy=False, states=(TrialState.RUNNING,)):
        return study
    storage = open_rdb_storage(url, origin=origin, heartbeat_s=heartbeat,
                               on_stale=charge_stale_trial)
    study = _load(study_name, storage, url)
    fail_stale_trials(study)
    return study


def _policy(study: optuna.Study) -> CleanupSpec:
    raw = study.user_attrs.get(CLEANUP_POLICY_ATTR)
    if not isinstance(raw, dict):
        return CleanupSpec()
    return CleanupSpec(keep_best=int(raw.get("keep_best", 3)),
                       states=tuple(CleanupState(s) for s in raw.get("states", ())))


def cleanup_stored_study(study_name: str, *, storage_url: str | None = None,
                         artifacts_url: str | None = None, keep_best: int | None = None,
                         dry_run: bool = False) -> CleanupReport:
    """Apply the study's recorded cleanup policy (``keep_best`` overrides K) now."""
    study = load_stored_study(study_name, storage_url)
    url = artifacts_url or study.user_attrs.get(ARTIFACTS_URL_ATTR)
    if not isinstance(url, str):
        raise AdvisorError(f"study {study_name!r} recorded no artifact location; pass "
                           "--artifacts DIR|s3://...|gs://...")
    if keep_best is not None and keep_best < 0:
        raise AdvisorError(f"--keep-best: must be 0 or more, got {keep_best}")
    policy = _policy(study)
    if keep_best is not None:
        policy = replace(policy, keep_best=keep_best)
    return cleanup_study(study, open_artifact_store(url), policy, dry_run=dry_run)
