"""Two training steps on fake tensors: the one step that ``memory_trace`` and ``op_profile``
observe, each through its own dispatch mode and phase callback.

The step is the probe harness's (``probes/train_step.py``): AdamW(lr=1e-4),
``zero_grad(set_to_none=True)``, the forward under autocast at the workload's precision
(bf16/fp16; none for fp32 and tf32), ``loss.backward()``, ``optimizer.step()``. The first step
allocates Adam's state; the second is the steady one. ``device="cuda"`` applies CUDA's autocast
op lists and attention kernels (``advisor.profiling._cuda_emulation``); ``"cpu"`` the CPU's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from advisor.spec import Precision
from probes.workload import WorkloadRecipe, build_workload

__all__ = ["PHASES", "FakeStep", "autocast_for", "run_fake_steps", "value_free_init"]

# Phases, in order, for step 0 (set-up) and steps 1 and 2.
PHASES = ("batch", "ready", "start", "forward", "backward", "optimizer step", "done")


@dataclass
class FakeStep:
    """What a phase callback may look at: the built model's trainable parameters and the
    optimizer (None when nothing trains)."""

    params: list[Any]
    optimizer: Any


@contextmanager
def value_free_init() -> Iterator[None]:
    """While a model is built on fake tensors: weight initialisers that branch on the values
    they drew (torch's rejection-sampling ``trunc_normal_``, used by ViT, Swin and ConvNeXt
    implementations) leave the tensor as it is, as torch does for meta tensors; fake tensors
    have no values to branch on. Process-wide while the block runs, like ``cuda_autocast``."""
    import torch.nn.init as init

    name = "_no_grad_trunc_normal_"
    original = getattr(init, name, None)
    if original is None:  # a torch without it: nothing to replace
        yield
        return
    setattr(init, name, lambda tensor, *_args, **_kwargs: tensor)
    try:
        yield
    finally:
        setattr(init, name, original)


def autocast_for(precision: Precision,
                 device: str) -> tuple[Callable[[], AbstractContextManager[Any]], str]:
    """The forward's autocast block on ``device`` and which op lists it applies (``none``,
    ``cpu`` or ``cuda``; ``cpu`` too where this torch cannot emulate CUDA's lists)."""
    import torch

    dtype = {Precision.BF16: torch.bfloat16, Precision.FP16: torch.float16}.get(precision)
    if dtype is None:
        return nullcontext, "none"
    if device == "cpu":
        return lambda: torch.autocast("cpu", dtype=dtype), "cpu"
    try:
        from advisor.profiling._cuda_emulation import cuda_autocast

        with cuda_autocast(dtype):
            pass
    except (AttributeError, TypeError, RuntimeError):  # a torch without these library hooks
        return lambda: torch.autocast("cpu", dtype=dtype), "cpu"
    return lambda: cuda_autocast(dtype), "cuda"


def run_fake_steps(recipe: WorkloadRecipe, precision: Precision, batch_size: int, *,
                   device: str, foreach: bool | None,
                   observer: AbstractContextManager[Any] | None,
                   on_phase: Callable[[int, str, FakeStep], None]) -> str:
    """Build ``recipe`` at ``batch_size`` under ``FakeTensorMode`` with ``observer`` (a
    dispatch mode) active, and run two training steps, calling ``on_phase(step, phase,
    state)`` before each phase of ``PHASES`` (step 0: ``batch``, ``ready``; steps 1 and 2 the
    rest, ``done`` after the optimizer step). Returns the autocast op lists applied.

    Raises ProbeError when the workload cannot be built and whatever the model raises when
    its step cannot run on fake tensors.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from advisor.profiling._cuda_emulation import cuda_attention

    autocast, lists = autocast_for(precision, device)
    with FakeTensorMode(allow_non_fake_inputs=True), \
            cuda_attention() if device == "cuda" else nullcontext(), observer or nullcontext():
        with value_free_init():
            built = build_workload(replace(recipe, batch_size=batch_size))
        model = built.model
        if hasattr(model, "train"):
            model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        state = FakeStep(params, None)
        on_phase(0, "batch", state)
        batch = built.make_batch(batch_size, "cpu")
        if params:
            state.optimizer = torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
        on_phase(0, "ready", state)
        for step in (1, 2):
            on_phase(step, "start", state)
            if state.optimizer is not None:
                state.optimizer.zero_grad(set_to_none=True)
            on_phase(step, "forward", state)
            with autocast():
                loss = built.loss_fn(model, batch)
            on_phase(step, "backward", state)
            loss.backward()
            on_phase(step, "optimizer step", state)
            if state.optimizer is not None:
                state.optimizer.step()
            del loss
            on_phase(step, "done", state)
        del built, model, batch, params, state
    return lists
