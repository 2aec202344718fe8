"""What a sweep stores in Optuna: every ``advisor:*`` attribute name, and its typed reads and writes.

On the study: ``StudySettings`` (written by ``open_study`` so that any process can charge,
report and clean the sweep), the stop reason, the launched worker instances and the bytes each
cleaned artifact freed. On each trial: its ``TrialCharge`` (written when it ends or is found
dead, by ``advisor.sweep.accounting.ledger.record_charge``), the launched worker that ran it and an
artifact upload error; ``trial_record`` reads them back. The stored names never change, so
studies written by earlier versions stay readable. Optuna is not imported here at run time:
``advisor.sweep.accounting.finished`` reads the same names with plain SQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError
from advisor.sweep.accounting.instances import WorkerInstance
from advisor.sweep.spec.outcomes import StopKind, StopReason, render_stop_reason
from advisor.sweep.spec.sweep_spec import CleanupSpec, CleanupState, Distribution, ParamSpec

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial

__all__ = [
    "ARTIFACTS_URL_ATTR",
    "ARTIFACT_ERROR_ATTR",
    "CAPTURED_ATTR",
    "CLEANED_PREFIX",
    "CLEANUP_ATTR",
    "COST_ATTR",
    "ERROR_ATTR",
    "FOUND_DEAD_ATTR",
    "HEARTBEAT_ATTR",
    "INSTANCE_ATTR",
    "INSTANCE_ATTR_PREFIX",
    "MAX_USD_ATTR",
    "PRICE_ATTR",
    "SEARCH_SPACE_ATTR",
    "SHARE_ATTR",
    "STARTED_ATTR",
    "STOP_ATTR",
    "STOP_REASON_ATTR",
    "WALL_ATTR",
    "WORKER_ATTR",
    "StudySettings",
    "TrialCharge",
    "TrialRecord",
    "cleaned_bytes",
    "instances_of",
    "rdb_of",
    "read_settings",
    "read_stop",
    "record_artifact_error",
    "record_cleaned",
    "record_instance",
    "tag_worker",
    "trial_record",
    "write_settings",
    "write_stop",
]

# study attributes
SEARCH_SPACE_ATTR = "advisor:search_space"
CLEANUP_ATTR = "advisor:cleanup"
HEARTBEAT_ATTR = "advisor:heartbeat_s"
SHARE_ATTR = "advisor:share"  # also on each trial
PRICE_ATTR = "advisor:price_usd_per_hour"  # also on each trial (the price it was charged at)
INSTANCE_ATTR = "advisor:instance"
ARTIFACTS_URL_ATTR = "advisor:artifacts_url"
MAX_USD_ATTR = "advisor:max_usd"
CAPTURED_ATTR = "advisor:prices_captured_at"
STOP_REASON_ATTR = "advisor:stop_reason"  # the sentence, as every version stored it
STOP_ATTR = "advisor:stop"  # the kind and figures (StopReason.to_dict)
INSTANCE_ATTR_PREFIX = "advisor:worker_instance:"  # + worker id: a WorkerInstance, as JSON
CLEANED_PREFIX = "advisor:cleaned:"  # + artifact id: the bytes its deletion freed
# trial attributes
COST_ATTR = "advisor:cost_usd"
WALL_ATTR = "advisor:wall_s"
STARTED_ATTR = "advisor:started_at_s"
ERROR_ATTR = "advisor:error"  # why a failed trial failed, one line
WORKER_ATTR = "advisor:worker"  # the launched cloud worker that ran the trial
FOUND_DEAD_ATTR = "advisor:found_dead_at_s"  # when a process failed the trial by heartbeat
ARTIFACT_ERROR_ATTR = "advisor:artifact_error"


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class StudySettings:
    """What a sweep records on its study: search space, cleanup policy, heartbeat interval (s),
    trials sharing one instance, price (USD per hour; None: not recorded, trials are free),
    instance label, artifact location, dollar cap (USD) and the date prices were captured."""

    search_space: tuple[ParamSpec, ...] = ()
    cleanup: CleanupSpec = field(default_factory=CleanupSpec)
    heartbeat_s: int | None = None
    share: int = 1
    price_usd_per_hour: float | None = None
    instance: str | None = None
    artifacts_url: str | None = None
    max_usd: float | None = None
    prices_captured_at: date | None = None

    def attrs(self) -> dict[str, Any]:
        """The stored form: JSON values by attribute name (fields that are None left out)."""
        out: dict[str, Any] = {
            SEARCH_SPACE_ATTR: [_param_json(p) for p in self.search_space],
            CLEANUP_ATTR: {"keep_best": self.cleanup.keep_best,
                       "states": [str(s) for s in self.cleanup.states]},
            HEARTBEAT_ATTR: self.heartbeat_s, SHARE_ATTR: self.share,
            PRICE_ATTR: self.price_usd_per_hour, INSTANCE_ATTR: self.instance,
            ARTIFACTS_URL_ATTR: self.artifacts_url, MAX_USD_ATTR: self.max_usd,
            CAPTURED_ATTR: None if self.prices_captured_at is None
            else self.prices_captured_at.isoformat(),
        }
        return {k: v for k, v in out.items() if v is not None}


def _param_json(p: ParamSpec) -> dict[str, Any]:
    return {"name": p.name, "type": str(p.distribution), "low": p.low, "high": p.high,
            "log": p.log, "step": p.step, "choices": list(p.choices)}


def _params(raw: object) -> tuple[ParamSpec, ...]:
    if not isinstance(raw, list):
        return ()
    return tuple(ParamSpec(d["name"], Distribution(d["type"]), low=d["low"], high=d["high"],
                           log=d["log"], step=d["step"], choices=tuple(d["choices"]))
                 for d in raw)


def _cleanup(raw: object) -> CleanupSpec:
    if not isinstance(raw, dict):
        return CleanupSpec()
    return CleanupSpec(keep_best=int(raw.get("keep_best", 3)),
                       states=tuple(CleanupState(s) for s in raw.get("states", ())))


def _date(raw: object) -> date | None:
    try:
        return date.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def read_settings(attrs: Mapping[str, Any]) -> StudySettings:
    """The settings among a study's user attributes (defaults where one is missing or bad)."""
    heartbeat, share = attrs.get(HEARTBEAT_ATTR), attrs.get(SHARE_ATTR)
    return StudySettings(
        search_space=_params(attrs.get(SEARCH_SPACE_ATTR)), cleanup=_cleanup(attrs.get(CLEANUP_ATTR)),
        heartbeat_s=heartbeat if isinstance(heartbeat, int) and heartbeat >= 1 else None,
        share=share if isinstance(share, int) and share >= 1 else 1,
        price_usd_per_hour=_float(attrs.get(PRICE_ATTR)), instance=_str(attrs.get(INSTANCE_ATTR)),
        artifacts_url=_str(attrs.get(ARTIFACTS_URL_ATTR)), max_usd=_float(attrs.get(MAX_USD_ATTR)),
        prices_captured_at=_date(attrs.get(CAPTURED_ATTR)))


def write_settings(study: optuna.Study, settings: StudySettings) -> None:
    """Record the settings on the study, writing only the attributes that changed."""
    have = study.user_attrs
    for key, value in settings.attrs().items():
        if have.get(key) != value:
            study.set_user_attr(key, value)


def write_stop(study: optuna.Study, reason: StopReason) -> None:
    """Record why the sweep stopped: its kind and figures, and the sentence older readers show."""
    study.set_user_attr(STOP_ATTR, reason.to_dict())
    study.set_user_attr(STOP_REASON_ATTR, render_stop_reason(reason))


def read_stop(attrs: Mapping[str, Any]) -> StopReason | None:
    """Why the sweep last stopped (a study of an older version: its sentence, as recorded;
    a kind this version does not know: the sentence too)."""
    raw = attrs.get(STOP_ATTR)
    if isinstance(raw, dict):
        with contextlib.suppress(AdvisorError):  # a newer version's kind: its sentence says it
            return StopReason.from_dict(raw)
    text = attrs.get(STOP_REASON_ATTR)
    return StopReason(StopKind.RECORDED, text=text) if isinstance(text, str) and text else None


def instances_of(attrs: Mapping[str, Any]) -> list[WorkerInstance]:
    """The worker instances recorded among a study's user attributes, by worker id."""
    return [WorkerInstance.from_dict(value) for key, value in sorted(attrs.items())
            if key.startswith(INSTANCE_ATTR_PREFIX) and isinstance(value, dict)]


def record_instance(study: optuna.Study, instance: WorkerInstance) -> None:
    """Store (or update) the record of a launched worker instance on the study."""
    study.set_user_attr(INSTANCE_ATTR_PREFIX + instance.worker_id, instance.to_dict())


def cleaned_bytes(attrs: Mapping[str, Any]) -> dict[str, int]:
    """Bytes freed by each artifact cleanup deleted, by artifact id."""
    return {key[len(CLEANED_PREFIX):]: int(value) for key, value in attrs.items()
            if key.startswith(CLEANED_PREFIX) and isinstance(value, int | float)}


def record_cleaned(study: optuna.Study, artifact_id: str, bytes_freed: int) -> None:
    """Record that cleanup deleted an artifact, freeing ``bytes_freed``."""
    study.set_user_attr(CLEANED_PREFIX + artifact_id, bytes_freed)


@dataclass(frozen=True)
class TrialCharge:
    """A trial's charge: started (Unix s), price (USD/h), trials sharing the instance, wall
    time (s) and cost (USD); the error of a failed trial and when it was found dead (Unix s)."""

    started_at_s: float
    price_usd_per_hour: float
    share: int
    wall_s: float
    cost_usd: float
    error: str | None = None
    found_dead_at_s: float | None = None

    def attrs(self) -> dict[str, Any]:
        """The stored form, by attribute name (``error`` and ``found_dead_at_s`` when set)."""
        out: dict[str, Any] = {STARTED_ATTR: self.started_at_s, PRICE_ATTR: self.price_usd_per_hour,
                               SHARE_ATTR: self.share, WALL_ATTR: self.wall_s,
                               COST_ATTR: self.cost_usd}
        if self.found_dead_at_s is not None:
            out[FOUND_DEAD_ATTR] = self.found_dead_at_s
        if self.error is not None:
            out[ERROR_ATTR] = self.error
        return out


@dataclass(frozen=True)
class TrialRecord:
    """What a sweep recorded on one trial; None where nothing was (a trial still running has
    no cost yet). Units as in ``TrialCharge``; ``worker`` is the launched worker's id."""

    cost_usd: float | None = None
    wall_s: float | None = None
    price_usd_per_hour: float | None = None
    started_at_s: float | None = None
    error: str | None = None
    worker: str | None = None
    found_dead_at_s: float | None = None
    artifact_error: str | None = None


def trial_record(trial: FrozenTrial) -> TrialRecord:
    """The sweep's attributes of a trial, typed."""
    attrs = trial.user_attrs
    error = attrs.get(ERROR_ATTR)
    return TrialRecord(
        cost_usd=_float(attrs.get(COST_ATTR)), wall_s=_float(attrs.get(WALL_ATTR)),
        price_usd_per_hour=_float(attrs.get(PRICE_ATTR)),
        started_at_s=_float(attrs.get(STARTED_ATTR)), error=None if error is None else str(error),
        worker=_str(attrs.get(WORKER_ATTR)), found_dead_at_s=_float(attrs.get(FOUND_DEAD_ATTR)),
        artifact_error=_str(attrs.get(ARTIFACT_ERROR_ATTR)))


def tag_worker(trial: optuna.Trial, worker_id: str) -> None:
    """Record the launched cloud worker that runs the trial."""
    trial.set_user_attr(WORKER_ATTR, worker_id)


def record_artifact_error(trial: optuna.Trial, message: str) -> None:
    """Record why an artifact upload of the trial failed (the trial goes on)."""
    trial.set_user_attr(ARTIFACT_ERROR_ATTR, message)


def rdb_of(study: optuna.Study) -> Any:
    """The RDBStorage behind the study (whose tables the sweep's aggregate queries read), or
    None for other storages."""
    import optuna

    storage: Any = study._storage  # noqa: SLF001 - Optuna wraps RDBStorage in a cache
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, optuna.storages.RDBStorage) else None
