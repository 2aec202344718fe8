"""A BERT-base-like encoder (Devlin et al. 2018) in plain torch.

Options: ``hidden`` 768, ``layers`` 12, ``heads`` 12, ``ffn`` 3072, ``seq_len`` 128, ``vocab``
30522, ``dropout`` 0.1 (residual and embedding), ``attention_dropout`` 0.0 (0 keeps the
fused attention kernel and its small memory), ``task`` ``mlm`` (masked-LM head tied to the
word embeddings, logits for every position as in Hugging Face's ``BertForMaskedLM``, 15% of
positions scored) or ``classification`` (pooler on the first token and a ``num_labels``
head). At the defaults the MLM model has 109,514,298 parameters.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models._text import SelfAttention, text_model_options

__all__ = ["Bert", "build"]

_MASK_FRACTION = 0.15
_IGNORE = -100


class EncoderLayer(nn.Module):
    """Post-LayerNorm transformer encoder layer: attention, then a GELU feed-forward."""

    def __init__(self, hidden: int, heads: int, ffn: int, dropout: float,
                 attention_dropout: float) -> None:
        super().__init__()
        self.attention = SelfAttention(hidden, heads, dropout=attention_dropout, causal=False)
        self.norm1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ffn = nn.Sequential(nn.Linear(hidden, ffn), nn.GELU(), nn.Linear(ffn, hidden))
        self.norm2 = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.drop(self.attention(x)))
        out: torch.Tensor = self.norm2(x + self.drop(self.ffn(x)))
        return out


class Bert(nn.Module):
    """Word + position + segment embeddings, encoder layers, and a task head."""

    def __init__(self, *, hidden: int, layers: int, heads: int, ffn: int, seq_len: int,
                 vocab: int, dropout: float, attention_dropout: float, task: str,
                 num_labels: int) -> None:
        super().__init__()
        self.task = task
        self.words = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(max(512, seq_len), hidden)
        self.segments = nn.Embedding(2, hidden)
        self.embed_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(hidden, heads, ffn, dropout, attention_dropout) for _ in range(layers))
        if task == "mlm":
            self.head: nn.Module = nn.Sequential(
                nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=1e-12))
            self.decoder_bias = nn.Parameter(torch.zeros(vocab))
        else:
            self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh(), nn.Dropout(dropout),
                                      nn.Linear(hidden, num_labels))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Logits: ``(batch, seq, vocab)`` for MLM, ``(batch, num_labels)`` for classification."""
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.words(ids) + self.positions(positions) + self.segments(torch.zeros_like(ids))
        x = self.drop(self.embed_norm(x))
        for layer in self.layers:
            x = layer(x)
        if self.task == "mlm":
            return F.linear(self.head(x), self.words.weight, self.decoder_bias)
        logits: torch.Tensor = self.head(x[:, 0])
        return logits


def build(**options: Any) -> BuiltWorkload:
    """A BERT encoder with synthetic token batches and its task's cross-entropy loss."""
    opts = text_model_options("bert", options)
    model = Bert(**opts)
    vocab, length, task = opts["vocab"], opts["seq_len"], opts["task"]
    labels = opts["num_labels"]

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, length), device=device)
        if task != "mlm":
            return ids, torch.randint(0, labels, (batch_size,), device=device)
        scored = torch.rand(batch_size, length, device=device) < _MASK_FRACTION
        return ids, torch.where(scored, ids, torch.full_like(ids, _IGNORE))

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, targets = batch
        logits = net(ids)
        if task == "mlm":
            return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=_IGNORE)
        return F.cross_entropy(logits, targets)

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
