"""Training steps on fake tensors: the steps that ``memory_trace`` and ``op_profile`` observe,
each through its own dispatch mode and phase callback, in one pass (``step_trace``).

The step is the probe harness's (``probes/train_step.py``): AdamW(lr=1e-4),
``zero_grad(set_to_none=True)``, the forward under autocast at the workload's precision
(bf16/fp16; none for fp32 and tf32), ``loss.backward()``, ``optimizer.step()``. The model is
built once; the first step allocates Adam's state, and each further step is a steady one, one
per batch size traced. ``device="cuda"`` applies CUDA's autocast
op lists and attention kernels (``advisor.profiling._cuda_emulation``); ``"cpu"`` the CPU's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext, suppress
from dataclasses import dataclass, replace
from typing import Any

from advisor.spec import Precision
from probes import BuiltWorkload, WorkloadRecipe, build_workload

__all__ = ["PHASES", "STEP_ERRORS", "FakeStep", "autocast_for", "fake_build",
           "fake_grouped_mm", "preload_torch", "run_fake_steps"]

# Errors torch raises when a model cannot run on the meta device or fake tensors.
STEP_ERRORS = (RuntimeError, NotImplementedError, TypeError, ValueError, AttributeError,
               IndexError)

# Phases, in order, for step 0 (set-up) and steps 1 and 2.
PHASES = ("batch", "ready", "start", "forward", "backward", "optimizer step", "done")


def preload_torch() -> None:
    """Import torch, where installed, before a time limit on the user's code starts: its import
    takes seconds on a cold machine and is not the model's work, and a timer that cut it off
    would leave torch half-initialized for the rest of the process (the next import fails:
    'cannot initialize type ... already defined')."""
    with suppress(ImportError):  # the profiling that follows says how to install it
        import torch  # noqa: F401


@dataclass
class FakeStep:
    """What a phase callback may look at: the built model's trainable parameters, the
    optimizer (None when nothing trains) and the batch size of the step running."""

    params: list[Any]
    optimizer: Any
    batch_size: int = 0


@contextmanager
def fake_build() -> Iterator[None]:
    """While a model is built on fake tensors, what its constructor may read of values:

    - sequences it makes from Python numbers (``torch.arange``, ``linspace``, ``logspace``, as
      in ``[x.item() for x in torch.linspace(0, drop_path_rate, depth)]`` of timm and Hugging
      Face vision models) are real, so ``item()`` and ``tolist()`` answer; they are small;
    - weight initialisers that branch on the values they drew (torch's rejection-sampling
      ``trunc_normal_``, used by ViT, Swin and ConvNeXt implementations) leave the tensor as it
      is, as torch does for meta tensors;
    - ``model.to(dtype)`` works (pure-bf16 training): torch swaps fake parameters in place
      with ``torch.utils.swap_tensors``, which refuses tensors the fake mode's converter
      memoizes by weak reference; the parameters are forgotten by that memo first.

    Both swaps are process-wide while the block runs, like ``cuda_autocast``."""
    import torch.nn.init as init
    import torch.utils

    name = "_no_grad_trunc_normal_"
    original = getattr(init, name, None)
    if original is not None:  # a torch without it: nothing to replace
        setattr(init, name, lambda tensor, *_args, **_kwargs: tensor)
    swap = torch.utils.swap_tensors

    def forgetting_swap(first: Any, second: Any) -> None:
        _forget_memoized(first, second)
        swap(first, second)  # type: ignore[no-untyped-call]

    torch.utils.swap_tensors = forgetting_swap  # type: ignore[assignment]
    try:
        with _real_sequences():
            yield
    finally:
        torch.utils.swap_tensors = swap
        if original is not None:
            setattr(init, name, original)


def _forget_memoized(*tensors: Any) -> None:
    """Drop ``tensors`` from their fake mode's converter memo (a weak-value dictionary)."""
    for tensor in tensors:
        converter = getattr(getattr(tensor, "fake_mode", None), "fake_tensor_converter", None)
        memo = getattr(converter, "tensor_memo", None)
        if memo is not None:
            for key in [k for k, v in list(memo.items()) if v is tensor]:
                del memo[key]


_REAL_SEQUENCE_MAX = 1 << 16  # elements: longer sequences stay fake (they hold memory)


def _real_sequences() -> AbstractContextManager[Any]:
    """A torch-function mode under which ``arange``/``linspace``/``logspace`` of plain numbers
    (up to ``_REAL_SEQUENCE_MAX`` elements) are real tensors, and so is whatever is computed
    from real tensors only (``split``, ``tolist``, ``item``, arithmetic); the rest stays fake."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_flatten

    sequences = {torch.arange, torch.linspace, torch.logspace}

    class RealSequences(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            del types
            kwargs = kwargs or {}
            tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor)]
            from_real = bool(tensors) and not any(isinstance(t, FakeTensor) for t in tensors)
            if from_real or (not tensors and func in sequences
                             and func(*args, **kwargs).numel() <= _REAL_SEQUENCE_MAX):
                with unset_fake_temporarily():
                    return func(*args, **kwargs)
            return func(*args, **kwargs)

    return RealSequences()


def fake_grouped_mm() -> AbstractContextManager[Any]:
    """A dispatch mode (to enter above the fake mode) under which ``_grouped_mm`` (the experts
    of mixture-of-experts layers) takes any floating dtype, as torch's CPU and CUDA kernels
    do; torch's own fake kernel checks for the bf16-only fast path, so a model with fp32
    weights (fp32, or autocast's fp32 master weights) would not trace. Only the output's
    shape is made; a dispatch mode also sees the calls of backward and of recomputation."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    grouped = torch.ops.aten._grouped_mm.default  # noqa: SLF001

    class GroupedMM(TorchDispatchMode):  # type: ignore[misc,no-untyped-call]
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            del types
            kwargs = kwargs or {}
            return (_grouped_mm_output(*args, **kwargs) if func is grouped
                    else func(*args, **kwargs))

    return GroupedMM()  # type: ignore[no-untyped-call]


def _grouped_mm_output(a: Any, b: Any, offs: Any = None, bias: Any = None,
                       out_dtype: Any = None) -> Any:
    del bias
    if a.dim() == 2:
        size = (offs.size(0), a.size(0), b.size(1)) if b.dim() == 2 else (a.size(0), b.size(-1))
    else:
        size = (a.size(1), b.size(1)) if b.dim() == 2 else (a.size(0), a.size(1), b.size(-1))
    return a.new_empty(size, dtype=out_dtype or a.dtype)


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


def run_fake_steps(recipe: WorkloadRecipe, precision: Precision, batch_sizes: Sequence[int], *,
                   device: str, foreach: bool | None,
                   observers: Sequence[AbstractContextManager[Any]] = (),
                   on_phase: Callable[[int, str, FakeStep], None],
                   after: Callable[[BuiltWorkload, FakeStep], None] | None = None) -> str:
    """Build ``recipe`` once under ``FakeTensorMode`` with ``observers`` (dispatch modes,
    entered in order) active, run one set-up step and then one steady step per batch size of
    ``batch_sizes``, calling ``on_phase(step, phase, state)`` before each phase of ``PHASES``.
    Returns the autocast op lists applied.

    Step 0 is ``batch`` (the first batch is made) and ``ready`` (the optimizer exists); step 1,
    the set-up step, and step 2, the first steady step, both run at ``batch_sizes[0]`` on that
    batch; step ``k > 2`` runs at ``batch_sizes[k - 2]`` and starts with ``batch`` (a new batch
    replaces the previous one). Each of steps 1... runs ``start``, ``forward``, ``backward``,
    ``optimizer step`` and ``done`` (after the optimizer step). A steady step sees what the
    second step of a fresh model at its batch size sees: the weights, its batch, the previous
    step's gradients and the optimizer state. ``state.batch_size`` is the running step's batch.
    ``after(built, state)``, when given, runs last, inside the fake mode and the observers but
    outside the CUDA emulation (the CPU's attention and dropout kernels).

    Raises ProbeError when the workload cannot be built and whatever the model raises when
    its step cannot run on fake tensors; ValueError when ``batch_sizes`` is empty.
    """
    if not batch_sizes:
        raise ValueError("batch_sizes must name at least one batch size")
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from advisor.profiling._cuda_emulation import cuda_attention, cuda_dropout

    autocast, lists = autocast_for(precision, device)
    with FakeTensorMode(allow_non_fake_inputs=True), fake_grouped_mm(), ExitStack() as modes:
        for observer in observers:
            modes.enter_context(observer)
        with fake_build():
            built = build_workload(replace(recipe, batch_size=batch_sizes[0]))
        model = built.model
        if hasattr(model, "train"):
            model.train()
        params = [p for p in model.parameters() if p.requires_grad]
        state = FakeStep(params, None, batch_sizes[0])
        on_phase(0, "batch", state)
        batch = built.make_batch(batch_sizes[0], "cpu")
        if params:
            state.optimizer = torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
        on_phase(0, "ready", state)
        with ExitStack() as emulation:
            if device == "cuda":
                emulation.enter_context(cuda_attention())
                emulation.enter_context(cuda_dropout())
            for step, batch_size in enumerate((batch_sizes[0], *batch_sizes), start=1):
                if step > 2:
                    state.batch_size = batch_size
                    on_phase(step, "batch", state)
                    batch = built.make_batch(batch_size, "cpu")
                _train_step(built, batch, state, step, autocast, on_phase)
        del batch, params
        if after is not None:
            after(built, state)
        del built, model, state
    return lists


def _train_step(built: BuiltWorkload, batch: Any, state: FakeStep, step: int,
                autocast: Callable[[], AbstractContextManager[Any]],
                on_phase: Callable[[int, str, FakeStep], None]) -> None:
    """One training step as the probe harness runs it, announcing each phase."""
    on_phase(step, "start", state)
    if state.optimizer is not None:
        state.optimizer.zero_grad(set_to_none=True)
    on_phase(step, "forward", state)
    with autocast():
        loss = built.loss_fn(built.model, batch)
    on_phase(step, "backward", state)
    loss.backward()
    on_phase(step, "optimizer step", state)
    if state.optimizer is not None:
        state.optimizer.step()
    del loss
    on_phase(step, "done", state)
