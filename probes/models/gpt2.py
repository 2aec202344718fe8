"""A GPT-2-small-like causal decoder (Radford et al. 2019) in plain torch.

Options: ``hidden`` 768, ``layers`` 12, ``heads`` 12, ``seq_len`` 1024, ``vocab`` 50257,
``dropout`` 0.1 (residual and embedding), ``attention_dropout`` 0.0 (0 keeps the fused
attention kernel and its small memory). Pre-LayerNorm blocks, GELU (tanh) feed-forward of
4x hidden, output projection tied to the token embedding, next-token cross-entropy. At the
defaults it has the 124,439,808 parameters of GPT-2 small.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models._text import SelfAttention, text_model_options

__all__ = ["Gpt2", "build"]


class Block(nn.Module):
    """Pre-LayerNorm decoder block: causal attention, then a 4x GELU feed-forward."""

    def __init__(self, hidden: int, heads: int, dropout: float, attention_dropout: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden)
        self.attention = SelfAttention(hidden, heads, dropout=attention_dropout, causal=True)
        self.norm2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * hidden, hidden))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attention(self.norm1(x)))
        out: torch.Tensor = x + self.drop(self.mlp(self.norm2(x)))
        return out


class Gpt2(nn.Module):
    """Token + learned position embeddings, decoder blocks, final norm, tied LM head."""

    def __init__(self, *, hidden: int, layers: int, heads: int, seq_len: int, vocab: int,
                 dropout: float, attention_dropout: float) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max(1024, seq_len), hidden)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            Block(hidden, heads, dropout, attention_dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Next-token logits, ``(batch, seq, vocab)``."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.drop(self.tokens(ids) + self.positions(positions))
        for block in self.blocks:
            x = block(x)
        return F.linear(self.norm(x), self.tokens.weight)


def build(**options: Any) -> BuiltWorkload:
    """A GPT-2 decoder with synthetic token batches and the causal-LM loss."""
    opts = text_model_options("gpt2", options)
    model = Gpt2(**opts)
    vocab, length = opts["vocab"], opts["seq_len"]

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = torch.randint(0, vocab, (batch_size, length + 1), device=device)
        return tokens[:, :-1], tokens[:, 1:]

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, targets = batch
        return F.cross_entropy(net(ids).flatten(0, 1), targets.flatten())

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
