"""Peak device memory of one training step, traced on fake tensors.

``trace_peak_bytes`` runs the step the probe harness runs on fake tensors (shapes and dtypes,
no memory; ``advisor.profiling.fake_step``): AdamW(lr=1e-4) with torch's multi-tensor
(``foreach``) implementation, the default on CUDA; ``zero_grad(set_to_none=True)``; the forward
under autocast at the workload's precision with CUDA's autocast op lists; ``loss.backward()``;
``optimizer.step()``. The model is built once; the first step allocates Adam's state, then one
steady step runs per batch size, and its peak is the answer, as the harness measures peak memory
over steps after warm-up. ``MemoryCollector`` does the counting, so that the cold profile traces
memory in the same pass as the operator mix (``advisor.profiling.step_trace``).

A ``TorchDispatchMode`` sees every tensor an operator returns; each new storage adds its bytes,
rounded as the CUDA caching allocator counts them (``cuda_allocated_bytes``), and a weak-reference
callback subtracts them when the storage dies, so the live total after each operator follows
``torch.cuda.memory_allocated`` and its maximum ``max_memory_allocated``. (PyTorch's own
``torch.distributed._tools.mem_tracker.MemTracker`` does the same but rounds only tensors on a
CUDA device, which a CPU build cannot fake, tracks one iteration per module, and imports the
distributed package.) Adam's ``step`` counters are left out: without ``capturable``/``fused``
they live on the host.

Two batch sizes are traced. Operator for operator, the live bytes of their steps give one
line ``base + slope * batch`` per point of the step, and the peak at any batch is the highest
line there (exact while the operator sequence does not depend on the batch, up to allocator
rounding). Not modelled: kernels' internal workspaces (cuDNN convolution algorithms, fused
attention backward buffers), the cuBLAS workspace, the caching allocator's fragmentation and
the CUDA context; those are the per-device runtime overhead (``advisor.profiling.runtime_overhead``).
fp16 runs without the harness's GradScaler (it scales in place; a few scalars).

``device="cpu"`` traces the step as the harness runs it on the CPU instead (CPU autocast lists
and attention kernels, AdamW's per-tensor loop, no allocator rounding): what the benchmark
compares with a CPU probe's resident memory.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from advisor.profiling.fake_step import FakeStep, run_fake_steps
from advisor.spec import Precision
from probes import WorkloadRecipe

__all__ = ["DEVICES", "MemoryCollector", "TracedMemory", "cuda_allocated_bytes", "trace_peak_bytes"]

DEVICES = ("cuda", "cpu")

_MIN_BLOCK = 512             # kMinBlockSize: every allocation is a multiple of 512 bytes
_SMALL_SIZE = 1 << 20        # kSmallSize: up to 1 MiB from the small pool
_MIN_LARGE_ALLOC = 10 << 20  # kMinLargeAlloc: from 10 MiB on, a segment of its own
_ROUND_LARGE = 2 << 20       # kRoundLarge: such segments are rounded up to 2 MiB


def cuda_allocated_bytes(nbytes: int) -> int:
    """Bytes the CUDA caching allocator counts as allocated for a request of ``nbytes``.

    From ``c10/cuda/CUDACachingAllocator.cpp``: requests round up to 512-byte multiples
    (``round_size``); a request of 10 MiB or more gets a segment rounded up to 2 MiB
    (``get_allocation_size``) and keeps all of it when the remainder would be 1 MiB or less
    (``should_split``). Smaller requests are carved from 2 or 20 MiB segments. Modelled as if
    each large request got a fresh segment (a reused cached block may leave a different
    remainder); zero bytes allocate nothing.
    """
    if nbytes <= 0:
        return 0
    size = max(_MIN_BLOCK, -(-nbytes // _MIN_BLOCK) * _MIN_BLOCK)
    if size < _MIN_LARGE_ALLOC:
        return size
    segment = -(-size // _ROUND_LARGE) * _ROUND_LARGE
    return segment if segment - size <= _SMALL_SIZE else size


@dataclass(frozen=True, slots=True)
class TracedMemory:
    """Peak bytes of a steady training step, as the CUDA caching allocator would count them.

    ``lines`` are ``(base_bytes, bytes_per_sample)``: the peak with ``b`` samples per device is
    the highest ``base + b * slope``. ``traced`` holds ``(batch, peak_bytes)`` for the batches
    traced, ``at_peak`` what held the bytes at the peak of the largest one (``weights``,
    ``batch``, ``optimizer state``, ``gradients``, ``forward`` (activations and autocast
    copies), ``backward`` and ``optimizer step`` temporaries), ``autocast`` which op lists the
    forward used (``cuda``, ``cpu`` or ``none``), ``notes`` what the trace could not do.
    """

    lines: tuple[tuple[float, float], ...]
    traced: tuple[tuple[int, int], ...]
    at_peak: tuple[tuple[str, int], ...]
    autocast: str
    notes: tuple[str, ...] = ()

    def peak_bytes(self, samples_per_device: int) -> int:
        """Peak bytes of one step with ``samples_per_device`` samples per device."""
        return round(max(base + samples_per_device * slope for base, slope in self.lines))


def trace_peak_bytes(recipe: WorkloadRecipe, precision: Precision, *,
                     batch_sizes: tuple[int, int], device: str = "cuda") -> TracedMemory:
    """Trace two steady training steps of ``recipe`` on fake tensors, at two per-device batch
    sizes, and return the peak memory they need on ``device`` (``cuda``, or ``cpu``; see the
    module docstring for the step).

    Raises ProbeError when the workload cannot be built and whatever the model raises when
    its step cannot run on fake tensors; ValueError for batch sizes that are not two distinct
    positive numbers or an unknown device.
    """
    small, large = sorted(batch_sizes)
    if small < 1 or small == large:
        raise ValueError(f"batch_sizes must be two different positive numbers, got {batch_sizes}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
    collector = MemoryCollector((small, large), device=device)
    lists = run_fake_steps(recipe, precision, (small, large), device=device,
                           foreach=True if device == "cuda" else None,
                           observers=[collector.mode()], on_phase=collector.on_phase)
    traced = collector.result(lists)
    assert traced is not None  # both steps ran, or run_fake_steps raised
    return traced


def _combine(first: _Trace, second: _Trace, small: int, large: int,
             autocast: str) -> TracedMemory:
    """The peak lines through the steady steps at batches ``small`` and ``large``."""
    notes = list(second.notes)
    if [op for op, _ in first.timeline] == [op for op, _ in second.timeline]:
        points = [(a, b) for (_, a), (_, b) in zip(first.timeline, second.timeline, strict=True)]
    else:
        notes.append(f"the step runs different operators at batch {small} and {large}: "
                     "the peak is a line through the two peaks")
        points = [(first.peak, second.peak)]
    lines = _upper_envelope([(a - (b - a) / (large - small) * small, (b - a) / (large - small))
                             for a, b in points])
    return TracedMemory(lines=tuple(lines), traced=((small, first.peak), (large, second.peak)),
                        at_peak=second.at_peak, autocast=autocast, notes=tuple(notes))


def _upper_envelope(lines: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    """The lines that are highest somewhere on batch >= 1, by increasing slope."""
    unique = sorted(set(lines), key=lambda line: (line[0] + line[1], line[1]))
    current = unique[-1]  # highest at batch 1 (the steepest of ties)
    envelope = [current]
    at = 1.0
    while True:
        # The steeper line that overtakes the current one soonest after ``at``.
        crossings = [((current[0] - base) / (slope - current[1]), -slope, (base, slope))
                     for base, slope in unique if slope > current[1]]
        ahead = [c for c in crossings if c[0] >= at]
        if not ahead:
            return envelope
        at, _, current = min(ahead)
        envelope.append(current)


@dataclass
class _Trace:
    timeline: list[tuple[str, int]]
    peak: int
    at_peak: tuple[tuple[str, int], ...]
    autocast: str
    notes: list[str]


class _LiveBytes:
    """Live allocator bytes of every storage by what allocated it, the peak, and a timeline.

    Built lazily as a ``TorchDispatchMode`` subclass (torch is imported only when tracing).
    """

    def __init__(self, rounding: Callable[[int], int]) -> None:
        self.tag = "weights"
        self._rounding = rounding
        self.live: dict[str, int] = {}
        self.total = 0
        self.peak = 0
        self.at_peak: dict[str, int] = {}
        self.timeline: list[tuple[str, int]] | None = None
        self._storages: dict[int, tuple[str, int]] = {}

    def add(self, storage: Any) -> None:
        """Count ``storage`` if it is new (a view's storage is counted once)."""
        key = id(storage)
        if key in self._storages:
            return
        nbytes = self._rounding(int(storage.nbytes()))
        self._storages[key] = (self.tag, nbytes)
        self._move(self.tag, nbytes)
        weakref.finalize(storage, self._free, key)

    def retag(self, storage: Any, tag: str) -> None:
        """Count ``storage`` under ``tag`` from now on."""
        entry = self._storages.get(id(storage))
        if entry is not None and entry[0] != tag:
            self._move(entry[0], -entry[1])
            self._storages[id(storage)] = (tag, entry[1])
            self._move(tag, entry[1])

    def forget(self, storage: Any) -> None:
        """Stop counting ``storage`` (it lives on the host on a real device)."""
        entry = self._storages.pop(id(storage), None)
        if entry is not None:
            self._move(entry[0], -entry[1])

    def _free(self, key: int) -> None:
        entry = self._storages.pop(key, None)
        if entry is not None:
            self._move(entry[0], -entry[1])

    def _move(self, tag: str, nbytes: int) -> None:
        self.live[tag] = self.live.get(tag, 0) + nbytes
        self.total += nbytes

    def after_op(self, name: str) -> None:
        """Record the live bytes after an operator (its inputs and outputs all alive)."""
        if self.timeline is not None:
            self.timeline.append((name, self.total))
        if self.total > self.peak:
            self.peak = self.total
            self.at_peak = {k: v for k, v in self.live.items() if v}

    def restart(self) -> None:
        """Start a new timeline; the peak restarts from what is live now."""
        self.timeline = [("start", self.total)]
        self.peak = self.total
        self.at_peak = {k: v for k, v in self.live.items() if v}


def _dispatch_mode(live: _LiveBytes) -> AbstractContextManager[Any]:
    """A TorchDispatchMode that reports every operator's output storages to ``live``."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Tracker(TorchDispatchMode):  # type: ignore[misc,no-untyped-call]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            del types
            out = func(*args, **(kwargs or {}))
            for item in tree_flatten(out)[0]:
                if isinstance(item, torch.Tensor) and item.layout == torch.strided:
                    live.add(item.untyped_storage())  # (sparse tensors have no one storage)
            live.after_op(str(func))
            return out

    return Tracker()  # type: ignore[no-untyped-call]


def _storages(tensors: Iterator[Any]) -> Iterator[Any]:
    import torch

    for tensor in tensors:
        if isinstance(tensor, torch.Tensor):
            yield tensor.untyped_storage()


class MemoryCollector:
    """Follows the live allocator bytes of the steps ``run_fake_steps`` runs and keeps the
    timelines of the steady steps at two batch sizes (enter ``mode()`` among its observers and
    pass ``on_phase``); one collector per pass."""

    def __init__(self, batch_sizes: tuple[int, int], *, device: str = "cuda") -> None:
        self._cuda = device == "cuda"
        self._batches = tuple(sorted(batch_sizes))
        self._live = _LiveBytes(cuda_allocated_bytes if self._cuda else int)
        self._traces: dict[int, _Trace] = {}

    def mode(self) -> AbstractContextManager[Any]:
        """The dispatch mode that sees every operator's output storages."""
        return _dispatch_mode(self._live)

    def on_phase(self, step: int, phase: str, state: FakeStep) -> None:
        """Tag what each phase allocates; restart the timeline at a steady step it keeps."""
        live = self._live
        kept = step >= 2 and state.batch_size in self._batches
        if phase == "ready":
            for param in state.params:
                param.register_post_accumulate_grad_hook(
                    lambda p: live.retag(p.grad.untyped_storage(), "gradients"))
        elif phase == "start":
            if kept:
                live.restart()
        elif phase == "done" and step == 1:
            _adopt_optimizer_state(live, state.optimizer, host_steps=self._cuda)
        elif phase == "done":
            if kept:
                self._traces[state.batch_size] = _Trace(
                    timeline=live.timeline or [], peak=live.peak,
                    at_peak=tuple(sorted(live.at_peak.items())), autocast="", notes=[])
                live.timeline = None  # the step's timeline ends here
        else:
            live.tag = phase

    def result(self, autocast: str) -> TracedMemory | None:
        """The traced memory (``autocast``: the op lists the forward used), or None until the
        steady steps at both batch sizes have run."""
        small, large = self._batches
        if small not in self._traces or large not in self._traces:
            return None
        return _combine(self._traces[small], self._traces[large], small, large, autocast)


def _adopt_optimizer_state(live: _LiveBytes, optimizer: Any, *, host_steps: bool) -> None:
    """Adam's moments count as optimizer state; with ``host_steps`` its step counters are left
    out (they live on the host next to a device)."""
    for state in optimizer.state.values():
        for name, value in state.items():
            for storage in _storages(iter([value])):
                if name == "step" and host_steps:
                    live.forget(storage)
                else:
                    live.retag(storage, "optimizer state")
