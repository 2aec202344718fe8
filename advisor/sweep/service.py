"""What ``advisor sweep cleanup`` calls: clean a stored study with the policy it was run with."""

from __future__ import annotations

from dataclasses import replace

import optuna

from advisor.errors import AdvisorError
from advisor.storage import default_storage_url
from advisor.sweep.artifacts import ARTIFACTS_URL_ATTR, open_artifact_store
from advisor.sweep.cleanup import CleanupReport, cleanup_study
from advisor.sweep.spec import CleanupSpec, CleanupState

__all__ = ["CLEANUP_POLICY_ATTR", "cleanup_stored_study", "load_stored_study"]

CLEANUP_POLICY_ATTR = "advisor:cleanup"


def load_stored_study(study_name: str, storage_url: str | None = None) -> optuna.Study:
    """Load a study by name, or raise AdvisorError naming the studies that exist."""
    url = storage_url or default_storage_url()
    try:
        return optuna.load_study(study_name=study_name, storage=url)
    except KeyError:
        summaries = optuna.get_all_study_summaries(url, include_best_trial=False)
        known = ", ".join(sorted(s.study_name for s in summaries)) or "none"
        raise AdvisorError(f"study {study_name!r} not found in {url} (known: {known}); pass "
                           "--storage URL if it lives elsewhere") from None


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
