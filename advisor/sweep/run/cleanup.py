"""Delete the artifacts a sweep's cleanup policy names, never those of running or best-K trials.

``plan_cleanup`` is pure (trials in, artifact ids out) and is the one place the safety rule
lives; ``cleanup_study`` applies a plan through an artifact store and records the bytes freed
on the study (``advisor.sweep.accounting.records.record_cleaned``), so re-runs skip them and
``advisor sweep status`` can sum them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.sweep.accounting.records import cleaned_bytes, record_cleaned
from advisor.sweep.run.artifacts import SweepArtifactStore, store_errors
from advisor.sweep.spec.sweep_spec import CleanupSpec, CleanupState, Direction

__all__ = [
    "CleanupReport",
    "DeletedArtifact",
    "TrialArtifacts",
    "best_trial_numbers",
    "bytes_cleaned",
    "cleanup_study",
    "plan_cleanup",
    "trial_artifacts",
]

log = logging.getLogger("advisor.sweep")

_OPTUNA_ARTIFACT_PREFIX = "artifacts:"

_STATE_OF = {
    CleanupState.PRUNED: TrialState.PRUNED,
    CleanupState.FAILED: TrialState.FAIL,
    CleanupState.COMPLETED: TrialState.COMPLETE,
}


@dataclass(frozen=True)
class TrialArtifacts:
    """What cleanup needs to know of one trial: number, state, value and artifact ids."""

    number: int
    state: TrialState
    value: float | None
    artifact_ids: tuple[str, ...]
    filenames: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeletedArtifact:
    """One artifact deleted (or, in a dry run, to be deleted)."""

    trial_number: int
    artifact_id: str
    filename: str
    bytes_freed: int


@dataclass(frozen=True)
class CleanupReport:
    """What a cleanup pass deleted, the bytes it freed and the errors it met."""

    deleted: tuple[DeletedArtifact, ...]
    bytes_freed: int
    dry_run: bool
    errors: tuple[str, ...] = ()


def trial_artifacts(trial: FrozenTrial) -> TrialArtifacts:
    """The artifact ids Optuna recorded on a trial (``artifacts:<id>`` system attributes)."""
    ids, names = [], []
    for key, raw in sorted(trial.system_attrs.items()):
        if not key.startswith(_OPTUNA_ARTIFACT_PREFIX):
            continue
        ids.append(key[len(_OPTUNA_ARTIFACT_PREFIX):])
        try:
            names.append(str(json.loads(raw).get("filename", "")))
        except (TypeError, ValueError, AttributeError):
            names.append("")
    value = trial.value if trial.state is TrialState.COMPLETE else None
    return TrialArtifacts(trial.number, trial.state, value, tuple(ids), tuple(names))


def best_trial_numbers(trials: Iterable[TrialArtifacts], keep_best: int,
                       direction: Direction) -> set[int]:
    """Numbers of the best ``keep_best`` completed trials (ties broken by trial number)."""
    done = [t for t in trials if t.state is TrialState.COMPLETE and t.value is not None]
    sign = 1.0 if direction is Direction.MINIMIZE else -1.0
    done.sort(key=lambda t: (sign * float(t.value or 0.0), t.number))
    return {t.number for t in done[:keep_best]}


def plan_cleanup(trials: Sequence[TrialArtifacts], policy: CleanupSpec, direction: Direction,
                 *, already_cleaned: Iterable[str] = ()) -> list[tuple[TrialArtifacts, str]]:
    """(trial, artifact id) pairs the policy deletes, skipping ids already cleaned.

    Never a trial that is not finished (running, waiting) and never one of the best K.
    """
    protected = best_trial_numbers(trials, policy.keep_best, direction)
    states = {_STATE_OF[s] for s in policy.states}
    skip = set(already_cleaned)
    plan = []
    for trial in trials:
        if not trial.state.is_finished() or trial.number in protected:
            continue
        if trial.state not in states:
            continue
        plan += [(trial, a) for a in trial.artifact_ids if a not in skip]
    return plan


def bytes_cleaned(study: optuna.Study) -> int:
    """Bytes freed by all cleanup passes of the study so far."""
    return sum(cleaned_bytes(study.user_attrs).values())


def cleanup_study(study: optuna.Study, store: SweepArtifactStore, policy: CleanupSpec,
                  *, dry_run: bool = False) -> CleanupReport:
    """Apply the policy to the study now; a dry run only reports what it would delete.

    Store errors are collected into the report (and logged), not raised: a sweep goes on.
    """
    from optuna.artifacts.exceptions import ArtifactNotFound  # imported with the store

    direction = (Direction.MAXIMIZE if study.direction == optuna.study.StudyDirection.MAXIMIZE
                 else Direction.MINIMIZE)
    trials = [trial_artifacts(t) for t in study.get_trials(deepcopy=False)]
    cleaned = list(cleaned_bytes(study.user_attrs))
    deleted: list[DeletedArtifact] = []
    errors: list[str] = []
    for trial, artifact_id in plan_cleanup(trials, policy, direction, already_cleaned=cleaned):
        name = dict(zip(trial.artifact_ids, trial.filenames, strict=False)).get(artifact_id, "")
        try:
            found = store.size(artifact_id)
            size = found or 0
            if not dry_run and found is not None:
                try:
                    store.remove(artifact_id)
                except ArtifactNotFound:
                    size = 0
        except store_errors() as exc:
            message = f"trial {trial.number}: cannot delete artifact {artifact_id}: {exc}"
            log.warning("%s", message)
            errors.append(message)
            continue
        if not dry_run:
            record_cleaned(study, artifact_id, size)
        deleted.append(DeletedArtifact(trial.number, artifact_id, name, size))
    return CleanupReport(tuple(deleted), sum(d.bytes_freed for d in deleted), dry_run,
                         tuple(errors))
