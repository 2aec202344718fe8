"""Operator classes: which kind of kernel an aten operator runs, one table for every layer.

The probe harness sums a profiled step's device time by these classes
(``ProbeResult.op_class_seconds``) and ``advisor.profiling.op_profile`` sums a traced step's
FLOPs and bytes by them; both classify with ``classify_op``, so the two agree on every
operator. Standard library only.
"""

from __future__ import annotations

import enum

__all__ = ["OpClass", "classify_op"]


class OpClass(enum.StrEnum):
    """What kind of kernel an operator runs; each class has its own learned efficiency."""

    MATMUL = "matmul"
    CONVOLUTION = "convolution"
    ATTENTION = "attention"
    NORMALIZATION = "normalization"
    ELEMENTWISE = "elementwise"
    REDUCTION = "reduction"
    EMBEDDING = "embedding"
    OPTIMIZER = "optimizer"
    OTHER = "other"


_CLASS_PATTERNS: tuple[tuple[OpClass, tuple[str, ...]], ...] = (
    (OpClass.ATTENTION, ("scaled_dot_product", "flash_attention", "efficient_attention",
                         "cudnn_attention")),
    (OpClass.CONVOLUTION, ("convolution", "conv1d", "conv2d", "conv3d", "conv_transpose")),
    (OpClass.ELEMENTWISE, ("thnn_fused",)),  # the gate arithmetic of LSTM/GRU cells on CUDA
    # recurrent layers (oneDNN's and cuDNN's fused ones, and aten::lstm / gru / rnn_* as the
    # outermost operator a profile sees): their time is the gate matmuls, step after step
    (OpClass.MATMUL, ("addmm", "mm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "dot",
                      "addmv", "mv", "grouped_mm", "rnn_layer", "cudnn_rnn", "miopen_rnn",
                      "lstm", "gru", "rnn_tanh", "rnn_relu")),
    (OpClass.NORMALIZATION, ("batch_norm", "layer_norm", "group_norm", "rms_norm",
                             "instance_norm")),
    (OpClass.EMBEDDING, ("embedding", "index_select", "gather", "scatter", "index_put",
                         "index_add", "index", "take", "one_hot")),
    (OpClass.REDUCTION, ("softmax", "nll_loss", "cross_entropy", "sum", "mean", "amax",
                         "amin", "max", "min", "var", "std", "norm", "logsumexp", "cumsum",
                         "argmax", "argmin", "pool", "prod")),
    (OpClass.OTHER, ("_to_copy", "copy", "clone", "cat", "stack", "contiguous", "fill",
                     "zero", "ones", "full", "arange", "rand", "constant_pad", "split")),
)
_EXACT_STARTS = ("mm", "bmm", "dot", "mv", "index", "take", "max", "min", "sum", "mean",
                 "prod", "norm", "copy", "clone", "cat", "stack", "zero", "ones", "full")
_FREE = ("empty", "new_empty", "lift_fresh", "_local_scalar_dense", "detach", "alias",
         "_unsafe_view", "view", "as_strided", "set_", "resize_", "sym_", "is_same_size",
         "_has_compatible_shallow_copy_type")


def classify_op(name: str) -> OpClass | None:
    """The class of the aten operator ``name`` (``mm``, ``aten::native_layer_norm``,
    ``aten::addmm.default``, ...), or None for operators that launch no kernel (views,
    allocation, metadata)."""
    base = name.split("::")[-1].split(".")[0].lstrip("_").removesuffix("_")
    if any(base.startswith(free.lstrip("_")) for free in _FREE):
        return None
    for op_class, patterns in _CLASS_PATTERNS:
        for pattern in patterns:
            stripped = pattern.lstrip("_")
            if pattern in _EXACT_STARTS or stripped in _EXACT_STARTS:
                if base == stripped or base.startswith(stripped + "_"):
                    return op_class
            elif stripped in base:
                return op_class
    return OpClass.ELEMENTWISE
