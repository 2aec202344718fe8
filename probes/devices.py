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
import os
import resource
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pricing import accelerator_for_device
from probes.errors import ProbeError

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


class Device:
    """A place to run the step. Subclasses override what their hardware can report.

    ``kind`` is ``cpu``, ``cuda``, ``xla`` (TPU), ``hpu`` (Gaudi) or ``neuron`` (Trainium,
    Inferentia); ``name`` is the device as its runtime reports it; ``torch_device`` is what
    tensors are moved to; ``autocast_device_type`` is the ``device_type`` for
    ``torch.autocast``. Not thread-safe: one harness drives one device.
    """

    kind = "cpu"
    autocast_device_type = "cpu"

    def __init__(self, torch_device: Any, name: str) -> None:
        self.torch_device = torch_device
        self.name = name

    @property
    def accelerator(self) -> str | None:
        """The catalog accelerator this device is (``H100-SXM``); None for the CPU and for
        devices the device-name table does not know (they are named as reported)."""
        return accelerator_for_device(self.kind, self.name, self.total_memory_gib())

    def synchronize(self) -> None:
        """Wait until queued work has finished (a no-op on cpu)."""

    def reset_peak_memory(self) -> None:
        """Start a new peak-memory window (where the device supports it)."""

    def peak_memory_gib(self) -> float | None:
        """Peak memory used since the last reset, in GiB; None when unknown."""
        return None

    def total_memory_gib(self) -> float | None:
        """Memory of the device in GiB; None when unknown."""
        return None

    def utilization_pct(self) -> float | None:
        """Current busy percentage of the device; None when the device does not report it."""
        return None

    def supports_tf32(self) -> bool:
        """True when matmuls can run in TF32 on this device."""
        return False

    def enable_tf32(self, enabled: bool) -> None:
        """Switch TF32 matmuls on or off (ignored where unsupported)."""
        del enabled

    def supports_bf16(self) -> bool:
        """True when the device computes in bfloat16 natively (False on the CPU)."""
        return False


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

    kind = "cuda"
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

    def supports_bf16(self) -> bool:
        """Compute capability 8 (Ampere) or newer."""
        return self._capability_major() >= 8

    def _capability_major(self) -> int:
        return int(self._torch.cuda.get_device_capability(self._index)[0])


# Errors a runtime query (a name source, a memory reading) raises when it has nothing to say:
# no metadata server, an older runtime without the call, an attribute dict without the key.
_QUERY_ERRORS = (ImportError, AttributeError, KeyError, IndexError, OSError, RuntimeError,
                 ValueError, TypeError)


def _tpu_device_kind() -> str:
    """The PJRT device kind (``TPU v5 lite``) where the runtime's attributes carry it."""
    runtime = importlib.import_module("torch_xla.runtime")
    return str(runtime.global_runtime_device_attributes()[0]["device_kind"])


def _tpu_accelerator_type_metadata() -> str:
    """``ACCELERATOR_TYPE`` (``v5litepod-8``) of the TPU VM's ``tpu-env`` metadata."""
    tpu = importlib.import_module("torch_xla._internal.tpu")
    return str(tpu.get_tpu_env()["ACCELERATOR_TYPE"])


def _neuron_platform_target() -> str:
    """``torch_neuronx.utils.get_platform_target()`` (``trn1``, ``trn2``)."""
    target = importlib.import_module("torch_neuronx.utils").get_platform_target()
    return str(getattr(target, "value", target))


def _read_text(path: str) -> str:
    return Path(path).read_text()


def _xla_hardware(xm: Any, device: Any) -> str:
    """The XLA hardware type of ``device`` (``TPU``, ``CUDA``, ``NEURON``)."""
    return str(xm.xla_device_hw(device))


# Where a device's name comes from, most specific first; the XLA hardware type (``TPU``) is
# the last resort of both. ``torch_xla._internal.tpu.version()`` is not a source: it says 5
# for both v5e and v5p.
_XLA_NAME_SOURCES: tuple[Callable[[], str | None], ...] = (
    _tpu_device_kind,
    partial(os.environ.get, "TPU_ACCELERATOR_TYPE"),  # set on GKE and when metadata is skipped
    _tpu_accelerator_type_metadata,
)
_NEURON_NAME_SOURCES: tuple[Callable[[], str | None], ...] = (
    _neuron_platform_target,
    partial(_read_text, "/sys/devices/virtual/dmi/id/product_name"),  # EC2 type: trn1.32xlarge
    partial(_read_text, "/sys/devices/virtual/neuron_device/neuron0/info/architecture/device_name"),
)


def _first_name(sources: tuple[Callable[[], str | None], ...]) -> str | None:
    """The first non-empty answer of ``sources``; a source that fails has nothing to say."""
    for source in sources:
        try:
            name = source()
        except _QUERY_ERRORS:
            continue
        if name and name.strip():
            return name.strip()
    return None


class XlaDevice(Device):
    """A TPU (or other XLA device) through torch_xla; ``synchronize`` marks the step.

    ``name`` is the TPU device kind (``TPU v5 lite``) where the runtime reports it, else the
    TPU VM's accelerator type (``v5litepod-8``), else the XLA hardware type (``TPU``), else
    ``xla``.
    """

    kind = "xla"
    autocast_device_type = "xla"
    _name_sources = _XLA_NAME_SOURCES

    def __init__(self) -> None:
        xm = importlib.import_module("torch_xla.core.xla_model")
        device = xm.xla_device()
        hardware = partial(_xla_hardware, xm, device)
        super().__init__(device, _first_name((*self._name_sources, hardware)) or self.kind)
        self._xm = xm

    def synchronize(self) -> None:
        self._xm.mark_step()
        self._xm.wait_device_ops()

    def peak_memory_gib(self) -> float | None:
        info = self._memory_info()
        used = info.get("bytes_used") or (info.get("kb_total", 0) - info.get("kb_free", 0)) * 1024
        return float(used) / _GIB if used else None

    def total_memory_gib(self) -> float | None:
        """``bytes_limit`` (newer torch_xla) or ``kb_total`` of the device's memory info."""
        info = self._memory_info()
        total = info.get("bytes_limit") or info.get("kb_total", 0) * 1024
        return float(total) / _GIB if total else None

    def supports_bf16(self) -> bool:
        return True

    def _memory_info(self) -> dict[str, Any]:
        try:
            return dict(self._xm.get_memory_info(self.torch_device))
        except _QUERY_ERRORS:
            return {}


class NeuronDevice(XlaDevice):
    """An AWS Trainium or Inferentia chip through torch-neuronx, which runs on the XLA device.

    ``name`` is the Neuron platform (``trn1``) as torch-neuronx reports it, else the EC2
    instance type (``trn1.32xlarge``), else the driver's device name (``Trainium1``), else the
    XLA hardware type; ``synchronize`` marks the step like a TPU.
    """

    kind = "neuron"
    _name_sources = _NEURON_NAME_SOURCES

    def __init__(self) -> None:
        importlib.import_module("torch_neuronx")
        super().__init__()


class HpuDevice(Device):
    """An Intel Gaudi card through habana_frameworks (``torch.hpu``); ``name`` is
    ``torch.hpu.get_device_name()`` (``GAUDI2``)."""

    kind = "hpu"
    autocast_device_type = "hpu"

    def __init__(self) -> None:
        import torch

        importlib.import_module("habana_frameworks.torch.core")
        hpu: Any = getattr(torch, "hpu")  # noqa: B009 - added by habana_frameworks
        super().__init__(torch.device("hpu"), str(hpu.get_device_name()))
        self._hpu = hpu

    def synchronize(self) -> None:
        self._hpu.synchronize()

    def reset_peak_memory(self) -> None:
        self._hpu.reset_peak_memory_stats()

    def peak_memory_gib(self) -> float | None:
        return float(self._hpu.max_memory_allocated()) / _GIB

    def total_memory_gib(self) -> float | None:
        """The total of ``torch.hpu.mem_get_info()`` (free, total)."""
        try:
            return float(self._hpu.mem_get_info()[1]) / _GIB
        except _QUERY_ERRORS:
            return None

    def supports_bf16(self) -> bool:
        return True


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


_RUNTIMES: dict[str, _Runtime] = {
    "hpu": _Runtime(HpuDevice, _module_missing("habana_frameworks")),
    "neuron": _Runtime(NeuronDevice, _module_missing("torch_neuronx")),
    "xla": _Runtime(XlaDevice, _module_missing("torch_xla")),
    "cuda": _Runtime(CudaDevice, _cuda_missing),
    "cpu": _Runtime(CpuDevice, lambda: None),
}

# The kinds detect_device accepts, in the order it tries them without a preference.
DEVICE_KINDS = tuple(_RUNTIMES)


def detect_device(prefer: str | None = None) -> Device:
    """The best device this machine has: Gaudi, Neuron, TPU, CUDA, else the CPU.

    ``prefer`` (cpu, cuda, xla, hpu, neuron; usually ``ADVISOR_PROBE_DEVICE``) opens that
    runtime or raises ProbeError saying why not: a probe asked for a Trainium must never
    quietly measure the CPU instead.
    """
    if prefer is None:
        kind = next(k for k in DEVICE_KINDS if _RUNTIMES[k].missing() is None)
        return _RUNTIMES[kind].factory()
    runtime = _RUNTIMES.get(prefer)
    if runtime is None:
        raise ProbeError(f"ADVISOR_PROBE_DEVICE={prefer!r} is not a device kind; "
                         f"use one of {', '.join(DEVICE_KINDS)}")
    why = runtime.missing()
    if why is not None:
        raise ProbeError(f"ADVISOR_PROBE_DEVICE={prefer} but {why}")
    try:
        return runtime.factory()
    except (ImportError, RuntimeError, OSError) as exc:
        raise ProbeError(f"ADVISOR_PROBE_DEVICE={prefer} but its device did not open: "
                         f"{type(exc).__name__}: {exc}") from exc
