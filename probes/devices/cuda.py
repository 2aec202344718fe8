"""An NVIDIA (or ROCm) GPU as a device, through torch.cuda; utilization through NVML (pynvml)
where it is installed. torch is imported when the device is opened."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

from probes.devices.seam import Device
from probes.vocabulary import DeviceKind

__all__ = ["CudaDevice"]

_GIB = 2.0**30


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
