"""Operator profile: FLOPs and bytes moved per operator class and dtype of one training step.

The steady step of ``advisor.profiling.fake_step`` (forward under autocast at the workload's
precision, backward, AdamW's ``foreach`` update), traced with CUDA's semantics (its autocast
op lists keep layer norm, softmax and losses in fp32; attention takes the fused kernel) on
fake tensors (no memory, no compute), under a dispatch mode that records every aten operator:
its class (``OpClass`` by ``classify_op``, from ``probes.op_classes``: the probe harness sums a
real step's device time by the same classes), the dtype it computes in, its FLOPs (torch's
own ``flop_counter`` formulas, plus this project's CPU flash-attention formulas) and the bytes
it moves (input plus output tensor bytes, the usual roofline approximation, plus what a
two-pass CUDA kernel reads twice: training batch norm's activations, ``reread_tensors``). Two batch sizes
separate what scales with the batch (``OpMix.per_sample``) from what each step pays once
(``OpMix.per_step``: the optimizer, weight casts, kernel launches).
``advisor.throughput.roofline`` turns a mix into time.

Torch is imported only inside the tracing functions; a cached mix is read without it.
"""

from __future__ import annotations

import functools
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar, cast

from advisor.errors import AdvisorError
from advisor.profiling.fake_step import STEP_ERRORS, FakeStep, run_fake_steps
from advisor.spec import Precision, WorkloadSpec
from pricing.files import write_cache
from pricing.records import Record
from probes import OpClass, ProbeError, WorkloadRecipe, classify_op

__all__ = ["REFERENCE_OP_MIX_JSON", "TRACE_BATCHES", "TRACE_ERRORS", "Collector", "OpClass",
           "OpCollector", "OpCost", "OpMix", "cached_op_mix", "classify_op", "load_op_mix",
           "op_mix_for_spec", "op_mix_json", "reference_op_mixes", "store_op_mix", "trace_error",
           "trace_op_mix", "trace_with"]

_CACHE_VERSION = 3  # 3: batch norm's second pass (reread_tensors)
REFERENCE_OP_MIX_JSON = Path(__file__).parent.parent / "data" / "reference_op_mix.json"
TRACE_BATCHES = (2, 4)  # per-device batches whose difference is the per-sample cost


COMPUTE_CLASSES = (OpClass.MATMUL, OpClass.CONVOLUTION, OpClass.ATTENTION)


@dataclass(frozen=True, slots=True)
class OpCost:
    """Work of one (class, dtype): ``flops``, ``bytes_moved`` and ``kernels`` launched.

    ``dtype`` is torch's name of the dtype the operator computes in (``float32``,
    ``bfloat16``, ``float16``).
    """

    op_class: OpClass
    dtype: str
    flops: float
    bytes_moved: float
    kernels: float = 0.0


@dataclass(frozen=True, slots=True)
class OpMix(Record):
    """A training step's work: ``per_sample`` scales with the batch, ``per_step`` does not.

    The cost of one sample at a per-device batch ``b`` is ``per_sample + per_step / b``.
    """

    _error = AdvisorError

    per_sample: tuple[OpCost, ...]
    per_step: tuple[OpCost, ...]

    def at_batch(self, batch_size: int) -> tuple[OpCost, ...]:
        """Work per sample at per-device batch ``batch_size`` (per-step work shared out)."""
        if batch_size < 1:
            raise AdvisorError(f"batch_size must be >= 1, got {batch_size}")
        total: dict[tuple[OpClass, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
        for costs, scale in ((self.per_sample, 1.0), (self.per_step, 1.0 / batch_size)):
            for c in costs:
                entry = total[(c.op_class, c.dtype)]
                entry[0] += c.flops * scale
                entry[1] += c.bytes_moved * scale
                entry[2] += c.kernels * scale
        return tuple(OpCost(k[0], k[1], *v) for k, v in sorted(total.items()))

    @property
    def flops_per_sample(self) -> float:
        """FLOPs per sample that scale with the batch (forward + backward)."""
        return sum(c.flops for c in self.per_sample)

    def flops_fraction(self, op_class: OpClass) -> float | None:
        """Share of the per-sample FLOPs in ``op_class`` (None when no FLOPs were counted)."""
        total = self.flops_per_sample
        mine = sum(c.flops for c in self.per_sample if c.op_class is op_class)
        return mine / total if total > 0 else None

    def to_dict(self) -> dict[str, Any]:
        """Plain data for a JSON file: per part, one row ``[class, dtype, flops, bytes,
        kernels]`` per cost (the cache and the shipped reference mixes store this shape)."""
        return {part: [[c.op_class.value, c.dtype, c.flops, c.bytes_moved, c.kernels]
                       for c in getattr(self, part)] for part in ("per_sample", "per_step")}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The mix ``to_dict`` wrote (other keys, such as a cache's version, are ignored);
        raises AdvisorError on a malformed one."""
        try:
            parts = {part: tuple(OpCost(OpClass(r[0]), str(r[1]), float(r[2]), float(r[3]),
                                        float(r[4])) for r in data[part])
                     for part in ("per_sample", "per_step")}
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise AdvisorError(f"malformed operator mix: {exc}") from exc
        return cls(**parts)


# --- tracing with torch (imported lazily) ------------------------------------------------

TRACE_ERRORS = (*STEP_ERRORS, ProbeError)  # what a traced step may raise


def _recorder_class() -> type:
    """A ``TorchDispatchMode`` that sums FLOPs and bytes per (class, dtype); built lazily so
    this module imports without torch."""
    import torch
    from torch.utils import flop_counter
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    from advisor.profiling._torch_counting import extra_flop_formulas, reread_tensors, rnn_kernels

    registry: dict[Any, Callable[..., int]] = dict(flop_counter.flop_registry)
    wrap: Callable[..., Any] = flop_counter.shape_wrapper
    registry.update({k: wrap(v) for k, v in extra_flop_formulas().items()})

    def nbytes(t: Any) -> int:
        size = int(t.numel()) * int(t.element_size())
        try:
            return min(size, int(t.untyped_storage().nbytes()))
        except (RuntimeError, NotImplementedError):
            return size

    class Recorder(TorchDispatchMode):  # type: ignore[misc,no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.recording = False
            self.phase_optimizer = False
            self.totals: dict[tuple[OpClass, str], list[float]] = defaultdict(
                lambda: [0.0, 0.0, 0.0])

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.name()
            if not self.recording or getattr(func, "is_view", False) \
                    or not name.startswith("aten::"):
                return out
            op_class = classify_op(name)
            outputs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            in_place = name.split(".")[0].endswith("_")
            if op_class is None or not (outputs or in_place):  # metadata, allocation, views
                return out
            if self.phase_optimizer:
                op_class = OpClass.OPTIMIZER
            inputs = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            floating = [t for t in inputs + outputs if t.is_floating_point()]
            dtype = str(floating[0].dtype).removeprefix("torch.") if floating else "float32"
            formula = registry.get(func._overloadpacket)  # noqa: SLF001 - torch's own key
            flops = int(formula(*args, **kwargs, out_val=out)) if formula else 0
            entry = self.totals[(op_class, dtype)]
            entry[0] += flops
            entry[1] += sum(nbytes(t) for t in inputs + outputs + reread_tensors(name, args,
                                                                                   kwargs))
            entry[2] += rnn_kernels(name, args, kwargs) or 1
            return out

    return Recorder


class OpCollector:
    """Sums the operators of the steady steps ``run_fake_steps`` runs at two batch sizes
    (``batches``, default ``TRACE_BATCHES``; enter ``mode()`` among its observers and pass
    ``on_phase``); one collector per pass. The mix is linear in the batch, so any two sizes
    give it: a pass that also traces memory reuses that trace's sizes, whose steps it runs
    anyway. Raises ImportError without torch; ValueError for sizes not two distinct ones."""

    def __init__(self, batches: tuple[int, int] = TRACE_BATCHES) -> None:
        small, large = sorted(batches)
        if not 0 < small < large:
            raise ValueError(f"the operator mix needs two distinct batch sizes, got {batches}")
        self.batches = (small, large)
        self._recorder = _recorder_class()()
        self._totals: dict[int, dict[tuple[OpClass, str], list[float]]] = {}

    def mode(self) -> AbstractContextManager[Any]:
        """The dispatch mode that records every aten operator of a kept step."""
        return cast("AbstractContextManager[Any]", self._recorder)

    def on_phase(self, step: int, phase: str, state: FakeStep) -> None:
        """Record the steady steps at ``batches``, the optimizer's work as its own class."""
        recorder = self._recorder
        kept = step >= 2 and state.batch_size in self.batches
        if phase == "start" and kept:
            recorder.totals = self._totals[state.batch_size] = defaultdict(
                lambda: [0.0, 0.0, 0.0])
        recorder.recording = kept and phase not in ("batch", "done")
        recorder.phase_optimizer = phase == "optimizer step"

    def result(self) -> OpMix | None:
        """The operator mix, or None until the steady steps at both batch sizes have run."""
        small, large = self.batches
        if small not in self._totals or large not in self._totals:
            return None
        return _mix(self._totals[small], self._totals[large], self.batches)


def trace_op_mix(recipe: WorkloadRecipe, precision: Precision) -> OpMix:
    """The operator mix of ``recipe`` trained at ``precision`` (one fake pass: a set-up step
    and the steady steps at both ``TRACE_BATCHES``).

    Raises AdvisorError when the model does not run on fake tensors or torch is missing.
    """
    collector = trace_with(OpCollector, "the operator profile", recipe, precision,
                           TRACE_BATCHES, device="cuda", foreach=True)
    mix = collector.result()
    assert mix is not None  # both steps ran, or run_fake_steps raised
    return mix


class Collector(Protocol):
    """What watches a fake pass: a dispatch mode to enter and a hook for each phase."""

    def mode(self) -> AbstractContextManager[Any]: ...

    def on_phase(self, step: int, phase: str, state: FakeStep) -> None: ...


C = TypeVar("C", bound=Collector)


def trace_with(make: Callable[[], C], what: str, recipe: WorkloadRecipe, precision: Precision,
               batches: Sequence[int], *, device: str, foreach: bool) -> C:
    """One fake pass of ``recipe`` at ``batches`` watched by the collector ``make()`` builds
    (it imports torch), returned after the pass. AdvisorError when torch is missing (``what``
    needs it) or the step does not run on fake tensors (``trace_error``)."""
    try:
        collector = make()
    except ImportError as exc:
        raise AdvisorError(f"{what} needs torch; install with "
                           "pip install 'advisor[torch]'") from exc
    try:
        run_fake_steps(recipe, precision, batches, device=device, foreach=foreach,
                       observers=[collector.mode()], on_phase=collector.on_phase)
    except TRACE_ERRORS as exc:
        raise trace_error(exc) from exc
    return collector


def trace_error(exc: BaseException) -> AdvisorError:
    """The error ``trace_op_mix`` raises for ``exc``, an error of the traced step."""
    return AdvisorError(f"cannot trace one training step on fake tensors: "
                        f"{type(exc).__name__}: {str(exc).strip()[:200]}")


def _mix(low_totals: Mapping[tuple[OpClass, str], list[float]],
         high_totals: Mapping[tuple[OpClass, str], list[float]],
         batches: tuple[int, int]) -> OpMix:
    """Per-sample and per-step work from the totals of the steps at both ``batches``."""
    small, large = batches
    per_sample, per_step = [], []
    for key in sorted(set(low_totals) | set(high_totals)):
        low = low_totals.get(key, [0.0, 0.0, 0.0])
        high = high_totals.get(key, [0.0, 0.0, 0.0])
        slope = [max(0.0, (h - lo) / (large - small)) for lo, h in zip(low, high, strict=True)]
        slope[2] = 0.0  # kernel launches do not grow with the batch
        fixed = [max(0.0, lo - small * s) for lo, s in zip(low, slope, strict=True)]
        fixed[2] = high[2]
        if any(slope):
            per_sample.append(OpCost(key[0], key[1], *slope))
        if any(fixed):
            per_step.append(OpCost(key[0], key[1], *fixed))
    return OpMix(tuple(per_sample), tuple(per_step))


def op_mix_for_spec(spec: WorkloadSpec) -> OpMix:
    """The operator mix of ``spec`` at its precision, cached by the spec's fingerprint (the
    cold ``profile_workload`` stores it too, from the same fake pass) or shipped.

    Raises AdvisorError when it cannot be traced (see ``trace_op_mix``).
    """
    from advisor.profiling._spec_files import recipe_for

    cached = cached_op_mix(spec)
    if cached is not None:
        return cached
    mix = trace_op_mix(recipe_for(spec, samples_per_device=TRACE_BATCHES[0]), spec.precision)
    store_op_mix(spec, mix)
    return mix


def cached_op_mix(spec: WorkloadSpec) -> OpMix | None:
    """The cached operator mix of ``spec``, else the shipped one (built-in examples), or None
    when there is none (or it is stale)."""
    from advisor.profiling._spec_files import cached_or_shipped

    return cached_or_shipped(spec, _cache_file(spec), ".ops.json", load_op_mix)


def store_op_mix(spec: WorkloadSpec, mix: OpMix) -> None:
    """Cache ``mix`` as the operator mix of ``spec`` (nothing where the cache is unwritable)."""
    path = _cache_file(spec)
    if path is not None:
        write_cache(path, op_mix_json(mix))


def op_mix_json(mix: OpMix) -> str:
    """The JSON an operator mix is cached (and shipped) as."""
    return json.dumps({"version": _CACHE_VERSION, **mix.to_dict()})


def _cache_file(spec: WorkloadSpec) -> Path | None:
    from advisor.profiling._spec_files import profile_cache_file

    return profile_cache_file(f"{spec.fingerprint()}.ops.json")


def load_op_mix(path: Path) -> OpMix | None:
    """A cached mix, or None when missing, stale or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
        return None
    try:
        return OpMix.from_dict(data)
    except AdvisorError:
        return None


def reference_op_mixes(path: Path = REFERENCE_OP_MIX_JSON) -> dict[str, OpMix]:
    """Shipped operator mixes of the reference workloads, by ``model/precision`` (traced by
    ``advisor.profiling.reference_mixes``; read once per file and modification time)."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise AdvisorError(f"cannot read the reference operator mixes {path}: {exc}") from exc
    return dict(_read_reference_op_mixes(path, stamp))


@functools.lru_cache(maxsize=4)
def _read_reference_op_mixes(path: Path, stamp: int) -> dict[str, OpMix]:
    del stamp  # part of the cache key only
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise AdvisorError(f"cannot read the reference operator mixes {path}: {exc}") from exc
    return {name: OpMix.from_dict(mix) for name, mix in data.get("mixes", {}).items()}

