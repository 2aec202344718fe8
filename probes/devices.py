"""The device seam: one small class per kind of device the harness can run on.

Every device names itself as its runtime reports it (``name``: ``NVIDIA H100 80GB HBM3``,
``TPU v5 lite``, ``GAUDI2``, ``trn1``, ``cpu``) and, through ``pricing``'s device-name table,
as the catalog names it (``accelerator``: ``H100-SXM``; None for the CPU and for devices the
table does not know). A measurement is evidence only for that accelerator.

``detect_device()`` picks what the machine has: Gaudi (``habana_frameworks``), Trainium or
Inferentia (``torch_neuronx``), TPU (``torch_xla``), CUDA, else the CPU. A preferred runtime
that is not there raises ProbeError instead of falling back to the CPU. torch and the
accelerator runtimes are imported lazily.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import resource
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probes.device import Device
from probes.errors import ProbeError
from probes.vocabulary import DeviceKind
from probes.xla_devices import HpuDevice, NeuronDevice, XlaDevice

__all__ = [
    "DEVICE_KINDS",
    "CpuDevice",
    "CudaDevice",
    "Device",
    "HpuDevice",
    "NeuronDevice",
    "XlaDevice",
    "detect_device",
]

_GIB = 2.0**30
_PROC_STATUS = Path("/proc/self/status")
_MEMINFO = Path("/proc/meminfo")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_RESET_PEAK_RSS = "5"  # clear_refs value that resets VmHWM to the current RSS (Linux >= 4.0)


class CpuDevice(Device):
    """The host CPU. Peak memory is the process's resident set above what it held when the
    device was created (so the torch runtime's own few hundred MiB are not counted as the
    step's memory).

    On Linux the peak is VmHWM from /proc/self/status, and ``reset_peak_memory`` restarts it
    by writing ``5`` to /proc/self/clear_refs; where either fails the peak is the process's
    lifetime ``ru_maxrss`` (which cannot be reset) above the same baseline.
    """

    def __init__(self) -> None:
        import torch

        super().__init__(torch.device("cpu"), "cpu")
        self._baseline_gib = _kib_field_gib(_PROC_STATUS, "VmRSS") or _maxrss_gib()

    def reset_peak_memory(self) -> None:
        """Restart the peak at the current resident set (where the kernel allows it)."""
        with contextlib.suppress(OSError):
            _CLEAR_REFS.write_text(_RESET_PEAK_RSS)

    def peak_memory_gib(self) -> float | None:
        """Peak resident memory since the last reset, above the creation-time baseline."""
        peak = _kib_field_gib(_PROC_STATUS, "VmHWM") or _maxrss_gib()
        return max(0.0, peak - self._baseline_gib)

    def total_memory_gib(self) -> float | None:
        """MemTotal from /proc/meminfo where available."""
        return _meminfo_gib("MemTotal")


def _maxrss_gib() -> float:
    """Lifetime peak RSS of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1.0 if sys.platform == "darwin" else 1024.0
    return peak * scale / _GIB


def _meminfo_gib(key: str) -> float | None:
    """A ``kB`` field of /proc/meminfo in GiB (``MemTotal``); None where unknown."""
    return _kib_field_gib(_MEMINFO, key)


def _kib_field_gib(path: Path, key: str) -> float | None:
    """A ``kB`` field of a /proc file in GiB; None where there is no such file or field."""
    try:
        with path.open() as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024 / _GIB
    except OSError:
        return None
    return None


class CudaDevice(Device):
    """An NVIDIA (or ROCm) GPU through torch.cuda; utilization through NVML when present."""

    kind = DeviceKind.CUDA
    autocast_device_type = "cuda"

    def __init__(self, index: int = 0) -> None:
        import torch

        super().__init__(torch.device("cuda", index), torch.cuda.get_device_name(index))
        self._torch: Any = torch
        self._index = index
        self._nvml_handle: Any = None
        if _has_module("pynvml"):
            try:
                pynvml = importlib.import_module("pynvml")
                pynvml.nvmlInit()
                self._nvml_handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except Exception:  # noqa: BLE001 - NVML is optional; any failure means "no reading"
                self._nvml_handle = None

    def synchronize(self) -> None:
        self._torch.cuda.synchronize(self._index)

    def reset_peak_memory(self) -> None:
        self._torch.cuda.reset_peak_memory_stats(self._index)

    def peak_memory_gib(self) -> float | None:
        return float(self._torch.cuda.max_memory_allocated(self._index)) / _GIB

    def total_memory_gib(self) -> float | None:
        return float(self._torch.cuda.get_device_properties(self._index).total_memory) / _GIB

    def utilization_pct(self) -> float | None:
        if self._nvml_handle is None:
            return None
        pynvml = importlib.import_module("pynvml")
        return float(pynvml.nvmlDeviceGetUtilizationRates(self._nvml_handle).gpu)

    def supports_tf32(self) -> bool:
        return self._capability_major() >= 8

    def enable_tf32(self, enabled: bool) -> None:
        self._torch.backends.cuda.matmul.allow_tf32 = enabled
        self._torch.backends.cudnn.allow_tf32 = enabled

    def cudnn_benchmark(self) -> bool:
        return bool(self._torch.backends.cudnn.benchmark)

    def set_cudnn_benchmark(self, enabled: bool) -> None:
        self._torch.backends.cudnn.benchmark = enabled

    def supports_bf16(self) -> bool:
        """Compute capability 8 (Ampere) or newer."""
        return self._capability_major() >= 8

    def _capability_major(self) -> int:
        return int(self._torch.cuda.get_device_capability(self._index)[0])


def _has_module(name: str) -> bool:
    """True when ``name`` is imported already (a test's fake counts) or importable."""
    if sys.modules.get(name) is not None:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _module_missing(module: str) -> Callable[[], str | None]:
    """A check that says why ``module`` cannot be imported (None when it can)."""
    def missing() -> str | None:
        if _has_module(module):
            return None
        try:
            importlib.import_module(module)
        except ImportError as exc:
            return f"{module} is not importable: {exc}"
        return None
    return missing


def _cuda_missing() -> str | None:
    import torch

    return None if torch.cuda.is_available() else "torch.cuda.is_available() is False"


@dataclass(frozen=True)
class _Runtime:
    """How to open one kind of device; ``missing`` says why it is not there (None: it is)."""

    factory: Callable[[], Device]
    missing: Callable[[], str | None]


_RUNTIMES: dict[DeviceKind, _Runtime] = {
    DeviceKind.HPU: _Runtime(HpuDevice, _module_missing("habana_frameworks")),
    DeviceKind.NEURON: _Runtime(NeuronDevice, _module_missing("torch_neuronx")),
    DeviceKind.XLA: _Runtime(XlaDevice, _module_missing("torch_xla")),
    DeviceKind.CUDA: _Runtime(CudaDevice, _cuda_missing),
    DeviceKind.CPU: _Runtime(CpuDevice, lambda: None),
}

# The kinds detect_device accepts, in the order it tries them without a preference.
DEVICE_KINDS: tuple[DeviceKind, ...] = tuple(DeviceKind)


def detect_device(prefer: str | None = None) -> Device:
    """The best device this machine has: Gaudi, Neuron, TPU, CUDA, else the CPU.

    ``prefer`` (cpu, cuda, xla, hpu, neuron; usually ``ADVISOR_PROBE_DEVICE``) opens that
    runtime or raises ProbeError saying why not: a probe asked for a Trainium must never
    quietly measure the CPU instead.
    """
    if prefer is None:
        kind = next(k for k in DEVICE_KINDS if _RUNTIMES[k].missing() is None)
        return _RUNTIMES[kind].factory()
    if prefer not in DEVICE_KINDS:
        raise ProbeError(f"ADVISOR_PROBE_DEVICE={prefer!r} is not a device kind; "
                         f"use one of {', '.join(DEVICE_KINDS)}")
    runtime = _RUNTIMES[DeviceKind(prefer)]
    why = runtime.missing()
    if why is not None:
        raise ProbeError(f"ADVISOR_PROBE_DEVICE={prefer} but {why}")
    try:
        return runtime.factory()
    except (ImportError, RuntimeError, OSError) as exc:
        raise ProbeError(f"ADVISOR_PROBE_DEVICE={prefer} but its device did not open: "
                         f"{type(exc).__name__}: {exc}") from exc
