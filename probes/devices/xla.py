"""Devices behind XLA and Habana runtimes: TPU (``torch_xla``), Trainium and Inferentia
(``torch_neuronx``), Gaudi (``habana_frameworks``). Each names itself as its runtime reports
it; the runtimes are imported lazily."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from probes.devices.seam import Device
from probes.vocabulary import DeviceKind

__all__ = ["HpuDevice", "NeuronDevice", "XlaDevice"]

_GIB = 2.0**30


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

    kind = DeviceKind.XLA
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

    kind = DeviceKind.NEURON
    _name_sources = _NEURON_NAME_SOURCES

    def __init__(self) -> None:
        importlib.import_module("torch_neuronx")
        super().__init__()


class HpuDevice(Device):
    """An Intel Gaudi card through habana_frameworks (``torch.hpu``); ``name`` is
    ``torch.hpu.get_device_name()`` (``GAUDI2``)."""

    kind = DeviceKind.HPU
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
