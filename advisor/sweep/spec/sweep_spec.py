"""``sweep.yaml`` parsed into a validated, frozen ``SweepSpec`` (same error style as model.yaml)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from advisor._fields import MAX_NAME_CHARS, Fields, shown
from advisor._yaml import load_yaml_mapping
from advisor.sweep.spec.search_space import (
    MAX_COUNT,
    Distribution,
    ParamSpec,
    PrunerKind,
    PrunerSpec,
    SamplerKind,
    SamplerSpec,
    parse_pruner,
    parse_search,
)
from pricing import OfferKeyError, parse_offer_key
from probes import ENTRYPOINT_PATTERN

__all__ = [
    "BudgetSpec",
    "CleanupSpec",
    "CleanupState",
    "DEFAULT_MAX_CONSECUTIVE_FAILURES",
    "Direction",
    "Distribution",
    "ParamSpec",
    "PrunerKind",
    "PrunerSpec",
    "SamplerKind",
    "SamplerSpec",
    "SweepSpec",
    "load_sweep_spec",
    "parse_sweep_spec",
]

_STUDY_NAME = re.compile(r"^[\w.\-]+$")
DEFAULT_MAX_CONSECUTIVE_FAILURES = 5

# Bounds no real sweep reaches: past them a value is a typo or fuzz.
MAX_WORKERS = 1024  # workers, and trials at once per worker
MAX_TRIALS = 10**7
MAX_HOURS = 100_000.0
MAX_USD = 1e9
MAX_PRICE_USD_PER_HOUR = 10_000.0
MAX_HEARTBEAT_S = 86_400


class Direction(enum.StrEnum):
    """Whether the objective is minimized or maximized."""

    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


class CleanupState(enum.StrEnum):
    """Trial states whose artifacts the cleanup policy deletes."""

    PRUNED = "pruned"  # stopped early by the pruner
    FAILED = "failed"  # raised, or its worker died
    COMPLETED = "completed"  # finished, but not among the best K


@dataclass(frozen=True)
class BudgetSpec:
    """When the sweep stops: dollars, number of trials, wall hours (None = no limit).

    sweep.yaml must set at least one of ``max_usd``, ``max_trials`` and ``max_hours``.
    ``max_consecutive_failures`` (default 5) also stops a worker after that many of its
    trials failed one after another: an objective that always raises is not worth paying for.
    """

    max_usd: float | None = None
    max_trials: int | None = None
    max_hours: float | None = None
    max_consecutive_failures: int = DEFAULT_MAX_CONSECUTIVE_FAILURES

    @property
    def capped(self) -> bool:
        """True when a dollar, trial or hour cap is set (the sweep cannot run forever)."""
        return not (self.max_usd is None and self.max_trials is None and self.max_hours is None)


@dataclass(frozen=True)
class CleanupSpec:
    """Artifact cleanup policy: delete artifacts of trials in ``states``, never the best K."""

    keep_best: int = 3
    states: tuple[CleanupState, ...] = (CleanupState.PRUNED, CleanupState.FAILED)


@dataclass(frozen=True)
class SweepSpec:
    """One sweep: the study, its objective, search, pruning, budget, instance and cleanup.

    ``instance`` is ``local``, ``recommended`` (then ``model`` names a model.yaml) or an offer
    key ``cloud:instance_type:region:market``. ``price_usd_per_hour`` is only for ``local``.
    ``trials_per_instance`` trials run at once in one worker and share its price.
    """

    study: str
    entrypoint: str
    storage: str | None = None
    direction: Direction = Direction.MINIMIZE
    search_space: tuple[ParamSpec, ...] = ()
    sampler: SamplerSpec = field(default_factory=SamplerSpec)
    pruner: PrunerSpec = field(default_factory=PrunerSpec)
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    instance: str = "local"
    price_usd_per_hour: float = 0.0
    model: str | None = None
    trials_per_instance: int = 1
    workers: int = 1
    heartbeat_s: int = 10
    artifacts: str | None = None
    cleanup: CleanupSpec = field(default_factory=CleanupSpec)
    source_dir: str | None = None



def _parse_instance(fields: Fields) -> tuple[str, float, str | None]:
    instance = fields.string("instance", "local")
    price = fields.number("price_usd_per_hour", 0.0, positive=False, minimum=0,
                          maximum=MAX_PRICE_USD_PER_HOUR)
    model = fields.opt_string("model")
    if instance == "recommended":
        if model is None:
            raise fields.error("model", "is required with instance: recommended; give the "
                               "path of the model.yaml whose ranking picks the instance")
    elif model is not None:
        raise fields.error("model", "is only used with instance: recommended; remove it")
    if instance not in ("local", "recommended"):
        try:  # the shared offer-key rule: no market means on-demand
            instance = parse_offer_key(instance, field="instance").key
        except OfferKeyError as exc:
            raise fields.error("instance", "must be local, recommended or an offer key like "
                               f"'aws:g5.xlarge:us-east-1:spot' ({exc})") from None
    if fields.has("price_usd_per_hour") and instance != "local":
        raise fields.error("price_usd_per_hour", "is only for instance: local; offers take "
                           "their price from the catalog")
    return instance, price, model


def _parse_artifacts(fields: Fields) -> str | None:
    url = fields.opt_string("artifacts")
    if url is None:
        return None
    for scheme in ("s3://", "gs://"):
        if url.startswith(scheme) and not url[len(scheme):].split("/")[0]:
            raise fields.error("artifacts",
                               f"{scheme} URL needs a bucket, e.g. {scheme}my-bucket/sweeps")
    if "://" in url and not url.startswith(("s3://", "gs://", "file://")):
        raise fields.error("artifacts", f"must be a directory, s3:// or gs:// URL, got {shown(url)}")
    return url


def _parse_cleanup(fields: Fields) -> CleanupSpec:
    sub = fields.sub("cleanup")
    keep = sub.integer("keep_best", 3, positive=False, maximum=MAX_COUNT)
    if keep < 0:
        raise sub.error("keep_best", f"must be 0 or more, got {keep!r}")
    names = sub.string_list("states") if sub.has("states") else ("pruned", "failed")
    states = []
    for name in names:
        try:
            states.append(CleanupState(name.lower()))
        except ValueError:
            raise sub.error("states", f"unknown state {shown(name)}; use pruned, failed or "
                            "completed (completed beyond the best K)") from None
    sub.done()
    return CleanupSpec(keep_best=keep, states=tuple(states))


def _parse_budget(fields: Fields) -> BudgetSpec:
    sub = fields.sub("budget")
    budget = BudgetSpec(
        max_usd=sub.opt_number("max_usd", maximum=MAX_USD),
        max_trials=sub.opt_integer("max_trials", maximum=MAX_TRIALS),
        max_hours=sub.opt_number("max_hours", maximum=MAX_HOURS),
        max_consecutive_failures=sub.integer("max_consecutive_failures",
                                             DEFAULT_MAX_CONSECUTIVE_FAILURES, maximum=MAX_COUNT),
    )
    sub.done()
    if not budget.capped:
        raise fields.error("budget", "set at least one of max_usd, max_trials or max_hours, "
                           "e.g. 'budget: {max_trials: 50}'; without a cap the sweep never stops")
    return budget


def parse_sweep_spec(data: object, *, source: str = "") -> SweepSpec:
    """Validate a mapping (as read from sweep.yaml) into a SweepSpec; raises SpecError."""
    fields = Fields(data, source=source)
    study = fields.string("study", required=True, max_chars=MAX_NAME_CHARS)
    if not _STUDY_NAME.match(study):
        raise fields.error("study", f"use letters, digits, '.', '-' and '_' only, got "
                           f"{shown(study)}")
    entrypoint = fields.string("entrypoint", required=True)
    if not ENTRYPOINT_PATTERN.match(entrypoint):
        raise fields.error("entrypoint",
                           f"must look like 'package.module:function', got {shown(entrypoint)}")
    params, sampler = parse_search(fields)
    budget = _parse_budget(fields)
    instance, price, model = _parse_instance(fields)
    spec = SweepSpec(
        study=study, entrypoint=entrypoint, storage=fields.opt_string("storage"),
        direction=fields.choice("direction", Direction, Direction.MINIMIZE),
        search_space=params, sampler=sampler, pruner=parse_pruner(fields), budget=budget,
        instance=instance, price_usd_per_hour=price, model=model,
        trials_per_instance=fields.integer("trials_per_instance", 1, maximum=MAX_WORKERS),
        workers=fields.integer("workers", 1, maximum=MAX_WORKERS),
        heartbeat_s=fields.integer("heartbeat_s", 10, maximum=MAX_HEARTBEAT_S),
        artifacts=_parse_artifacts(fields), cleanup=_parse_cleanup(fields),
    )
    fields.done()
    return spec


def load_sweep_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep.yaml; entrypoint, model and artifact paths are relative to it."""
    path = Path(path)
    spec = parse_sweep_spec(load_yaml_mapping(path), source=str(path))
    return replace(spec, source_dir=str(path.resolve().parent))
