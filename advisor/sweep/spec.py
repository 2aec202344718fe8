"""``sweep.yaml`` parsed into a validated, frozen ``SweepSpec`` (same error style as model.yaml)."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor._fields import MAX_NAME_CHARS, Fields, load_yaml_mapping, shown
from advisor.errors import SpecError
from probes.errors import ProbeError
from probes.offer_keys import parse_offer_key

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

_ENTRYPOINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
_STUDY_NAME = re.compile(r"^[\w.\-]+$")
DEFAULT_MAX_CONSECUTIVE_FAILURES = 5

# Bounds no real sweep reaches: past them a value is a typo or fuzz.
MAX_CHOICES = 10_000  # categorical values of one parameter
MAX_GRID_POINTS = 1_000_000  # points a grid sampler would walk
MAX_SEED = 2**32 - 1  # numpy's seed range
MAX_WORKERS = 1024  # workers, and trials at once per worker
MAX_TRIALS = 10**7
MAX_HOURS = 100_000.0
MAX_USD = 1e9
MAX_PRICE_USD_PER_HOUR = 10_000.0
MAX_HEARTBEAT_S = 86_400
MAX_COUNT = 10**9  # counts of pruner and sampler options, keep_best, failures in a row


class Direction(enum.StrEnum):
    """Whether the objective is minimized or maximized."""

    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


class SamplerKind(enum.StrEnum):
    """Optuna sampler used to pick the next parameters."""

    TPE = "tpe"
    RANDOM = "random"
    CMAES = "cmaes"
    GRID = "grid"


class PrunerKind(enum.StrEnum):
    """Optuna pruner that stops unpromising trials early."""

    NONE = "none"
    MEDIAN = "median"
    PERCENTILE = "percentile"
    SUCCESSIVE_HALVING = "successive_halving"
    HYPERBAND = "hyperband"
    WILCOXON = "wilcoxon"


class Distribution(enum.StrEnum):
    """Type of one search-space parameter."""

    FLOAT = "float"
    INT = "int"
    CATEGORICAL = "categorical"


class CleanupState(enum.StrEnum):
    """Trial states whose artifacts the cleanup policy deletes (``completed`` = beyond best K)."""

    PRUNED = "pruned"
    FAILED = "failed"
    COMPLETED = "completed"


@dataclass(frozen=True)
class ParamSpec:
    """One search-space parameter: a float/int range (optionally log) or categorical choices."""

    name: str
    distribution: Distribution
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def grid_values(self) -> list[Any]:
        """The values a grid sampler walks: the choices, or every int (or stepped) value."""
        if self.distribution is Distribution.CATEGORICAL:
            return list(self.choices)
        assert self.low is not None and self.high is not None
        step = self.step or 1
        count = int(round((self.high - self.low) / step)) + 1
        values = [self.low + i * step for i in range(count)]
        return [int(v) for v in values] if self.distribution is Distribution.INT else values


# Options each pruner accepts, with the kind of value: "int", "number", "bool".
_PRUNER_OPTIONS: dict[PrunerKind, dict[str, str]] = {
    PrunerKind.NONE: {},
    PrunerKind.MEDIAN: {"n_startup_trials": "int0", "n_warmup_steps": "int0",
                        "interval_steps": "int", "n_min_trials": "int"},
    PrunerKind.PERCENTILE: {"percentile": "percent", "n_startup_trials": "int0",
                            "n_warmup_steps": "int0", "interval_steps": "int",
                            "n_min_trials": "int"},
    PrunerKind.SUCCESSIVE_HALVING: {"min_resource": "int", "reduction_factor": "int",
                                    "min_early_stopping_rate": "int0",
                                    "bootstrap_count": "int0"},
    PrunerKind.HYPERBAND: {"min_resource": "int", "max_resource": "int",
                           "reduction_factor": "int", "bootstrap_count": "int0"},
    PrunerKind.WILCOXON: {"p_threshold": "probability", "n_startup_steps": "int0"},
}

_SAMPLER_OPTIONS: dict[SamplerKind, dict[str, str]] = {
    SamplerKind.TPE: {"n_startup_trials": "int0", "multivariate": "bool"},
    SamplerKind.RANDOM: {},
    SamplerKind.CMAES: {"n_startup_trials": "int0"},
    SamplerKind.GRID: {},
}


@dataclass(frozen=True)
class PrunerSpec:
    """Which pruner, with its keyword options (already checked against the pruner's names)."""

    kind: PrunerKind = PrunerKind.MEDIAN
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SamplerSpec:
    """Which sampler, its seed and keyword options."""

    kind: SamplerKind = SamplerKind.TPE
    seed: int | None = None
    options: dict[str, Any] = field(default_factory=dict)


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


def _parse_param(fields: Fields, name: str) -> ParamSpec:
    param = fields.sub(name)
    kind = param.choice("type", Distribution)
    if kind is Distribution.CATEGORICAL:
        choices = param.raw("choices")
        if not isinstance(choices, list) or not choices:
            raise param.error("choices", f"must be a non-empty list of values, got "
                              f"{shown(choices)}")
        if len(choices) > MAX_CHOICES:
            raise param.error("choices", f"has {len(choices):,} values, at most {MAX_CHOICES:,} "
                              "allowed; use an int or float range instead")
        if not all(c is None or isinstance(c, bool | int | float | str) for c in choices):
            raise param.error("choices", "values must be numbers, strings, booleans or null")
        for choice in choices:
            if isinstance(choice, str):
                param.checked_text("choices", choice)
            elif isinstance(choice, int | float) and not -1e18 <= choice <= 1e18:
                raise param.error("choices", f"values must be at most 1e18 in size, got "
                                  f"{shown(choice)}")
        param.done()
        return ParamSpec(name, kind, choices=tuple(choices))
    integer = kind is Distribution.INT
    low = param.number("low", required=True, positive=False, integer=integer)
    high = param.number("high", required=True, positive=False, integer=integer)
    log = param.boolean("log", False)
    step = param.opt_number("step", integer=integer)
    param.done()
    if high <= low:
        raise param.error("high", f"must be greater than low ({low!r}), got {high!r}")
    if log and low <= 0:
        raise param.error("low", f"must be greater than 0 when log: true, got {low!r}")
    if log and step is not None:
        raise param.error("step", "cannot be combined with log: true; drop one of them")
    return ParamSpec(name, kind, low=low, high=high, log=log, step=step)


def _parse_options(fields: Fields, allowed: dict[str, str], what: str) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key, kind in allowed.items():
        if not fields.has(key):
            continue
        if kind == "bool":
            options[key] = fields.boolean(key, False)
        elif kind == "str":
            options[key] = fields.string(key)
        elif kind in ("int", "int0"):
            options[key] = fields.integer(key, positive=kind == "int", maximum=MAX_COUNT)
            if options[key] < 0:
                raise fields.error(key, f"must be 0 or more, got {options[key]!r}")
        else:
            value = fields.number(key, positive=False)
            top = 100.0 if kind == "percent" else 1.0
            if not 0 < value < top:
                raise fields.error(key, f"must be between 0 and {top:g} (exclusive), got {value!r}")
            options[key] = value
    try:
        fields.done()
    except SpecError as exc:
        names = ", ".join(sorted(allowed)) or "none"
        raise SpecError(exc.field, f"{exc.problem} (options of the {what}: {names})",
                        source=fields.source) from None
    return options


def _kind_and_fields(fields: Fields, key: str, default: str) -> Fields:
    value = fields.raw(key, default)
    if isinstance(value, str):  # shorthand: "pruner: median"
        value = {"type": value}
    return Fields(value, fields.field(key), source=fields.source)


def _parse_pruner(fields: Fields) -> PrunerSpec:
    sub = _kind_and_fields(fields, "pruner", "median")
    kind = sub.choice("type", PrunerKind)
    return PrunerSpec(kind, _parse_options(sub, _PRUNER_OPTIONS[kind], f"{kind} pruner"))


def _parse_sampler(fields: Fields) -> SamplerSpec:
    sub = _kind_and_fields(fields, "sampler", "tpe")
    kind = sub.choice("type", SamplerKind)
    seed = sub.integer("seed", positive=False, maximum=MAX_SEED) if sub.has("seed") else None
    if seed is not None and seed < 0:
        raise sub.error("seed", f"must be 0 or more, got {seed}")
    return SamplerSpec(kind, seed, _parse_options(sub, _SAMPLER_OPTIONS[kind], f"{kind} sampler"))


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
        except ProbeError as exc:
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
    if not _ENTRYPOINT.match(entrypoint):
        raise fields.error("entrypoint",
                           f"must look like 'package.module:function', got {shown(entrypoint)}")
    space = fields.sub("search_space")
    for name in space.data:
        if not isinstance(name, str):
            raise space.error(str(name), f"parameter names must be strings, got {shown(name)}")
        space.checked_text(name, name)
    params = tuple(_parse_param(space, name) for name in space.data)
    space.done()
    sampler = _parse_sampler(fields)
    if sampler.kind is SamplerKind.GRID and not params:
        raise fields.error("sampler", "grid needs a search_space to walk; add one or use tpe")
    if sampler.kind is SamplerKind.GRID:
        points = 1.0
        for p in params:
            if p.distribution is Distribution.FLOAT and p.step is None:
                raise space.error(p.name, "a float range needs 'step' for the grid sampler")
            points *= len(p.choices) if p.choices else (p.high - p.low) / (p.step or 1) + 1  # type: ignore[operator]
            if points > MAX_GRID_POINTS:
                raise space.error(p.name, f"makes the grid more than {MAX_GRID_POINTS:,} points; "
                                  "use a larger step, fewer values or the tpe sampler")
    budget = _parse_budget(fields)
    instance, price, model = _parse_instance(fields)
    spec = SweepSpec(
        study=study, entrypoint=entrypoint, storage=fields.opt_string("storage"),
        direction=fields.choice("direction", Direction, Direction.MINIMIZE),
        search_space=params, sampler=sampler, pruner=_parse_pruner(fields), budget=budget,
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
