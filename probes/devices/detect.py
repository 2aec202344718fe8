"""Which device this machine has: ``detect_device()`` picks Gaudi (``habana_frameworks``),
Trainium or Inferentia (``torch_neuronx``), TPU (``torch_xla``), CUDA, else the CPU, in the
order of ``DEVICE_KINDS``. A preferred runtime that is not there raises ProbeError instead of
falling back to the CPU. torch and the accelerator runtimes are imported lazily.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from probes.devices.cpu import CpuDevice
from probes.devices.cuda import CudaDevice, _has_module
from probes.devices.seam import Device
from probes.devices.xla import HpuDevice, NeuronDevice, XlaDevice
from probes.errors import ProbeError
from probes.vocabulary import DeviceKind

__all__ = ["DEVICE_KINDS", "detect_device"]


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
