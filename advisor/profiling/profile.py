"""Workload profile: FLOPs per sample, parameters and memory at the batch size.

Measured locally with torch (FLOP counter on meta-backed fake tensors, memory from a traced
training step, ``advisor.profiling.memory_trace``); no GPU needed. Cached by the spec's fingerprint so
``recommend`` only pays for torch the first time: this module imports torch only inside the
measuring functions, and a cached profile is read without it. The built-in examples' profiles
are shipped (``_spec_files``): they are read, without torch, where the user's cache has none.
"""

from __future__ import annotations

import enum
import json
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError
from advisor.profiling._spec_files import (
    cached_or_shipped,
    profile_cache_file,
    recipe_for,
    shipped_profile_file,
)
from advisor.profiling.fake_step import STEP_ERRORS, fake_build, fake_grouped_mm
from advisor.profiling.op_names import store_op_names
from advisor.profiling.op_profile import cached_op_mix, store_op_mix
from advisor.spec import Precision, WorkloadSpec
from pricing.files import write_cache
from probes import ProbeError, WorkloadRecipe, build_workload, first_line

if TYPE_CHECKING:  # the measuring modules are imported when a profile is measured, with torch
    from advisor.profiling._torch_counting import StepCount
    from advisor.profiling.memory_trace import TracedMemory
    from advisor.profiling.step_trace import StepTrace

__all__ = ["MemoryBasis", "WorkloadProfile", "measure_workload", "needs_measuring",
           "profile_json", "profile_workload"]

_CACHE_VERSION = 5  # 5: trace_problem; 4: FLOPs and activations at batches 2 and 4
_FP32_BYTES = 4
_HALF_BYTES = 2
_ADAM_BYTES_PER_PARAM = 2 * _FP32_BYTES  # first and second moment, fp32
_GIB = 2**30
_INSTALL_HINT = ("install with pip install 'advisor[torch]' (torch==2.13.0 on CPU) or give "
                 "profile.flops_per_sample in model.yaml")


class MemoryBasis(enum.StrEnum):
    """Where a profile's memory figure comes from."""

    TRACED = "traced"        # a training step traced on fake tensors (advisor.profiling.memory_trace)
    USER = "model.yaml"      # profile.memory_gib in model.yaml
    ESTIMATE = "estimate"    # the sum of weights, gradients, Adam state and saved activations

    def describe(self) -> str:
        """A few words for messages: ``traced step``, ``profile.memory_gib in model.yaml``."""
        return {MemoryBasis.TRACED: "traced step",
                MemoryBasis.USER: "profile.memory_gib in model.yaml",
                MemoryBasis.ESTIMATE: "estimated sum"}[self]


@dataclass(frozen=True)
class WorkloadProfile:
    """What one training sample costs, independent of where it runs.

    ``flops_per_sample`` counts forward + backward. Memory: ``memory_lines`` are
    ``(base_bytes, bytes_per_sample)`` lines from a traced training step, the need with ``b``
    samples per device being the highest line at ``b``; without them it is the sum
    ``fixed_bytes + b * activation_bytes_per_sample`` (weights, gradients and optimizer state,
    and activations kept for backward). ``activation_bytes_per_sample`` is the traced slope at
    the spec's batch when traced. ``memory_basis`` says which figure it is, and
    ``trace_problem`` why the step could not be traced (empty when it was, or was not tried).
    ``method`` says how FLOPs were obtained (``flop_counter:fake``, ``user``, ...).
    ``conv_flops_fraction`` is the share of FLOPs in convolutions (None when not counted).
    """

    flops_per_sample: float
    params: int
    weight_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    activation_bytes_per_sample: int
    method: str
    conv_flops_fraction: float | None = None
    memory_lines: tuple[tuple[float, float], ...] = ()
    memory_basis: MemoryBasis = MemoryBasis.ESTIMATE
    trace_problem: str = ""

    @property
    def fixed_bytes(self) -> int:
        """Bytes held regardless of batch: weights, gradients and optimizer state."""
        return self.weight_bytes + self.gradient_bytes + self.optimizer_bytes

    def memory_gib(self, samples_per_device: int) -> float:
        """GiB one device needs to train ``samples_per_device`` samples per step (before the
        runtime's own overhead)."""
        if self.memory_lines:
            total = max(base + samples_per_device * slope for base, slope in self.memory_lines)
        else:
            total = self.fixed_bytes + samples_per_device * self.activation_bytes_per_sample
        return total / _GIB


def profile_workload(spec: WorkloadSpec, *, use_cache: bool = True) -> WorkloadProfile:
    """Measure (or read from the cache) what one training sample of ``spec`` costs.

    FLOPs: torch's FlopCounterMode over one forward + backward of a batch of 4, divided by 4,
    run without allocating memory on fake CPU tensors (backed by the meta device; plain meta
    tensors would skip autocast and take the unfused attention kernel). If that fails, the
    plain meta device; an entrypoint that runs on neither gets one real CPU step.
    Memory assumes mixed-precision training with the Adam optimizer: fp32 master weights and
    fp32 gradients (4 bytes per parameter each), Adam's two fp32 moments (8 bytes per
    parameter) and, under bf16/fp16 autocast, the half-precision weight copies autocast keeps
    during the step (2 bytes per parameter, counted in ``weight_bytes``). Activations per
    sample are the bytes of the tensors autograd saves for backward at batch 4 minus those at
    batch 2, halved, measured under the spec's precision; temporary buffers are not counted. That sum
    is kept for reference (and used where tracing fails): the memory need is traced from
    steady training steps on fake tensors at ``batch_size`` and half of it
    (``advisor.profiling.memory_trace``), peak live bytes as CUDA's allocator counts them.
    The FLOP count, the memory trace and the operator mix (``op_mix_for_spec``, cached here
    too) come from one pass over the step (``advisor.profiling.step_trace``): the model is
    built once and each batch size runs once; where that pass fails, each is measured on its
    own, for its own fallback and message.

    ``spec.profile`` (flops_per_sample, params, memory_gib) replaces measured figures;
    ``memory_gib`` is what one device needs at the spec's ``batch_size``. Without torch the
    override must give flops_per_sample. Profiles are cached as JSON by ``spec.fingerprint()``
    (changing an entrypoint's code does not invalidate it: pass ``use_cache=False``); where
    the cache has none, a shipped one is read (built-in examples, ``_spec_files``).
    Raises AdvisorError with what to change.
    """
    path = profile_cache_file(f"{spec.fingerprint()}.json")
    cached = cached_or_shipped(spec, path, ".json", _read_cache) if use_cache else None
    if cached is not None:
        return cached
    measured, traced = _measure_spec(spec, trace_ops=not use_cache or cached_op_mix(spec) is None)
    profile = _apply_override(spec, measured)
    if path is not None:
        write_cache(path, profile_json(profile))
    if traced is not None and traced.op_mix is not None:
        store_op_mix(spec, traced.op_mix)
    if traced is not None and traced.op_names is not None:
        store_op_names(spec, traced.op_names)
    return profile


def measure_workload(spec: WorkloadSpec) -> tuple[WorkloadProfile, StepTrace | None]:
    """``profile_workload(spec, use_cache=False)`` without writing the cache, and the one pass
    over the step (its operator mix and names) when it ran: what the shipped profiles are."""
    measured, traced = _measure_spec(spec, trace_ops=True)
    return _apply_override(spec, measured), traced


def profile_json(profile: WorkloadProfile) -> str:
    """The JSON a profile is cached (and shipped) as."""
    return json.dumps({"version": _CACHE_VERSION, **asdict(profile)}, indent=1)


def _override_is_complete(spec: WorkloadSpec) -> bool:
    given = spec.profile
    return None not in (given.flops_per_sample, given.params, given.memory_gib)


def needs_measuring(spec: WorkloadSpec) -> bool:
    """Whether ``profile_workload(spec)`` will run the model with torch: model.yaml does not
    state every figure and neither a cached nor a shipped profile exists (a hint for progress
    messages)."""
    if _override_is_complete(spec) or shipped_profile_file(spec, ".json") is not None:
        return False
    path = profile_cache_file(f"{spec.fingerprint()}.json")
    return path is None or not path.exists()


def _measure_spec(spec: WorkloadSpec, *,
                  trace_ops: bool) -> tuple[WorkloadProfile | None, StepTrace | None]:
    """The measured profile (None when the override says everything needed) and the one pass
    over the step when it ran (its operator mix, with ``trace_ops``, and operator names)."""
    override = spec.profile
    if _override_is_complete(spec):
        return None, None
    try:
        import torch  # noqa: F401  (only checks that torch is installed)
    except ImportError:
        if override.flops_per_sample is None:
            raise AdvisorError(f"{spec.name}: profiling the model needs torch; "
                               f"{_INSTALL_HINT}") from None
        return None, None
    memory_batches = None if override.memory_gib is not None else _trace_batches(spec.batch_size)
    if memory_batches is None and not trace_ops:
        return _measure(recipe_for(spec, samples_per_device=2), spec.precision,
                        name=spec.name), None
    from advisor.profiling.step_trace import trace_training_step

    traced = trace_training_step(recipe_for(spec, samples_per_device=spec.batch_size),
                                 spec.precision, memory_batches=memory_batches,
                                 op_mix=trace_ops, count_batch=_PROFILE_BATCHES[1],
                                 op_names=True)
    counted = traced.counted
    if counted is None or (memory_batches is not None and traced.memory is None):
        # Something failed: measure as separate traces do, for their fallbacks and messages
        # (the estimated activations need a second count, only used where tracing fails).
        measured = _measure(recipe_for(spec, samples_per_device=2), spec.precision,
                            name=spec.name)
    else:
        measured = counted_profile(counted.count, counted.batch_size, params=counted.params,
                                   weight_bytes=counted.weight_bytes, precision=spec.precision,
                                   mode="fake", activation_bytes_per_sample=0)
    if memory_batches is None:
        return measured, traced
    if traced.memory is None:
        return _traced(spec, measured), traced
    return _with_memory(spec, measured, traced.memory), traced


def _trace_batches(batch_size: int) -> tuple[int, int]:
    """Two batch sizes to trace: the spec's and half of it (1 and 2 for a batch of 1)."""
    return (batch_size // 2, batch_size) if batch_size >= 2 else (1, 2)


def _traced(spec: WorkloadSpec, profile: WorkloadProfile) -> WorkloadProfile:
    """``profile`` with the memory of a traced training step (unchanged where tracing fails:
    its memory stays the estimated sum)."""
    from advisor.profiling.memory_trace import trace_peak_bytes

    try:
        traced = trace_peak_bytes(recipe_for(spec, samples_per_device=spec.batch_size),
                                  spec.precision, batch_sizes=_trace_batches(spec.batch_size))
    except (ProbeError, *STEP_ERRORS) as exc:
        return replace(profile, trace_problem=first_line(exc))
    return _with_memory(spec, profile, traced)


def _with_memory(spec: WorkloadSpec, profile: WorkloadProfile,
                 traced: TracedMemory) -> WorkloadProfile:
    """``profile`` with the traced peak lines (its activations: the slope at the spec's batch)."""
    top = max(traced.lines, key=lambda line: line[0] + spec.batch_size * line[1])
    return replace(profile, memory_lines=traced.lines, memory_basis=MemoryBasis.TRACED,
                   activation_bytes_per_sample=max(0, round(top[1])))


def _apply_override(spec: WorkloadSpec, measured: WorkloadProfile | None) -> WorkloadProfile:
    override = spec.profile
    if measured is None:
        params = override.params or 0
        profile = WorkloadProfile(
            flops_per_sample=float(override.flops_per_sample or 0.0), params=params,
            weight_bytes=params * _FP32_BYTES, gradient_bytes=params * _FP32_BYTES,
            optimizer_bytes=params * _ADAM_BYTES_PER_PARAM, activation_bytes_per_sample=0,
            method="user")
    else:
        profile = measured
        if override.flops_per_sample is not None:
            profile = replace(profile, flops_per_sample=float(override.flops_per_sample))
        if override.params is not None:
            scale = override.params / measured.params if measured.params else 0.0
            profile = replace(
                profile, params=override.params,
                weight_bytes=_scaled(measured.weight_bytes, scale, override.params),
                gradient_bytes=_scaled(measured.gradient_bytes, scale, override.params),
                optimizer_bytes=override.params * _ADAM_BYTES_PER_PARAM)
        if profile != measured:
            profile = replace(profile, method=f"{measured.method}+user")
    if override.memory_gib is not None:
        profile = replace(_fit_memory(profile, int(override.memory_gib * _GIB), spec.batch_size),
                          memory_lines=(), memory_basis=MemoryBasis.USER)
    return profile


def _scaled(measured_bytes: int, scale: float, params: int) -> int:
    return int(measured_bytes * scale) if scale else params * _FP32_BYTES


def _fit_memory(profile: WorkloadProfile, total_bytes: int, batch_size: int) -> WorkloadProfile:
    """Make ``memory_gib(batch_size)`` equal the user's figure, keeping the measured split."""
    fixed = profile.fixed_bytes
    if fixed <= total_bytes:
        return replace(profile, activation_bytes_per_sample=(total_bytes - fixed) // batch_size)
    ratio = total_bytes / fixed
    return replace(profile, weight_bytes=int(profile.weight_bytes * ratio),
                   gradient_bytes=int(profile.gradient_bytes * ratio),
                   optimizer_bytes=int(profile.optimizer_bytes * ratio),
                   activation_bytes_per_sample=0)


def _read_cache(path: Path) -> WorkloadProfile | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.pop("version", None) != _CACHE_VERSION:
        return None
    if set(data) != {f.name for f in fields(WorkloadProfile)}:
        return None
    try:
        data["memory_lines"] = tuple((float(base), float(slope))
                                     for base, slope in data["memory_lines"])
        data["memory_basis"] = MemoryBasis(data["memory_basis"])
        return WorkloadProfile(**data)
    except (TypeError, ValueError):
        return None


# --- measuring with torch (imported lazily) -------------------------------------------------


def _measure(recipe: WorkloadRecipe, precision: Precision, *, name: str) -> WorkloadProfile:
    """Profile ``recipe``: fake tensors, then meta, then (entrypoints) a real CPU step."""
    # Fake CPU tensors (meta-backed) first: autocast applies to them, not to meta tensors,
    # and attention takes the fused kernel that saves no score matrix, as on accelerators.
    modes = ["fake", "meta"]
    if recipe.entrypoint is not None:
        modes.append("cpu")
    problems = []
    for mode in modes:
        try:
            return _measure_on(mode, recipe, precision)
        except ProbeError as exc:
            if recipe.builtin is not None or mode == modes[-1]:
                raise AdvisorError(f"{name}: {exc}") from exc
            problems.append(f"{mode}: {exc}")
        except (*STEP_ERRORS, AssertionError) as exc:
            text = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            if "not compiled with CUDA" in text or "no NVIDIA driver" in text:
                raise AdvisorError(
                    f"{name}: the model puts tensors on CUDA ({text}); advisor profiles it on "
                    "fake CPU tensors: create tensors on the device it passes to "
                    "make_batch(batch_size, device), not a hard-coded 'cuda'") from exc
            problems.append(f"{mode}: {type(exc).__name__}: {text}")
    raise AdvisorError(f"{name}: cannot run one training step to profile the model "
                       f"({'; '.join(problems)}); fix the model or give profile.flops_per_sample "
                       f"and profile.memory_gib in model.yaml")


def _mode_context(mode: str) -> AbstractContextManager[Any]:
    import torch

    if mode == "meta":
        return torch.device("meta")
    if mode == "fake":
        from torch._subclasses.fake_tensor import FakeTensorMode

        return FakeTensorMode(allow_non_fake_inputs=True)  # fake_build's real sequences
    return nullcontext()


# Batches of the FLOP count and the saved-tensor difference: at least 2, since batch norm in
# training needs more than one value per channel (a 1x1 feature map at batch 1 has one).
_PROFILE_BATCHES = (2, 4)


def _measure_on(mode: str, recipe: WorkloadRecipe, precision: Precision) -> WorkloadProfile:
    import torch

    from advisor.profiling._torch_counting import count_step, parameters

    autocast_dtype = {Precision.BF16: torch.bfloat16, Precision.FP16: torch.float16}.get(precision)
    counts: dict[int, StepCount] = {}
    with _mode_context(mode), fake_grouped_mm() if mode == "fake" else nullcontext():
        with fake_build() if mode == "fake" else nullcontext():
            built = build_workload(recipe)
        if hasattr(built.model, "train"):
            built.model.train()
        for batch_size in _PROFILE_BATCHES:
            counts[batch_size] = count_step(
                built, batch_size, device="meta" if mode == "meta" else "cpu",
                autocast_dtype=None if mode == "meta" else autocast_dtype)
        params, weight_bytes = parameters(built.model)
    small, large = _PROFILE_BATCHES
    activation = max(0, counts[large].saved_bytes - counts[small].saved_bytes) // (large - small)
    return counted_profile(counts[large], large, params=params, weight_bytes=weight_bytes,
                           precision=precision, mode=mode, activation_bytes_per_sample=activation)


def counted_profile(count: StepCount, batch_size: int, *, params: int, weight_bytes: int,
                    precision: Precision, mode: str,
                    activation_bytes_per_sample: int) -> WorkloadProfile:
    """The profile of a forward + backward counted at ``batch_size`` on ``mode`` tensors
    (``fake``, ``meta`` or ``cpu``), with the summed memory estimate."""
    activation = activation_bytes_per_sample
    method = f"flop_counter:{mode}"
    if precision.low_precision:
        weight_bytes += params * _HALF_BYTES
        if mode == "meta":
            activation //= 2
            method += " (activations halved for low precision)"
    return WorkloadProfile(
        flops_per_sample=count.flops / batch_size, params=params, weight_bytes=weight_bytes,
        gradient_bytes=params * _FP32_BYTES, optimizer_bytes=params * _ADAM_BYTES_PER_PARAM,
        activation_bytes_per_sample=activation, method=method,
        conv_flops_fraction=count.conv_flops / count.flops if count.flops else None)
