"""The search section of ``sweep.yaml``: its parameters, sampler and pruner, validated.

Private: ``advisor.sweep.spec.sweep_spec`` reads the rest of the file and re-exports the public names.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from advisor._fields import Fields, shown
from advisor.errors import SpecError

# Bounds no real sweep reaches: past them a value is a typo or fuzz.
MAX_CHOICES = 10_000  # categorical values of one parameter
MAX_GRID_POINTS = 1_000_000  # points a grid sampler would walk
MAX_SEED = 2**32 - 1  # numpy's seed range
MAX_COUNT = 10**9  # counts of pruner and sampler options, keep_best, failures in a row


class SamplerKind(enum.StrEnum):
    """Optuna sampler used to pick the next parameters."""

    TPE = "tpe"  # tree-structured Parzen estimator, Optuna's default
    RANDOM = "random"  # independent uniform draws
    CMAES = "cmaes"  # CMA-ES evolution strategy, for continuous ranges
    GRID = "grid"  # every combination of the parameters' values, once


class PrunerKind(enum.StrEnum):
    """Optuna pruner that stops unpromising trials early."""

    NONE = "none"  # every trial runs to the end
    MEDIAN = "median"  # below the median of earlier trials at the same step
    PERCENTILE = "percentile"  # below a percentile of earlier trials at the same step
    SUCCESSIVE_HALVING = "successive_halving"  # asynchronous successive halving
    HYPERBAND = "hyperband"  # successive halving over several budgets
    WILCOXON = "wilcoxon"  # a signed-rank test against the best trial


class Distribution(enum.StrEnum):
    """Type of one search-space parameter."""

    FLOAT = "float"  # a real range, optionally log-scaled or stepped
    INT = "int"  # a whole-number range, optionally log-scaled or stepped
    CATEGORICAL = "categorical"  # one of the listed choices


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


# Options each pruner and sampler accepts, with the kind of value: "int" (1 or more), "int0"
# (0 or more), "bool", "percent" (between 0 and 100) or "probability" (between 0 and 1).
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


def _parse_choices(param: Fields) -> tuple[Any, ...]:
    choices = param.raw("choices")
    if not isinstance(choices, list) or not choices:
        raise param.error("choices", f"must be a non-empty list of values, got {shown(choices)}")
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
    return tuple(choices)


def _parse_param(fields: Fields, name: str) -> ParamSpec:
    param = fields.sub(name)
    kind = param.choice("type", Distribution)
    if kind is Distribution.CATEGORICAL:
        choices = _parse_choices(param)
        param.done()
        return ParamSpec(name, kind, choices=choices)
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


def parse_pruner(fields: Fields) -> PrunerSpec:
    """The ``pruner`` of a sweep.yaml mapping (a name, or a mapping with ``type`` and options)."""
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


def _check_grid(fields: Fields, space: Fields, params: tuple[ParamSpec, ...]) -> None:
    if not params:
        raise fields.error("sampler", "grid needs a search_space to walk; add one or use tpe")
    points = 1.0
    for p in params:
        if p.distribution is Distribution.FLOAT and p.step is None:
            raise space.error(p.name, "a float range needs 'step' for the grid sampler")
        points *= len(p.choices) if p.choices else (p.high - p.low) / (p.step or 1) + 1  # type: ignore[operator]
        if points > MAX_GRID_POINTS:
            raise space.error(p.name, f"makes the grid more than {MAX_GRID_POINTS:,} points; "
                              "use a larger step, fewer values or the tpe sampler")


def parse_search(fields: Fields) -> tuple[tuple[ParamSpec, ...], SamplerSpec]:
    """The ``search_space`` and ``sampler`` of a sweep.yaml mapping; raises SpecError.

    A grid sampler is checked against the space (a float range needs a step; the grid is
    bounded). The pruner is read separately by ``parse_pruner``.
    """
    space = fields.sub("search_space")
    for name in space.data:
        if not isinstance(name, str):
            raise space.error(str(name), f"parameter names must be strings, got {shown(name)}")
        space.checked_text(name, name)
    params = tuple(_parse_param(space, name) for name in space.data)
    space.done()
    sampler = _parse_sampler(fields)
    if sampler.kind is SamplerKind.GRID:
        _check_grid(fields, space, params)
    return params, sampler
