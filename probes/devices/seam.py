"""The device seam's contract: what the harness asks of a device, with no-op defaults."""

from __future__ import annotations

from typing import Any

from pricing import accelerator_for_device
from probes.vocabulary import DeviceKind

__all__ = ["Device"]


class Device:
    """A place to run the step. Subclasses override what their hardware can report.

    ``kind`` is ``cpu``, ``cuda``, ``xla`` (TPU), ``hpu`` (Gaudi) or ``neuron`` (Trainium,
    Inferentia); ``name`` is the device as its runtime reports it; ``torch_device`` is what
    tensors are moved to; ``autocast_device_type`` is the ``device_type`` for
    ``torch.autocast``. Not thread-safe: one harness drives one device.
    """

    kind: DeviceKind = DeviceKind.CPU
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

    def cudnn_benchmark(self) -> bool:
        """True when cuDNN autotunes convolutions (``torch.backends.cudnn.benchmark``, as the
        process has it: an entrypoint may set it on import); False where there is no cuDNN."""
        return False

    def set_cudnn_benchmark(self, enabled: bool) -> None:
        """Switch cuDNN convolution autotuning on or off (ignored where there is no cuDNN)."""
        del enabled

    def supports_bf16(self) -> bool:
        """True when the device computes in bfloat16 natively (False on the CPU)."""
        return False
