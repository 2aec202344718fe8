"""The device seam: one small class per kind of device the harness can run on.

``detect_device()`` picks what the machine has: Gaudi (``habana_frameworks``), TPU
(``torch_xla``), CUDA, else the CPU. Each device synchronizes, reports and resets peak
memory, and reports utilization where the hardware says (NVML through ``pynvml``).
torch is imported lazily.
"""

from __future__ import annotations

import importlib
import importlib.util
import resource
import sys
from typing import Any

__all__ = ["CpuDevice", "CudaDevice", "Device", "HpuDevice", "XlaDevice", "detect_device"]

_GIB = 2.0**30


class Device:
    """A place to run the step. Subclasses override what their hardware can report.

    ``kind`` is ``cpu``, ``cuda``, ``xla`` or ``hpu``; ``torch_device`` is what tensors are
    moved to; ``autocast_device_type`` is the ``device_type`` for ``torch.autocast``.
    """

    kind = "cpu"
    autocast_device_type = "cpu"

    def __init__(self, torch_device: Any, name: str) -> None:
        self.torch_device = torch_device
        self.name = name

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


class CpuDevice(Device):
    """The host CPU; peak memory is the process's peak resident set size."""

    def __init__(self) -> None:
        import torch

        super().__init__(torch.device("cpu"), "cpu")

    def peak_memory_gib(self) -> float | None:
        """Peak RSS of this process (Linux reports KiB, macOS bytes)."""
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        scale = 1.0 if sys.platform == "darwin" else 1024.0
        return peak * scale / _GIB

    def total_memory_gib(self) -> float | None:
        """MemTotal from /proc/meminfo where available."""
        return _meminfo_gib("MemTotal")


def _meminfo_gib(key: str) -> float | None:
    try:
        with open("/proc/meminfo") as handle:
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
        self._index = index
        self._nvml_handle: Any = None
        if importlib.util.find_spec("pynvml") is not None:
            try:
                pynvml = importlib.import_module("pynvml")
                pynvml.nvmlInit()
                self._nvml_handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except Exception:  # noqa: BLE001 - NVML is optional; any failure means "no reading"
                self._nvml_handle = None

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize(self._index)

    def reset_peak_memory(self) -> None:
        import torch

        torch.cuda.reset_peak_memory_stats(self._index)

    def peak_memory_gib(self) -> float | None:
        import torch

        return float(torch.cuda.max_memory_allocated(self._index)) / _GIB

    def total_memory_gib(self) -> float | None:
        import torch

        return float(torch.cuda.get_device_properties(self._index).total_memory) / _GIB

    def utilization_pct(self) -> float | None:
        if self._nvml_handle is None:
            return None
        pynvml = importlib.import_module("pynvml")
        return float(pynvml.nvmlDeviceGetUtilizationRates(self._nvml_handle).gpu)

    def supports_tf32(self) -> bool:
        import torch

        return bool(torch.cuda.get_device_capability(self._index)[0] >= 8)

    def enable_tf32(self, enabled: bool) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = enabled
        torch.backends.cudnn.allow_tf32 = enabled


class XlaDevice(Device):
    """A TPU (or other XLA device) through torch_xla; ``synchronize`` marks the step."""

    kind = "xla"
    autocast_device_type = "xla"

    def __init__(self) -> None:
        xm = importlib.import_module("torch_xla.core.xla_model")
        super().__init__(xm.xla_device(), "xla")
        self._xm = xm

    def synchronize(self) -> None:
        self._xm.mark_step()
        self._xm.wait_device_ops()

    def peak_memory_gib(self) -> float | None:
        info = self._xm.get_memory_info(self.torch_device)
        used = info.get("bytes_used") or info.get("kb_total", 0) - info.get("kb_free", 0)
        return float(used) / _GIB if used else None


class HpuDevice(Device):
    """An Intel Gaudi card through habana_frameworks (``torch.hpu``)."""

    kind = "hpu"
    autocast_device_type = "hpu"

    def __init__(self) -> None:
        import torch

        importlib.import_module("habana_frameworks.torch.core")
        super().__init__(torch.device("hpu"), "hpu")
        self._hpu: Any = getattr(torch, "hpu")  # noqa: B009 - added by habana_frameworks

    def synchronize(self) -> None:
        self._hpu.synchronize()

    def reset_peak_memory(self) -> None:
        self._hpu.reset_peak_memory_stats()

    def peak_memory_gib(self) -> float | None:
        return float(self._hpu.max_memory_allocated()) / _GIB


def detect_device(prefer: str | None = None) -> Device:
    """The best device this machine has (or ``prefer``: cpu, cuda, xla, hpu)."""
    import torch

    if prefer == "cpu":
        return CpuDevice()
    if prefer in (None, "hpu") and importlib.util.find_spec("habana_frameworks") is not None:
        return HpuDevice()
    if prefer in (None, "xla") and importlib.util.find_spec("torch_xla") is not None:
        return XlaDevice()
    if prefer in (None, "cuda") and torch.cuda.is_available():
        return CudaDevice()
    return CpuDevice()
