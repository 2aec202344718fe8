"""Stored studies by name (``status``, ``cleanup``, reports), and cleaning one with its own policy."""

from __future__ import annotations

from dataclasses import replace

import optuna
from optuna.trial import TrialState

from advisor.errors import AdvisorError
from advisor.storage import default_storage_url
from advisor.sweep.artifacts import open_artifact_store
from advisor.sweep.cleanup import CleanupReport, cleanup_study
from advisor.sweep.database import open_rdb_storage, shown_url, storage_origin
from advisor.sweep.heartbeat import charge_stale_trial, fail_stale_trials
from advisor.sweep.state import read_settings
from advisor.sweep.timestamps import check_study_clock

__all__ = ["cleanup_stored_study", "load_stored_study", "open_stored_studies", "open_stored_study"]


def _load(study_name: str, storage: optuna.storages.RDBStorage, url: str) -> optuna.Study:
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        summaries = optuna.get_all_study_summaries(storage, include_best_trial=False)
        known = ", ".join(sorted(s.study_name for s in summaries)) or "none"
        raise AdvisorError(f"study {study_name!r} not found in {shown_url(url)} (known: "
                           f"{known}); pass --storage URL if it lives elsewhere") from None
    check_study_clock(study, record=False)  # readers write nothing
    return study


def open_stored_study(study_name: str, storage_url: str | None = None) -> optuna.Study:
    """Open a study by name as it is, failing nothing (AdvisorError names the known studies).

    For readers (reports): the trials of dead workers stay RUNNING in the database; see
    ``advisor.sweep.heartbeat.trials_seen_dead`` to show them failed and charged.
    """
    url = storage_url or default_storage_url()
    return _load(study_name, open_rdb_storage(url, origin=storage_origin(None, storage_url)), url)


def open_stored_studies(storage_url: str | None = None) -> list[optuna.Study]:
    """Every study in the storage, by name, as it is (failing nothing: for listings)."""
    url = storage_url or default_storage_url()
    storage = open_rdb_storage(url, origin=storage_origin(None, storage_url))
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(
        storage, include_best_trial=False))
    return [_load(name, storage, url) for name in names]


def load_stored_study(study_name: str, storage_url: str | None = None) -> optuna.Study:
    """Load a study by name, or raise AdvisorError naming the studies that exist.

    Trials of dead workers (heartbeat older than the grace period of the heartbeat the sweep
    recorded) are failed first and charged up to their last heartbeat, so what is read next
    adds up. A bad ``storage_url`` is one AdvisorError line naming ``--storage``.
    """
    study = open_stored_study(study_name, storage_url)
    heartbeat = read_settings(study.user_attrs).heartbeat_s
    if heartbeat is None or not study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        return study
    url = storage_url or default_storage_url()
    storage = open_rdb_storage(url, origin=storage_origin(None, storage_url),
                               heartbeat_s=heartbeat, on_stale=charge_stale_trial)
    study = _load(study_name, storage, url)
    fail_stale_trials(study)
    return study


def cleanup_stored_study(study_name: str, *, storage_url: str | None = None,
                         artifacts_url: str | None = None, keep_best: int | None = None,
                         dry_run: bool = False) -> CleanupReport:
    """Apply the study's recorded cleanup policy (``keep_best`` overrides K) now."""
    study = load_stored_study(study_name, storage_url)
    settings = read_settings(study.user_attrs)
    url = artifacts_url or settings.artifacts_url
    if url is None:
        raise AdvisorError(f"study {study_name!r} recorded no artifact location; pass "
                           "--artifacts DIR|s3://...|gs://...")
    if keep_best is not None and keep_best < 0:
        raise AdvisorError(f"--keep-best: must be 0 or more, got {keep_best}")
    policy = settings.cleanup
    if keep_best is not None:
        policy = replace(policy, keep_best=keep_best)
    return cleanup_study(study, open_artifact_store(url), policy, dry_run=dry_run)
