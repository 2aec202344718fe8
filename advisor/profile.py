"""Workload profile: FLOPs per sample, parameters and memory at the batch size.

Measured locally with torch (FLOP counter on the meta device); no GPU needed. Cached by the
spec's fingerprint so ``recommend`` only pays for torch the first time.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WorkloadProfile"]


@dataclass(frozen=True)
class WorkloadProfile:
    """What one training sample costs, independent of where it runs.

    ``flops_per_sample`` counts forward + backward. Memory figures are bytes for the whole
    model (weights, gradients, optimizer state) and per sample (activations kept for backward),
    so the need on a device holding ``b`` samples is ``fixed_bytes + b * activation_bytes_per_sample``.
    ``method`` says how it was obtained (``flop_counter:meta``, ``user``, ...).
    """

    flops_per_sample: float
    params: int
    weight_bytes: int
    gradient_bytes: int
    optimizer_bytes: int
    activation_bytes_per_sample: int
    method: str

    @property
    def fixed_bytes(self) -> int:
        """Bytes held regardless of batch: weights, gradients and optimizer state."""
        return self.weight_bytes + self.gradient_bytes + self.optimizer_bytes

    def memory_gib(self, samples_per_device: int) -> float:
        """GiB one device needs to train ``samples_per_device`` samples per step."""
        total = self.fixed_bytes + samples_per_device * self.activation_bytes_per_sample
        return total / 2**30
