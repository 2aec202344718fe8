"""One training step on a device: the harness's and the tuner's, built the same way.

``build_train_step`` moves the model to the device and returns a ``TrainStep``: zero the
gradients, forward under autocast at the precision asked for, backward (with a gradient
scaler for fp16 on CUDA), optimizer step, synchronize. Memory format, compiler and cuDNN
autotuning are the tuner's knobs; the harness runs the step eagerly in the default format,
with cuDNN autotuning as the process has it (torch's default is off; an entrypoint may turn it
on). ``run_timed`` times one step and turns any device's out-of-memory error into
``OutOfMemory``. torch is imported lazily.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Callable, Iterator
from typing import Any

from probes.devices.seam import Device
from probes.errors import ProbeError
from probes.vocabulary import DeviceKind, Precision

__all__ = ["OutOfMemory", "TrainStep", "build_train_step", "fits_one_step", "is_oom_error",
           "oom_summary", "release_memory", "run_timed", "to_channels_last", "to_device",
           "young_garbage_only"]

_OOM_MARKERS = ("out of memory", "not enough memory", "can't allocate memory",
                "cannot allocate memory", "failed to allocate")
_CUDA_OOM = re.compile(r"Tried to allocate ([\d.]+ [KMGT]?i?B).*?total capacity of ([\d.]+ [KMGT]?i?B)"
                       r" of which ([\d.]+ [KMGT]?i?B) is free", re.DOTALL)


class OutOfMemory(Exception):
    """The step at ``batch_size`` needed more memory than the device (or the cap) has."""

    def __init__(self, batch_size: int, detail: str) -> None:
        super().__init__(f"out of memory at batch {batch_size}: {detail}")
        self.batch_size = batch_size
        self.detail = detail


def oom_summary(text: str) -> str:
    """One short line for an out-of-memory message (CUDA's runs to several sentences and
    lines): what was asked for and what was free, else the first sentence."""
    cuda = _CUDA_OOM.search(text)
    if cuda:
        return (f"CUDA out of memory: tried to allocate {cuda.group(1)} with {cuda.group(3)} "
                f"free of {cuda.group(2)}")
    lines = text.strip().splitlines()
    first = lines[0] if lines else "out of memory"
    return first.split(". ")[0][:200]


def is_oom_error(exc: BaseException) -> bool:
    """True for torch's OutOfMemoryError, MemoryError and allocator failures on any device."""
    if isinstance(exc, MemoryError | OutOfMemory):
        return True
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    if isinstance(exc, RuntimeError | ProbeError):  # ProbeError wraps an entrypoint's failure
        text = str(exc).lower()
        return any(m in text for m in _OOM_MARKERS)
    return False


def to_device(batch: Any, device: Any) -> Any:
    """``batch`` (a tensor, or dicts, lists and tuples of them) moved to ``device``."""
    if hasattr(batch, "to") and callable(batch.to):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def to_channels_last(batch: Any) -> Any:
    """``batch`` with every 4-D floating-point tensor in channels-last memory format."""
    import torch

    if isinstance(batch, torch.Tensor):
        if batch.dim() == 4 and batch.is_floating_point():
            return batch.contiguous(memory_format=torch.channels_last)
        return batch
    if isinstance(batch, dict):
        return {k: to_channels_last(v) for k, v in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(to_channels_last(v) for v in batch)
    return batch


def release_memory(device: Device) -> None:
    """Collect garbage and hand cached CUDA blocks back (after an out-of-memory step)."""
    gc.collect()
    if device.kind == DeviceKind.CUDA:
        import torch

        torch.cuda.empty_cache()


@contextlib.contextmanager
def young_garbage_only() -> Iterator[None]:
    """Inside, a garbage collection scans only the objects made inside: what is alive on entry
    (torch's modules, the model, its optimizer) is frozen out of the collector until exit.
    A batch search collects after every attempt (:func:`fits_one_step`); a full collection
    with torch imported takes 0.1-0.4 s of CPU, an attempt's own garbage next to nothing."""
    gc.collect()  # what is garbage on entry is collected, not frozen
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def fits_one_step(device: Device, attempt: Callable[[], object]) -> tuple[bool, float | None]:
    """Whether ``attempt`` (make a batch and run one step) fits in memory, and the peak memory
    it took when it does. An out-of-memory error answers False, any other propagates; the
    cached memory is released either way (outside the handler, once the traceback no longer
    holds the tensors)."""
    device.reset_peak_memory()
    fits, peak = False, None
    try:
        attempt()
        fits, peak = True, device.peak_memory_gib()
    except Exception as exc:
        if not is_oom_error(exc):
            raise
    release_memory(device)
    return fits, peak


class TrainStep:
    """A callable running one training step on a batch already on the device.

    ``precision`` is what the step really runs (tf32 asked for on a device without it runs
    fp32); ``phases(batch, clock)`` runs one step and returns the seconds of forward,
    backward and optimizer, synchronizing between them (for the step profile).
    """

    def __init__(self, model: Any, loss_fn: Callable[[Any, Any], Any], device: Device, *,
                 precision: Precision, dtype: Any, optimizer: Any, scaler: Any) -> None:
        self.model = model
        self.precision = precision
        self._loss_fn = loss_fn
        self._device = device
        self._dtype = dtype
        self._optimizer = optimizer
        self._scaler = scaler

    def _forward(self, batch: Any) -> Any:
        import torch

        self._optimizer.zero_grad(set_to_none=True)
        autocast: Any = (torch.autocast(self._device.autocast_device_type, dtype=self._dtype)
                         if self._dtype is not None else contextlib.nullcontext())
        with autocast:
            return self._loss_fn(self.model, batch)

    def _backward(self, loss: Any) -> None:
        if self._scaler is not None:
            self._scaler.scale(loss).backward()
        else:
            loss.backward()

    def _update(self) -> None:
        if self._scaler is not None:
            self._scaler.step(self._optimizer)
            self._scaler.update()
        else:
            self._optimizer.step()

    def __call__(self, batch: Any) -> None:
        self._backward(self._forward(batch))
        self._update()
        self._device.synchronize()

    def phases(self, batch: Any, clock: Callable[[], float]) -> tuple[float, float, float]:
        """One step; seconds of (forward, backward, optimizer), each ended by a device sync."""
        sync = self._device.synchronize
        start = clock()
        loss = self._forward(batch)
        sync()
        forward = clock()
        self._backward(loss)
        sync()
        backward = clock()
        self._update()
        sync()
        return forward - start, backward - forward, clock() - backward


def build_train_step(model: Any, loss_fn: Callable[[Any, Any], Any], device: Device, *,
                     precision: Precision, channels_last: bool = False,
                     compiler_backend: str | None = None,
                     cudnn_benchmark: bool | None = None) -> TrainStep:
    """The step of ``model`` (moved to ``device``, in train mode) with AdamW, at
    ``precision`` (fp32, tf32, bf16, fp16 autocast); ``channels_last`` converts the model's
    memory format, ``compiler_backend`` wraps it in ``torch.compile(backend=...)``,
    ``cudnn_benchmark`` switches cuDNN's convolution autotuning (None: left as it is)."""
    import torch

    model = model.to(device.torch_device)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    precision = Precision(precision)
    dtype = {Precision.BF16: torch.bfloat16, Precision.FP16: torch.float16}.get(precision)
    device.enable_tf32(precision is Precision.TF32)
    if cudnn_benchmark is not None:
        device.set_cudnn_benchmark(cudnn_benchmark)
    effective = (Precision.FP32 if precision is Precision.TF32 and not device.supports_tf32()
                 else precision)
    scaler = torch.amp.GradScaler(device.autocast_device_type) if (
        precision is Precision.FP16 and device.kind == DeviceKind.CUDA) else None
    runnable = torch.compile(model, backend=compiler_backend) if compiler_backend else model
    return TrainStep(runnable, loss_fn, device, precision=effective, dtype=dtype,
                     optimizer=optimizer, scaler=scaler)


def run_timed(action: Callable[[], None], *, batch_size: int, device: Device,
              clock: Callable[[], float], memory_limit_gib: float | None) -> float:
    """Seconds ``action`` took; OutOfMemory when it ran out of memory or its peak passed
    ``memory_limit_gib``."""
    start = clock()
    try:
        action()
    except Exception as exc:
        if is_oom_error(exc):
            raise OutOfMemory(batch_size, oom_summary(str(exc))) from exc
        raise
    elapsed = clock() - start
    peak = device.peak_memory_gib()
    if memory_limit_gib is not None and peak is not None and peak > memory_limit_gib:
        raise OutOfMemory(batch_size, f"peak {peak:.2f} GiB over the cap {memory_limit_gib:.2f} GiB")
    return elapsed
