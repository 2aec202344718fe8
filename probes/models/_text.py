"""What the text models share: their option check and multi-head self-attention."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.errors import ProbeError
from probes.models import check_builtin_options

__all__ = ["SelfAttention", "text_model_options"]


def text_model_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The built-in's options checked (``check_builtin_options``) and ``hidden`` divisible by
    ``heads``; ProbeError names both otherwise."""
    opts = check_builtin_options(model, options)
    if opts["hidden"] % opts["heads"]:
        raise ProbeError(f"model option 'hidden' of {model} ({opts['hidden']}) must be divisible "
                         f"by 'heads' ({opts['heads']})")
    return opts


class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused QKV projection and an output projection.

    Uses ``scaled_dot_product_attention`` (bidirectional, or causal when ``causal``).
    """

    def __init__(self, hidden: int, heads: int, *, dropout: float, causal: bool) -> None:
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.dropout = dropout
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, hidden // self.heads).unbind(2)
        y = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
            dropout_p=self.dropout if self.training else 0.0, is_causal=self.causal)
        out: torch.Tensor = self.out(y.transpose(1, 2).reshape(batch, length, hidden))
        return out

