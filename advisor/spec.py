"""``model.yaml`` parsed into a validated, frozen ``WorkloadSpec``."""

from __future__ import annotations

import enum
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor._fields import MAX_NAME_CHARS, Fields, shown
from advisor._yaml import load_yaml_mapping
from pricing import Cloud
from probes import BUILTIN_MODELS, ENTRYPOINT_PATTERN, ModelOptionError, Precision, check_builtin_options

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_CHECKPOINT_MINUTES",
    "Constraints",
    "ModelRef",
    "PortabilityPolicy",
    "Precision",
    "ProfileOverride",
    "SpotPolicy",
    "WorkloadSpec",
    "load_workload_spec",
    "parse_workload_spec",
]

# What hardware could ever mean: values past these are typos (1e29) or fuzz, and bounding them
# here keeps every product the ranking computes finite.
MAX_BATCH_SIZE = 2**24  # 16,777,216 samples per optimizer step
MAX_ACCELERATORS = 1024  # the largest catalog offer has 256
MAX_SAMPLES = 10**15  # samples (or samples x epochs) in one training run
MAX_EPOCHS = 1e6
MAX_BUDGET_USD = 1e9
MAX_DEADLINE_HOURS = 100_000.0  # about 11 years
MAX_PROBE_USD = 1e6
MAX_PARAMS = 10**14
MAX_MEMORY_GIB = 1e6
DEFAULT_CHECKPOINT_MINUTES = 30.0  # a checkpoint every half hour: spot's lost work per interruption
MAX_CHECKPOINT_MINUTES = 10_080.0  # one week
DEFAULT_PROFILE_TIMEOUT_S = 300.0  # building the model and tracing a few steps on fake tensors
MAX_PROFILE_TIMEOUT_S = 86_400.0


class SpotPolicy(enum.StrEnum):
    """Whether spot (interruptible) offers may be used."""

    NEVER = "never"  # on-demand offers only
    ALLOWED = "allowed"  # spot and on-demand offers ranked together
    ONLY = "only"  # spot offers only


class PortabilityPolicy(enum.StrEnum):
    """What to do with a TPU, Trainium or Gaudi offer whose step has operators the backend
    runs on the host CPU or cannot run (``advisor.ranking.portability``)."""

    STRICT = "strict"  # reject such offers
    WARN = "warn"  # rank them and say which operators fall back or fail


@dataclass(frozen=True)
class ModelRef:
    """Which model to train: a built-in reference model or a user entrypoint.

    ``entrypoint`` is ``"package.module:function"``; the function takes the options as keyword
    arguments and returns ``(model, make_batch, loss_fn)``.
    """

    builtin: str | None
    entrypoint: str | None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProfileOverride:
    """Profile figures the user states instead of measuring (all optional)."""

    flops_per_sample: float | None = None
    params: int | None = None
    memory_gib: float | None = None
    timeout_s: float = DEFAULT_PROFILE_TIMEOUT_S  # how long profiling the model may take


@dataclass(frozen=True)
class Constraints:
    """What offers may be used and what the run may cost and take."""

    budget_usd: float | None = None
    deadline_hours: float | None = None
    clouds: tuple[Cloud, ...] = ()
    regions: tuple[str, ...] = ()
    accelerators_include: tuple[str, ...] = ()
    accelerators_exclude: tuple[str, ...] = ()
    max_accelerators: int | None = None
    spot: SpotPolicy = SpotPolicy.ALLOWED
    portability: PortabilityPolicy = PortabilityPolicy.WARN


@dataclass(frozen=True)
class WorkloadSpec:
    """One training job: the model, its batch, precision, data size and constraints.

    ``batch_size`` is the global batch per optimizer step; on N accelerators each holds
    ``ceil(batch_size / N)`` samples. ``checkpoint_minutes`` is how often the training loop
    saves a checkpoint (minutes of work between saves); on spot, an interruption loses half of
    it on average (``advisor.ranking.spot_risk``).
    """

    name: str
    model: ModelRef
    batch_size: int
    precision: Precision
    total_samples: int
    constraints: Constraints = field(default_factory=Constraints)
    probes_max_usd: float | None = None
    profile: ProfileOverride = field(default_factory=ProfileOverride)
    source_dir: str | None = None
    checkpoint_minutes: float = DEFAULT_CHECKPOINT_MINUTES

    def fingerprint(self) -> str:
        """A short hash of the fields that change speed or memory (not name, data size, constraints)."""
        relevant = {
            "model": asdict(self.model),
            "batch_size": self.batch_size,
            "precision": str(self.precision),
            # The time limit changes neither speed nor memory (and keeps stored probes matched).
            "profile": {k: v for k, v in asdict(self.profile).items() if k != "timeout_s"},
        }
        blob = json.dumps(relevant, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _parse_model(fields: Fields) -> ModelRef:
    model = fields.sub("model", required=True)
    builtin = model.opt_string("builtin")
    entrypoint = model.opt_string("entrypoint")
    options = model.raw("options", {})
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise model.error("options", f"must be a mapping of option names to values, got "
                          f"{shown(options)}")
    model.done()
    if (builtin is None) == (entrypoint is None):
        raise fields.error("model", "give exactly one of 'builtin: NAME' or "
                           "'entrypoint: \"package.module:function\"'")
    if builtin is not None and builtin not in BUILTIN_MODELS:
        raise model.error("builtin", f"unknown model {shown(builtin)}; built-ins are "
                          f"{', '.join(BUILTIN_MODELS)} (or use 'entrypoint:')")
    if entrypoint is not None and not ENTRYPOINT_PATTERN.match(entrypoint):
        raise model.error("entrypoint", f"must look like 'package.module:function', got "
                          f"{shown(entrypoint)}")
    if builtin is not None:
        try:  # the built-in's own bounds (no torch imported)
            check_builtin_options(builtin, options)
        except ModelOptionError as exc:
            if not exc.option:  # an unknown option: the problem names it
                raise model.error("options", exc.problem) from None
            raise Fields(options, model.field("options"), source=fields.source).error(
                exc.option, exc.problem) from None
    return ModelRef(builtin=builtin, entrypoint=entrypoint, options=dict(options))


def _parse_total_samples(fields: Fields) -> int:
    data = fields.sub("data", required=True)
    if data.has("total_samples"):
        if data.has("samples") or data.has("epochs"):
            raise fields.error("data", "give either total_samples, or samples and epochs, not both")
        total = data.integer("total_samples", maximum=MAX_SAMPLES)
    else:
        if not data.has("samples"):
            raise data.error("samples", "is required (or give total_samples)")
        samples = data.integer("samples", maximum=MAX_SAMPLES)
        epochs = data.number("epochs", 1, maximum=MAX_EPOCHS)
        total = round(samples * epochs)  # fractional epochs: a part of the data set
        if total < 1:
            raise data.error("epochs", f"samples x epochs must be at least 1 sample, got "
                             f"{samples} x {epochs!r}; raise epochs")
        if total > MAX_SAMPLES:
            raise data.error("epochs", f"samples x epochs must be at most {MAX_SAMPLES:.0e} "
                             f"samples, got {samples} x {epochs!r}; lower one of them")
    data.done()
    return total


def _parse_constraints(fields: Fields) -> Constraints:
    cons = fields.sub("constraints")
    for key, what in (("clouds", "cloud"), ("regions", "region")):
        if cons.data.get(key) == []:
            raise cons.error(key, f"is an empty list, which no offer matches; give at least one "
                             f"{what} or leave it out for all")
    clouds = []
    for name in cons.string_list("clouds"):
        try:
            clouds.append(Cloud(name.lower()))
        except ValueError:
            raise cons.error("clouds", f"unknown cloud {shown(name)}; use aws, gcp or "
                             "azure") from None
    accel = cons.raw("accelerators", {})
    if isinstance(accel, list | str):  # shorthand: a list (or one name) means include
        accel = {"include": accel}
    acc = Fields(accel, cons.field("accelerators"), source=fields.source)
    include, exclude = acc.string_list("include"), acc.string_list("exclude")
    acc.done()
    excluded = {name.lower() for name in exclude}
    both = next((name for name in include if name.lower() in excluded), None)
    if both is not None:
        raise cons.error("accelerators", f"{shown(both)} is in both include and exclude, so no "
                         "offer of it could rank; remove it from one of them")
    result = Constraints(
        budget_usd=cons.opt_number("budget_usd", maximum=MAX_BUDGET_USD),
        deadline_hours=cons.opt_number("deadline_hours", maximum=MAX_DEADLINE_HOURS),
        clouds=tuple(clouds),
        regions=cons.string_list("regions"),
        accelerators_include=include,
        accelerators_exclude=exclude,
        max_accelerators=cons.opt_integer("max_accelerators", maximum=MAX_ACCELERATORS),
        spot=cons.choice("spot", SpotPolicy, SpotPolicy.ALLOWED),
        portability=cons.choice("portability", PortabilityPolicy, PortabilityPolicy.WARN),
    )
    cons.done()
    return result


def parse_workload_spec(data: object, *, source: str = "") -> WorkloadSpec:
    """Validate a mapping (as read from model.yaml) into a WorkloadSpec; raises SpecError."""
    fields = Fields(data, source=source)
    name = fields.string("name", required=True, max_chars=MAX_NAME_CHARS)
    model = _parse_model(fields)
    batch_size = fields.integer("batch_size", required=True, maximum=MAX_BATCH_SIZE)
    precision = fields.choice("precision", Precision, Precision.FP32)
    total = _parse_total_samples(fields)
    constraints = _parse_constraints(fields)
    checkpoint_minutes = float(fields.number("checkpoint_minutes", DEFAULT_CHECKPOINT_MINUTES,
                                             maximum=MAX_CHECKPOINT_MINUTES))
    probes = fields.sub("probes")
    probes_max_usd = probes.opt_number("max_usd", maximum=MAX_PROBE_USD)
    probes.done()
    prof = fields.sub("profile")
    profile = ProfileOverride(
        flops_per_sample=prof.opt_number("flops_per_sample"),
        params=prof.opt_integer("params", maximum=MAX_PARAMS),
        memory_gib=prof.opt_number("memory_gib", maximum=MAX_MEMORY_GIB),
        timeout_s=prof.number("timeout_s", DEFAULT_PROFILE_TIMEOUT_S,
                              maximum=MAX_PROFILE_TIMEOUT_S),
    )
    prof.done()
    fields.done()
    return WorkloadSpec(
        name=name, model=model, batch_size=batch_size, precision=precision,
        total_samples=total, constraints=constraints, probes_max_usd=probes_max_usd,
        profile=profile, checkpoint_minutes=checkpoint_minutes,
    )


def load_workload_spec(path: str | Path) -> WorkloadSpec:
    """Read and validate a model.yaml file; entrypoints import relative to its folder."""
    path = Path(path)
    spec = parse_workload_spec(load_yaml_mapping(path), source=str(path))
    return replace(spec, source_dir=str(path.resolve().parent))
