"""Pieces shared by the text models: multi-head self-attention and a token loader."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["SelfAttention", "token_loader"]


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


def _zipf_weights(vocab: int) -> torch.Tensor:
    """Token frequencies falling as 1/rank, like natural-language text."""
    return 1.0 / torch.arange(1, vocab + 1, dtype=torch.float64)


def token_loader(
    batch_size: int, *, vocab: int, length: int,
    finish: Callable[[torch.Tensor, torch.Generator], tuple[torch.Tensor, torch.Tensor]],
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless CPU batches of ``(inputs, targets)``, built one sample at a time.

    Each sample draws ``length`` tokens from a Zipf-like distribution, then ``finish`` turns
    the tokens into one ``(inputs, targets)`` pair (masking for BERT, shifting for GPT-2).
    """
    gen = torch.Generator().manual_seed(0)
    weights = _zipf_weights(vocab)
    while True:
        inputs, targets = [], []
        for _ in range(batch_size):
            tokens = torch.multinomial(weights, length, replacement=True, generator=gen)
            x, y = finish(tokens, gen)
            inputs.append(x)
            targets.append(y)
        yield torch.stack(inputs), torch.stack(targets)
