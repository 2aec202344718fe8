"""The words every layer shares about a training step: its precision, the kinds of device it
runs on, and the form of a user entrypoint.

The ground floor of ``probes`` (standard library only): ``advisor.spec`` re-exports
``Precision``, the tuner's knobs, the harness, the launchers' runtime tables and the device seam
use these, so each fact is written once. Every enum is a ``StrEnum`` whose values are the
strings JSON documents and stores have always held.
"""

from __future__ import annotations

import enum
import re

__all__ = ["ENTRYPOINT_PATTERN", "DeviceKind", "Precision"]


class Precision(enum.StrEnum):
    """Numeric precision of the training step."""

    FP32 = "fp32"  # full single precision throughout
    TF32 = "tf32"  # fp32 tensors, matmuls on TF32 tensor cores (Ampere and later)
    BF16 = "bf16"  # bfloat16 autocast: fp32's range at half the width
    FP16 = "fp16"  # float16 autocast, with loss scaling against underflow

    @property
    def low_precision(self) -> bool:
        """True for bf16/fp16 autocast, which runs matmuls on tensor cores at half width."""
        return self in (Precision.BF16, Precision.FP16)


class DeviceKind(enum.StrEnum):
    """What the harness runs on (``ADVISOR_PROBE_DEVICE``), in the order ``detect_device``
    tries them without a preference: the rarest runtime first, the CPU last."""

    HPU = "hpu"        # Gaudi (habana_frameworks)
    NEURON = "neuron"  # Trainium, Inferentia (torch_neuronx)
    XLA = "xla"        # TPU (torch_xla)
    CUDA = "cuda"      # NVIDIA (or ROCm) GPUs
    CPU = "cpu"        # the host CPU, never a catalog accelerator


# ``package.module:function``: what a model.yaml's or a sweep.yaml's ``entrypoint`` must look like.
ENTRYPOINT_PATTERN = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
