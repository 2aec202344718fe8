"""The device seam: one small class per kind of device the harness can run on, which one this
machine has, and the checks that a measurement ran on the offer's accelerator.

Every device names itself as its runtime reports it (``name``: ``NVIDIA H100 80GB HBM3``,
``TPU v5 lite``, ``GAUDI2``, ``trn1``, ``cpu``) and, through ``pricing``'s device-name table,
as the catalog names it (``accelerator``: ``H100-SXM``; None for the CPU and for devices the
table does not know). A measurement is evidence only for that accelerator.

- ``seam``: ``Device``, the contract (what the harness asks of a device, no-op defaults);
- ``cpu``, ``cuda``, ``xla``: the devices (``xla`` also holds Neuron and Gaudi);
- ``detect``: ``detect_device`` and ``DEVICE_KINDS``;
- ``check``: ``checked``, ``rechecked``, ``result_accelerator``: results against their offers.

torch and the accelerator runtimes are imported only when a device is opened, and each
module here only when one of its names is first read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probes._lazy import lazy_exports

if TYPE_CHECKING:
    from probes.devices.check import (
        checked,
        device_mismatch,
        rechecked,
        result_accelerator,
    )
    from probes.devices.cpu import CpuDevice
    from probes.devices.cuda import CudaDevice
    from probes.devices.detect import DEVICE_KINDS, detect_device
    from probes.devices.seam import Device
    from probes.devices.xla import HpuDevice, NeuronDevice, XlaDevice

__all__ = [
    "DEVICE_KINDS",
    "CpuDevice",
    "CudaDevice",
    "Device",
    "HpuDevice",
    "NeuronDevice",
    "XlaDevice",
    "checked",
    "detect_device",
    "device_mismatch",
    "rechecked",
    "result_accelerator",
]

_HOME = {
    "DEVICE_KINDS": "detect", "detect_device": "detect", "CpuDevice": "cpu", "CudaDevice": "cuda",
    "Device": "seam", "HpuDevice": "xla", "NeuronDevice": "xla", "XlaDevice": "xla",
    "checked": "check", "device_mismatch": "check", "rechecked": "check",
    "result_accelerator": "check",
}
__getattr__, __dir__ = lazy_exports(__name__, _HOME, globals(), __all__)
