"""What a CUDA device would run, applied to fake CPU tensors (for the memory trace).

Three differences between a step on the CPU and on CUDA change what memory it holds and
which kernels it runs: the autocast op lists (``cuda_autocast``), the attention kernel
(``cuda_attention``) and the dropout kernel (``cuda_dropout``).

The trace runs on fake CPU tensors (a CPU build of torch cannot make fake CUDA tensors), so
``torch.autocast`` would apply the CPU op lists, which differ from CUDA's: on CUDA,
``layer_norm``, ``softmax``, ``log_softmax``, ``pow``, ``exp``, ``sum`` ... run in fp32 (their
outputs, often saved for backward, take twice the bytes); on the CPU they stay in bf16, while
the CPU runs some ops in fp32 that CUDA leaves alone (3-D pooling, padding, ``cross_entropy_loss``
as one op). ``cuda_autocast`` replaces the CPU autocast kernels, for the duration of a ``with``
block, with Python kernels that follow CUDA's lists (``ATen/autocast_mode.h`` of torch 2.13:
``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``, ``AT_FORALL_FP32_SET_OPT_DTYPE``,
``AT_FORALL_PROMOTE``), lower-precision casts of fp32 leaf weights cached for the block as
CUDA's ``cached_cast`` does. Ops with a CPU autocast kernel but none on CUDA run in their
inputs' dtypes, as on CUDA.

The override is process-wide while the block runs (torch's dispatcher has no per-thread
registration): do not train on the CPU with autocast in another thread meanwhile.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["CUDA_POLICY", "cuda_attention", "cuda_autocast", "cuda_dropout", "ops_without_policy"]

# op name -> CUDA autocast policy; "name.overload" where CUDA registers one overload only.
_LOWER = ("_convolution", "_convolution.deprecated", "conv1d", "conv2d", "conv3d", "conv_tbc",
          "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "convolution",
          "cudnn_convolution", "cudnn_convolution_transpose", "prelu", "addmm", "addmv", "addr",
          "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm", "baddbmm", "bmm",
          "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
          "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
          "_scaled_dot_product_flash_attention", "scaled_dot_product_attention")
_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
         "reciprocal", "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor",
         "pow.Scalar", "softplus", "layer_norm", "native_layer_norm", "rms_norm", "group_norm",
         "frobenius_norm.dim", "nuclear_norm", "nuclear_norm.dim", "cosine_similarity",
         "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
         "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
         "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
         "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist",
         "pdist", "cdist", "renorm", "logsumexp", "upsample_nearest1d",
         "_upsample_nearest_exact1d", "upsample_nearest2d", "_upsample_nearest_exact2d",
         "upsample_nearest3d", "_upsample_nearest_exact3d", "upsample_linear1d",
         "upsample_bilinear2d", "_upsample_bilinear2d_aa", "upsample_trilinear3d",
         "upsample_bicubic2d", "_upsample_bicubic2d_aa",
         # CUDA bans binary_cross_entropy under autocast (it raises); fp32 keeps the trace going.
         "binary_cross_entropy",
         # fp32_append_dtype on CUDA: computed in fp32.
         "norm.Scalar", "norm.ScalarOpt_dim")
_FP32_SET_OPT_DTYPE = ("prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod",
                       "cumsum", "linalg_vector_norm", "linalg_matrix_norm",
                       "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList")
_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler",
            "index_put", "tensordot", "scatter_add")

CUDA_POLICY: dict[str, str] = {
    **dict.fromkeys(_LOWER, "lower"), **dict.fromkeys(_FP32, "fp32"),
    **dict.fromkeys(_FP32_SET_OPT_DTYPE, "fp32_set_opt_dtype"), **dict.fromkeys(_PROMOTE, "promote"),
}


# dispatch key -> (how many operators were registered, the answer then)
_REGISTERED: dict[str, tuple[int, frozenset[str]]] = {}


def _registered(dispatch_key: str) -> frozenset[str]:
    """Ops (``name`` or ``name.overload``) with a kernel of their own for ``dispatch_key``.

    Asked for every forward that ``cuda_autocast`` runs, so kept until a library registers
    more operators (an import of user code may); ``cuda_autocast``'s own kernels do not change
    what it uses (``CUDA_POLICY`` and the answer, together)."""
    import torch

    names = torch._C._dispatch_get_all_op_names()  # noqa: SLF001 - no public listing
    known = _REGISTERED.get(dispatch_key)
    if known is not None and known[0] == len(names):
        return known[1]
    found = frozenset(n.removeprefix("aten::") for n in names if n.startswith("aten::")
                      and torch._C._dispatch_has_kernel_for_dispatch_key(n, dispatch_key))  # noqa: SLF001
    _REGISTERED[dispatch_key] = (len(names), found)
    return found


def ops_without_policy() -> list[str]:
    """Ops this torch build autocasts on CUDA that ``CUDA_POLICY`` does not list (empty when
    the table matches the installed torch; a newer torch may add ops)."""
    return sorted(_registered("AutocastCUDA") - set(CUDA_POLICY))


def _overload(name: str) -> Any:
    import torch

    op_name, _, overload = name.partition(".")
    packet = getattr(torch.ops.aten, op_name)
    return getattr(packet, overload or "default")


class _Casts:
    """The casts of one autocast block: the policy kernels and CUDA's weight-cast cache."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype
        self._cache: dict[int, tuple[Any, Any]] = {}

    def _to(self, tensor: Any, dtype: Any) -> Any:
        import torch

        if not (isinstance(tensor, torch.Tensor) and tensor.is_floating_point()
                and tensor.dtype not in (dtype, torch.float64)):
            return tensor
        cacheable = (dtype == self.dtype and tensor.dtype == torch.float32
                     and tensor.requires_grad and tensor.is_leaf and not tensor._is_view())  # noqa: SLF001
        if not cacheable:
            return tensor.to(dtype)
        hit = self._cache.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        cast = tensor.to(dtype)
        self._cache[id(tensor)] = (tensor, cast)
        return cast

    def clear(self) -> None:
        """Drop the cached weight casts (CUDA does on leaving the outermost autocast)."""
        self._cache.clear()

    def kernel(self, op: Any, policy: str) -> Callable[..., Any]:
        """A Python kernel for the AutocastCPU key that applies ``policy`` and calls ``op``."""
        import torch
        from torch.utils._pytree import tree_flatten, tree_map

        exclude = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)  # noqa: SLF001
        dtype_index = next((i for i, a in enumerate(op._schema.arguments)  # noqa: SLF001
                            if a.name == "dtype"), None)

        autocast_key = torch._C.DispatchKey.AutocastCPU  # noqa: SLF001

        def run(keyset: Any, *args: Any, **kwargs: Any) -> Any:
            if policy == "none":
                # As if CPU autocast had no kernel here: ops this op calls are autocast again.
                return op.redispatch(keyset.remove(autocast_key), *args, **kwargs)
            with torch._C._ExcludeDispatchKeyGuard(exclude):  # noqa: SLF001
                tensors = [t for t in tree_flatten((args, kwargs))[0]
                           if isinstance(t, torch.Tensor) and t.is_floating_point()]
                if policy == "lower":
                    args, kwargs = tree_map(lambda t: self._to(t, self.dtype), (args, kwargs))
                elif policy == "fp32":
                    args, kwargs = tree_map(lambda t: self._to(t, torch.float32), (args, kwargs))
                elif policy == "promote" and tensors:
                    widest = max((t.dtype for t in tensors), key=_width)
                    args, kwargs = tree_map(lambda t: self._to(t, widest), (args, kwargs))
                elif policy == "fp32_set_opt_dtype":
                    args, kwargs = _set_opt_dtype(args, kwargs, dtype_index)
                return op(*args, **kwargs)

        return run


def _width(dtype: Any) -> int:
    import torch

    return {torch.float64: 3, torch.float32: 2}.get(dtype, 1)


def _set_opt_dtype(args: tuple[Any, ...], kwargs: dict[str, Any],
                   dtype_index: int | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """CUDA's fp32_set_opt_dtype: a floating first argument and no dtype given -> dtype=fp32."""
    import torch

    first = args[0] if args else None
    if dtype_index is None or not (isinstance(first, torch.Tensor) and first.is_floating_point()):
        return args, kwargs
    if len(args) > dtype_index:
        if args[dtype_index] is not None:
            return args, kwargs
        return (*args[:dtype_index], torch.float32, *args[dtype_index + 1:]), kwargs
    if kwargs.get("dtype") is not None:
        return args, kwargs
    return args, {**kwargs, "dtype": torch.float32}


@contextmanager
def cuda_autocast(dtype: Any) -> Iterator[None]:
    """``torch.autocast("cpu", dtype)`` with CUDA's op lists instead of the CPU's."""
    import torch

    casts = _Casts(dtype)
    library = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            # torch warns once when a kernel replaces a registered one: that is the point here.
            warnings.simplefilter("ignore", UserWarning)
            for name in sorted(set(CUDA_POLICY) | _registered("AutocastCPU")):
                try:
                    op = _overload(name)
                except AttributeError:  # an op this torch build does not have
                    continue
                library.impl(  # type: ignore[no-untyped-call]
                    name, casts.kernel(op, CUDA_POLICY.get(name, "none")), "AutocastCPU",
                    with_keyset=True)
        with torch.autocast("cpu", dtype=dtype):
            yield
    finally:
        casts.clear()
        library._destroy()  # type: ignore[no-untyped-call]  # noqa: SLF001 - unregisters now


_MAX_FUSED_HEAD_DIM = 256  # flash and memory-efficient attention take head dims up to 256


@contextmanager
def cuda_attention() -> Iterator[None]:
    """``scaled_dot_product_attention`` runs the kernel CUDA would choose, on fake CPU tensors
    (it changes which kernel runs, not the result's shape), for the duration of the block.

    On CUDA (sm80 and later) training attention takes flash or memory-efficient attention,
    which keep ``(batch, heads, length)`` log-sum-exp values for backward, with a mask and with
    dropout; on the CPU, dropout sends it to the unfused path that keeps the
    ``(batch, heads, length, length)`` score and dropout tensors. Here, 4-D inputs with one
    head dim of at most 256 and as many key as query heads take the CPU's fused kernel, given
    the same mask, dropout and causal flag; a mask that is learned (requires grad) takes
    memory-efficient attention, as on CUDA; the rest takes the unfused math path, as on CUDA.
    The kernel replaces the op's composite one in the dispatcher (after autocast's casts), so
    activation checkpointing's recomputation in backward takes it too. Process-wide while the
    block runs, like ``cuda_autocast``.
    """
    import torch

    library = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # it replaces a kernel, on purpose
            library.impl("scaled_dot_product_attention",  # type: ignore[no-untyped-call]
                         _attention, "CompositeImplicitAutograd")
        yield
    finally:
        library._destroy()  # type: ignore[no-untyped-call]  # noqa: SLF001 - unregisters now


def _attention(query: Any, key: Any, value: Any, attn_mask: Any = None, dropout_p: float = 0.0,
               is_causal: bool = False, *, scale: float | None = None,
               enable_gqa: bool = False) -> Any:
    """The attention kernel CUDA would take (see ``cuda_attention``)."""
    import torch

    aten = torch.ops.aten
    if not (query.dim() == key.dim() == value.dim() == 4 and query.shape[1] == key.shape[1]
            and query.shape[-1] == key.shape[-1] == value.shape[-1] <= _MAX_FUSED_HEAD_DIM):
        return aten._scaled_dot_product_attention_math(  # noqa: SLF001
            query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
            enable_gqa=enable_gqa)[0]
    if attn_mask is not None and attn_mask.requires_grad:
        # A learned bias as the mask (T5, Swin): flash attention takes no mask and the CPU
        # kernel gives it no gradient; CUDA runs memory-efficient attention, which does.
        bias = attn_mask.expand(*query.shape[:-1], key.shape[-2])
        return aten._scaled_dot_product_efficient_attention(  # noqa: SLF001
            query, key, value, bias, True, dropout_p, is_causal, scale=scale)[0]
    return aten._scaled_dot_product_flash_attention_for_cpu(  # noqa: SLF001
        query, key, value, dropout_p, is_causal, attn_mask=attn_mask, scale=scale)[0]


@contextmanager
def cuda_dropout() -> Iterator[None]:
    """``dropout`` runs CUDA's fused kernel on fake CPU tensors, for the duration of the block.

    torch's ``dropout`` (``ATen/native/Dropout.cpp``) takes ``native_dropout`` only where
    ``is_fused_kernel_acceptable`` holds: a CUDA (XPU, lazy, private-use) input, ``0 < p < 1``,
    not empty. Elsewhere, the CPU included, it composes ``bernoulli_`` into a noise tensor of
    the input's dtype, ``div_`` and ``mul``: three kernels forward and a ``mul`` backward, with
    the noise kept for backward. On CUDA one kernel draws the mask and scales the input (a
    one-byte mask kept for backward), and ``native_dropout_backward`` is one kernel. Training
    dropout with ``0 < p < 1`` on a non-empty input takes ``native_dropout`` here too; the
    rest does what torch's composite does (the input itself when not training, or ``p`` is 0,
    or it is empty; zeros when ``p`` is 1). In-place ``dropout_`` is composite on CUDA too.
    Process-wide while the block runs, like ``cuda_autocast``.
    """
    import torch

    library = torch.library.Library("aten", "IMPL")  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # it replaces a kernel, on purpose
            library.impl("dropout", _dropout,  # type: ignore[no-untyped-call]
                         "CompositeImplicitAutograd")
        yield
    finally:
        library._destroy()  # type: ignore[no-untyped-call]  # noqa: SLF001 - unregisters now


def _dropout(input: Any, p: float, train: bool) -> Any:  # noqa: A002 - aten's argument name
    """The dropout CUDA would run (see ``cuda_dropout``)."""
    import torch

    if train and 0 < p < 1 and input.numel() > 0:
        return torch.ops.aten.native_dropout(input, p, train)[0]
    if not train or p == 0 or input.numel() == 0:
        return input
    return input * torch.zeros((), dtype=input.dtype, device=input.device)
