"""A tiny entrypoint workload for probe tests: a two-layer MLP with knobs for faults.

``build(hidden=.., oom_above=N)`` makes a step that raises torch.OutOfMemoryError for batches
larger than N (a simulated memory limit); ``loader_delay_s`` makes the real loader slow;
``crash=True`` makes the step raise an ordinary error. ``clock`` (a ``FakeClock``) makes each
step cost simulated seconds: ``step_s`` is (seconds per step, seconds per sample), advanced on
that clock by the forward pass, and the slow loader sleeps on it too; timings then depend on
the code under test, not on how busy the machine is. ``jitter`` (0 to 1) scales each simulated
step by a seeded random factor in [1 - jitter, 1 + jitter]: a noisy machine, reproducibly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import torch

from probes.workload import BuiltWorkload


class SimulatedClock(Protocol):
    """What the workload needs of a fake clock: moving it forward."""

    def advance(self, seconds: float) -> None: ...


def build(hidden: int = 64, features: int = 32, oom_above: int | None = None,
          loader_delay_s: float = 0.0, crash: bool = False, clock: SimulatedClock | None = None,
          step_s: tuple[float, float] = (0.02, 0.0002), jitter: float = 0.0) -> BuiltWorkload:
    """The workload; see the module docstring for the knobs."""
    torch.manual_seed(0)
    noise = random.Random(0)
    sleep = clock.advance if clock is not None else time.sleep
    model = torch.nn.Sequential(
        torch.nn.Linear(features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if oom_above is not None and batch_size > oom_above:
            raise torch.OutOfMemoryError(f"simulated: batch {batch_size} > {oom_above}")
        return (torch.randn(batch_size, features, device=device),
                torch.randint(0, 10, (batch_size,), device=device))

    def loss_fn(net: torch.nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        if crash:
            raise ValueError("simulated crash in the training step")
        x, y = batch
        if oom_above is not None and x.shape[0] > oom_above:
            raise torch.OutOfMemoryError("simulated")
        if clock is not None:
            factor = 1.0 + jitter * noise.uniform(-1.0, 1.0) if jitter else 1.0
            clock.advance((step_s[0] + step_s[1] * x.shape[0]) * factor)
        return torch.nn.functional.cross_entropy(net(x), y)

    def make_loader(batch_size: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        ready = make_batch(batch_size, "cpu")
        for _ in range(1000):
            if loader_delay_s:
                sleep(loader_delay_s)
            yield ready

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn,
                         make_loader=make_loader)


def build_hang(started: str | None = None, **_options: Any) -> BuiltWorkload:
    """A workload whose building never finishes (for timeout tests); creates the file
    ``started`` first, when given (the process is past its imports then)."""
    if started:
        Path(started).touch()
    while True:
        time.sleep(1.0)


def build_exit(**_options: Any) -> BuiltWorkload:
    """A workload that kills its process while building (a harness crash: no result)."""
    import os

    os._exit(3)
