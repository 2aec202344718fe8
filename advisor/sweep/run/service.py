"""Stored studies by name: opened, read into the sweep's read model (``status``, the report,
the listing) and cleaned with their own policy.

Two ways to read a study: ``load_status`` first fails and charges the trials of dead workers
in the database (as every sweep command does), ``sweep_report_data`` writes nothing and shows
them failed and charged in memory (``advisor.sweep.run.heartbeat.trials_seen_dead``).
"""

from __future__ import annotations

import time
from dataclasses import replace

import optuna
from optuna.trial import TrialState

from advisor.errors import AdvisorError
from advisor.storage import default_storage_url, sqlite_file
from advisor.sweep.accounting.records import read_settings
from advisor.sweep.accounting.status import StudyListing, SweepStatus, study_listing, sweep_status
from advisor.sweep.accounting.timestamps import check_study_clock
from advisor.sweep.run.artifacts import open_artifact_store
from advisor.sweep.run.cleanup import CleanupReport, cleanup_study
from advisor.sweep.run.database import open_rdb_storage, shown_url, storage_origin
from advisor.sweep.run.heartbeat import charge_stale_trial, fail_stale_trials, trials_seen_dead

__all__ = ["cleanup_stored_study", "list_studies", "load_status", "load_stored_study",
           "load_sweep_report_data", "open_stored_studies", "open_stored_study",
           "quiet_optuna_logging", "sweep_report_data"]


def quiet_optuna_logging() -> None:
    """Optuna logs errors only: the commands say what happened to each trial in one line of
    their own (a failed trial, a stop), so Optuna's per-trial info lines would repeat them."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)


def _not_found(study_name: str, url: str, known: str) -> AdvisorError:
    return AdvisorError(f"study {study_name!r} not found in {shown_url(url)} (known: {known}); "
                        "pass --storage URL if it lives elsewhere")


def _load(study_name: str, storage: optuna.storages.RDBStorage, url: str) -> optuna.Study:
    try:
        study = optuna.load_study(study_name=study_name, storage=storage)
    except KeyError:
        summaries = optuna.get_all_study_summaries(storage, include_best_trial=False)
        known = ", ".join(sorted(s.study_name for s in summaries)) or "none"
        raise _not_found(study_name, url, known) from None
    check_study_clock(study, record=False)  # readers write nothing
    return study


def _not_made_yet(url: str) -> bool:
    """True for a SQLite file that does not exist in a folder that does: it holds no study,
    and a reader must not create it (opening the storage would)."""
    path = sqlite_file(url)
    return path is not None and path.parent.is_dir() and not path.exists()


def open_stored_study(study_name: str, storage_url: str | None = None) -> optuna.Study:
    """Open a study by name as it is, failing nothing (AdvisorError names the known studies).

    For readers (reports): the trials of dead workers stay RUNNING in the database; see
    ``advisor.sweep.run.heartbeat.trials_seen_dead`` to show them failed and charged.
    """
    url = storage_url or default_storage_url()
    if _not_made_yet(url):
        raise _not_found(study_name, url, "none")
    return _load(study_name, open_rdb_storage(url, origin=storage_origin(None, storage_url)), url)


def open_stored_studies(storage_url: str | None = None) -> list[optuna.Study]:
    """Every study in the storage, by name, as it is (failing nothing: for listings)."""
    url = storage_url or default_storage_url()
    if _not_made_yet(url):
        return []
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
    return cleanup_study(study, open_artifact_store(url, create=False), policy, dry_run=dry_run)


def load_status(study_name: str, *, storage_url: str | None = None) -> SweepStatus:
    """The status of a stored study by name (raises AdvisorError naming the known studies).

    Trials of dead workers are failed first (see ``load_stored_study``).
    """
    return sweep_status(load_stored_study(study_name, storage_url))


def list_studies(*, storage_url: str | None = None) -> list[StudyListing]:
    """Every study in the storage, by name, with its trials and spend (none: empty). Read
    as stored: trials of dead workers still count as running (``load_status`` fails them)."""
    return [study_listing(study) for study in open_stored_studies(storage_url)]


def sweep_report_data(study: optuna.Study, *, budget_usd: float | None = None,
                      now_s: float | None = None) -> SweepStatus:
    """The study's status as a report reads it, writing nothing: trials of dead workers
    (stale heartbeat) show failed and charged up to ``now_s`` (default now), as the next sweep
    command records them. ``budget_usd`` overrides the planned budget stored on the study."""
    now = time.time() if now_s is None else now_s
    return sweep_status(study, now_s=now, trials=trials_seen_dead(study, now_s=now),
                        budget_usd=budget_usd)


def load_sweep_report_data(study_name: str, *, storage_url: str | None = None,
                           budget_usd: float | None = None) -> SweepStatus:
    """Open a stored study by name and read it as ``sweep_report_data`` does (writing
    nothing); AdvisorError names the known studies."""
    return sweep_report_data(open_stored_study(study_name, storage_url), budget_usd=budget_usd)
