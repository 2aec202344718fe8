"""One pass over a workload's training step on fake tensors for everything the cold profile
needs: the traced memory (``memory_trace``), the operator mix (``op_profile``), the FLOP
count (``profile``) and the operator names (``op_names``).

The model is built once, under ``FakeTensorMode`` with the memory tracker and the operator
recorder stacked as dispatch modes; one set-up step allocates Adam's state, and one steady step
runs per batch size either of them keeps (``fake_step.run_fake_steps``), with CUDA's semantics.
Each keeps what it would keep from a fresh model's second step at that batch size, so the
results are those of separate traces. The FLOP count then runs one forward + backward with
the CPU's semantics (``torch.autocast("cpu")``, the CPU's attention kernels) on the same model,
as ``profile`` counts on fake tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.profiling._torch_counting import StepCount, count_step, parameters
from advisor.profiling.fake_step import STEP_ERRORS, FakeStep, autocast_for, run_fake_steps
from advisor.profiling.memory_trace import MemoryCollector, TracedMemory
from advisor.profiling.op_names import NameCollector
from advisor.profiling.op_profile import TRACE_BATCHES, OpCollector, OpMix
from advisor.spec import Precision
from probes import BuiltWorkload, ProbeError, WorkloadRecipe, first_line

__all__ = ["CountedStep", "StepTrace", "trace_training_step"]


@dataclass(frozen=True, slots=True)
class CountedStep:
    """One forward + backward counted at ``batch_size`` on fake tensors with the CPU's
    semantics, and the model's parameter count and bytes of parameters plus buffers."""

    count: StepCount
    batch_size: int
    params: int
    weight_bytes: int


@dataclass(frozen=True, slots=True)
class StepTrace:
    """What one pass traced; a part is None where it was not asked for or its steps did not
    run. ``problem`` is the first line of the error that stopped the pass ("" when none)."""

    memory: TracedMemory | None
    op_mix: OpMix | None
    counted: CountedStep | None
    op_names: frozenset[str] | None = None
    problem: str = ""


def trace_training_step(recipe: WorkloadRecipe, precision: Precision, *,
                        memory_batches: tuple[int, int] | None, op_mix: bool,
                        count_batch: int | None, op_names: bool = False) -> StepTrace:
    """Trace ``recipe`` at ``precision`` once: the CUDA peak memory at ``memory_batches`` (None:
    not traced), the operator mix when ``op_mix`` (at ``memory_batches`` when those are traced,
    else at ``op_profile.TRACE_BATCHES``: each new batch size costs one more step), and one
    counted forward + backward at ``count_batch`` (None: not counted); with ``op_names``, the
    aten operator names of its steps (``op_names.NameCollector``, for the portability check).

    Errors of the model (it does not build or its step does not run on fake tensors) end the
    pass and leave the parts not finished None; the caller traces those on their own to get
    their errors. Raises ImportError without torch; ValueError when nothing is asked for.
    """
    if memory_batches is None and not op_mix:
        raise ValueError("trace_training_step needs memory_batches or op_mix")
    ops = OpCollector(memory_batches or TRACE_BATCHES) if op_mix else None
    memory = MemoryCollector(memory_batches) if memory_batches is not None else None
    names = NameCollector() if op_names else None
    wanted = [*(ops.batches if ops else ()), *sorted(memory_batches or ())]
    batches = list(dict.fromkeys(wanted))  # each batch size once, the operator mix's first
    collectors: list[Any] = [c for c in (memory, ops, names) if c is not None]
    counted: list[CountedStep] = []

    def on_phase(step: int, phase: str, state: FakeStep) -> None:
        for collector in collectors:
            collector.on_phase(step, phase, state)

    def count(built: BuiltWorkload, _state: FakeStep) -> None:
        if count_batch is not None:
            counted.extend(_count(built, count_batch, precision))

    problem = ""
    try:
        lists = run_fake_steps(recipe, precision, batches, device="cuda", foreach=True,
                               observers=[c.mode() for c in collectors], on_phase=on_phase,
                               after=count)
    except (ProbeError, *STEP_ERRORS) as exc:
        lists, problem = autocast_for(precision, "cuda")[1], first_line(exc)
    return StepTrace(memory=memory.result(lists) if memory is not None else None,
                     op_mix=ops.result() if ops is not None else None,
                     counted=counted[0] if counted else None,
                     op_names=names.result() if names is not None and not problem else None,
                     problem=problem)


def _count(built: BuiltWorkload, batch_size: int, precision: Precision) -> list[CountedStep]:
    """The counted forward + backward, or nothing where it fails (the caller counts again on
    its own, to try other devices and say why)."""
    import torch

    dtype = {Precision.BF16: torch.bfloat16, Precision.FP16: torch.float16}.get(precision)
    try:
        count = count_step(built, batch_size, device="cpu", autocast_dtype=dtype)
    except (ProbeError, AssertionError, *STEP_ERRORS):
        return []
    params, weight_bytes = parameters(built.model)
    return [CountedStep(count, batch_size, params, weight_bytes)]
