"""Torch helpers of the local profile: one counted forward + backward (FLOPs and the bytes
autograd saves), FLOP formulas the counter lacks, parameter counts (torch imported inside
each function)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from probes import BuiltWorkload

__all__ = ["SavedBytes", "StepCount", "count_step", "extra_flop_formulas", "identity",
           "parameters", "reread_tensors", "rnn_flops", "rnn_kernels"]


@dataclass(frozen=True, slots=True)
class StepCount:
    """One forward + backward: its FLOPs, those of convolutions, and the bytes of the distinct
    storages autograd saved for backward."""

    flops: int
    conv_flops: int
    saved_bytes: int


def count_step(built: BuiltWorkload, batch_size: int, *, device: str,
               autocast_dtype: Any) -> StepCount:
    """Count one forward (under CPU autocast to ``autocast_dtype``; None: no autocast) and
    backward of ``built`` at ``batch_size``, its batch made on ``device``, with torch's
    ``FlopCounterMode`` and ``extra_flop_formulas``. Gradients accumulate into the model's."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    batch = built.make_batch(batch_size, device)
    saver = SavedBytes()
    with torch.autograd.graph.saved_tensors_hooks(saver.pack, identity), \
            FlopCounterMode(display=False, custom_mapping=extra_flop_formulas()) as counter:
        with torch.autocast("cpu", dtype=autocast_dtype or torch.bfloat16,
                            enabled=autocast_dtype is not None):
            loss = built.loss_fn(built.model, batch)
        loss.backward()
    conv = sum(n for op, n in counter.get_flop_counts().get("Global", {}).items()
               if "convolution" in str(op))
    return StepCount(flops=counter.get_total_flops(), conv_flops=conv,
                     saved_bytes=saver.nbytes)


class SavedBytes:
    """Sums the bytes of distinct storages autograd saves for backward."""

    def __init__(self) -> None:
        self.storages: dict[int, Any] = {}

    def pack(self, tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        self.storages[id(storage)] = storage  # keeps it alive, so ids stay unique
        return tensor

    @property
    def nbytes(self) -> int:
        return sum(int(s.nbytes()) for s in self.storages.values())


def extra_flop_formulas() -> dict[Any, Any]:
    """FLOP formulas for kernels torch's counter does not know: the fused (flash) attention
    kernels torch runs on CPU tensors, the grouped matmul of mixture-of-experts layers and the
    fused recurrent layers (LSTM, GRU, RNN) of oneDNN on the CPU and cuDNN on CUDA.

    Attention is counted the way the scaling-law literature does (Kaplan et al. 2020,
    table 1): the two attention matmuls, halved under a causal mask (a fused kernel skips
    the masked blocks), and backward = 2 x forward (the scores a fused kernel recomputes in
    backward are not counted, like activation recomputation). A grouped matmul multiplies each
    row (or contraction slice) of its first operand by one group's matrix: 2 x the first
    operand's elements x the output columns, whichever group each row belongs to.
    """
    import torch
    from torch.utils import flop_counter

    aten = torch.ops.aten
    sdpa_flop_count: Callable[..., int] = flop_counter.sdpa_flop_count

    def attention(query: Any, key: Any, value: Any, is_causal: bool) -> int:
        flops = int(sdpa_flop_count(query, key, value))
        return flops // 2 if is_causal else flops

    def forward(query: Any, key: Any, value: Any, dropout_p: float = 0.0,
                is_causal: bool = False, **kwargs: Any) -> int:
        del dropout_p, kwargs
        return attention(query, key, value, is_causal)

    def backward(grad_out: Any, query: Any, key: Any, value: Any, out: Any, logsumexp: Any,
                 dropout_p: float, is_causal: bool, **kwargs: Any) -> int:
        del grad_out, out, logsumexp, dropout_p, kwargs
        return 2 * attention(query, key, value, is_causal)

    def grouped_mm(a_shape: Any, b_shape: Any, *args: Any, **kwargs: Any) -> int:
        del args, kwargs
        return 2 * int(math.prod(a_shape)) * int(b_shape[-1])

    def rnn(input_shape: Any, weights: Any, *args: Any, **kwargs: Any) -> int:
        del kwargs
        return rnn_flops(input_shape, [weights, *args[:1]])

    def rnn_backward(input_shape: Any, weights: Any, *args: Any, **kwargs: Any) -> int:
        del kwargs
        return 2 * rnn_flops(input_shape, [weights, *args[:1]])

    # The kernels' names start with "_" but they are the ops torch dispatches to.
    return {aten._scaled_dot_product_flash_attention_for_cpu: forward,  # noqa: SLF001
            aten._scaled_dot_product_flash_attention_for_cpu_backward: backward,  # noqa: SLF001
            aten._grouped_mm: grouped_mm,  # noqa: SLF001
            aten.mkldnn_rnn_layer: rnn, aten.mkldnn_rnn_layer_backward: rnn_backward,
            aten._cudnn_rnn: rnn, aten._cudnn_rnn_backward: rnn_backward}  # noqa: SLF001


def rnn_flops(input_shape: Any, weights: Any) -> int:
    """FLOPs of a fused recurrent layer's forward over its input (``(steps, batch, features)``
    or batch first, or packed ``(tokens, features)``): every token of every layer and
    direction multiplies its input and its hidden state by the gate matrices, 2 x tokens x the
    elements of the matrices. ``weights``: oneDNN's input and hidden matrices (two shapes), or
    cuDNN's list of every layer's weights first (its 2-D shapes are the matrices, the 1-D ones
    biases). Backward (the gradients of the inputs, the hidden states and the matrices) is
    twice that. The gates' element-wise work is not counted, as for any layer."""
    tokens = int(math.prod(input_shape[:-1]))
    first = weights[0]
    shapes = first if first and isinstance(first[0], tuple | list) else weights[:2]
    return 2 * tokens * sum(int(math.prod(shape)) for shape in shapes if len(shape) == 2)


def rnn_kernels(name: str, args: Any, kwargs: Any) -> int | None:
    """Kernels a fused recurrent layer launches the way cuDNN runs it: one input projection for
    all steps, then a recurrent matmul and a fused gate kernel per time step, in order (its
    backward: the same per step, and the weight and input gradients once each); None for any
    other operator (one kernel). oneDNN's layer always takes its input time first (torch
    transposes a batch-first one before the call); cuDNN's as ``batch_first`` says."""
    base = name.split("::")[-1].split(".")[0]
    if base not in ("mkldnn_rnn_layer", "mkldnn_rnn_layer_backward", "_cudnn_rnn",
                    "_cudnn_rnn_backward"):
        return None
    shape = tuple(getattr(args[0] if args else kwargs.get("input"), "shape", ()))
    at = {"_cudnn_rnn": 10, "_cudnn_rnn_backward": 14}.get(base)
    batch_first = at is not None and bool(kwargs.get("batch_first",
                                                     len(args) > at and args[at]))
    steps = int(shape[1] if batch_first and len(shape) == 3 else shape[0]) if shape else 1
    return 2 * steps + (2 if base.endswith("backward") else 1)


# Training batch norm on CUDA runs in two passes over the activations (PyTorch's
# aten/src/ATen/native/cuda/Normalization.cu: ``batch_norm_stats`` then ``batch_norm_elemt``
# forward, ``batch_norm_backward_reduce`` then ``batch_norm_backward_elemt`` backward): the
# first pass reads what the second reads again. Per operator: the positional index of its
# ``training`` flag (None: always training) and of the tensors the first pass reads.
_TWO_PASS: dict[str, tuple[int | None, tuple[int, ...]]] = {
    "native_batch_norm": (5, (0,)),
    "_native_batch_norm_legit": (5, (0,)),
    "_native_batch_norm_legit_functional": (5, (0,)),
    "native_batch_norm_backward": (7, (0, 1)),
}


def reread_tensors(name: str, args: Any, kwargs: Any) -> list[Any]:
    """The tensors an operator reads once more than its inputs and outputs say, as CUDA runs
    it: a training batch norm's input (its statistics pass) and its backward's output
    gradient and input (its reduction pass); [] for any other operator."""
    base = name.split("::")[-1].split(".")[0]
    found = _TWO_PASS.get(base)
    if found is None:
        return []
    training_at, reread = found
    if training_at is not None:
        training = kwargs.get("training", kwargs.get("train", args[training_at]
                                                     if len(args) > training_at else True))
        if not training:
            return []
    return [args[i] for i in reread if i < len(args) and hasattr(args[i], "numel")]


def identity(tensor: Any) -> Any:
    return tensor


def parameters(model: Any) -> tuple[int, int]:
    """Parameter count and bytes of parameters plus buffers (shared tensors counted once)."""
    params = list(_iter(model, "parameters"))
    buffers = list(_iter(model, "buffers"))
    count = sum(int(p.numel()) for p in params)
    nbytes = sum(int(t.numel()) * int(t.element_size()) for t in params + buffers)
    return count, nbytes


def _iter(model: Any, what: str) -> Iterator[Any]:
    method = getattr(model, what, None)
    return iter(method()) if callable(method) else iter(())
