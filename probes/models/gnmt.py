"""GNMT v2 (NVIDIA DeepLearningExamples, PyTorch/Translation/GNMT) in plain torch.

A reference model, built through the entrypoint ``probes.models.gnmt:build`` (not a
``builtin``): the shipped operator mix of Lambda's ``gnmt`` rows is traced from it. At the
defaults it has the reference implementation's 160,671,297 parameters: a shared 32,320-token
embedding of width 1024; an encoder of four LSTM layers of 1024 units (the first
bidirectional, the last two residual); a decoder whose first LSTM layer feeds normalized
Bahdanau attention over the encoder's outputs, then three LSTM layers (inputs concatenated
with the attention context, the last two residual) and a classifier over the vocabulary;
dropout 0.2; label-smoothed (0.1) cross-entropy.

Every LSTM layer runs as cuDNN runs one (``StepLSTM``): the input projection of all time steps
in one matrix product, then one step at a time the recurrent product of the four gates (one
``4H x H`` product) and the gates' element-wise work, so a traced step counts each time
step's work and kernels in order (cuDNN fuses a step's gate arithmetic into one kernel; this
runs it as nine). Options: ``vocab`` 32320, ``hidden`` 1024, ``layers`` 4
(per side), ``seq_len`` 25 (source and target tokens per sentence, all sentences that long),
``dropout`` 0.2.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models import check_options

__all__ = ["DEFAULTS", "Gnmt", "StepLSTM", "build"]

DEFAULTS: dict[str, Any] = {"vocab": 32320, "hidden": 1024, "layers": 4, "seq_len": 25,
                            "dropout": 0.2}
_MAXIMUM = {"vocab": 1_048_576, "hidden": 65536, "layers": 64, "seq_len": 4096}
_LABEL_SMOOTHING = 0.1


class StepLSTM(nn.Module):
    """One LSTM layer (optionally bidirectional) with ``nn.LSTM``'s parameters (names,
    shapes, two bias vectors per direction), run time step by time step on ``(time, batch,
    features)`` inputs; the output concatenates the directions."""

    def __init__(self, input_size: int, hidden: int, *, bidirectional: bool = False) -> None:
        super().__init__()
        self.hidden = hidden
        self.suffixes = ("", "_reverse") if bidirectional else ("",)
        bound = 1 / math.sqrt(hidden)
        for suffix in self.suffixes:
            for name, shape in (("weight_ih", (4 * hidden, input_size)),
                                ("weight_hh", (4 * hidden, hidden)),
                                ("bias_ih", (4 * hidden,)), ("bias_hh", (4 * hidden,))):
                param = nn.Parameter(torch.empty(shape))
                nn.init.uniform_(param, -bound, bound)
                self.register_parameter(f"{name}_l0{suffix}", param)

    def _direction(self, x: torch.Tensor, suffix: str) -> torch.Tensor:
        weight_hh = getattr(self, f"weight_hh_l0{suffix}")
        bias_hh = getattr(self, f"bias_hh_l0{suffix}")
        # one product for every step's input; unbound once (indexing it per step would make
        # the backward write a zero-padded copy of the whole sequence's gradient per step)
        inputs = F.linear(x, getattr(self, f"weight_ih_l0{suffix}"),
                          getattr(self, f"bias_ih_l0{suffix}")).unbind(0)
        h = inputs[0].new_zeros(x.shape[1], self.hidden)
        c = torch.zeros_like(h)
        steps = range(x.shape[0] - 1, -1, -1) if suffix else range(x.shape[0])
        outputs: list[torch.Tensor] = []
        for t in steps:
            gates = inputs[t] + F.linear(h, weight_hh, bias_hh)
            in_gate, forget, cell, out_gate = gates.chunk(4, dim=1)
            c = torch.sigmoid(forget) * c + torch.sigmoid(in_gate) * torch.tanh(cell)
            h = torch.sigmoid(out_gate) * torch.tanh(c)
            outputs.append(h)
        if suffix:
            outputs.reverse()
        return torch.stack(outputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = [self._direction(x, suffix) for suffix in self.suffixes]
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)


class BahdanauAttention(nn.Module):
    """Normalized additive attention: ``v . tanh(Wq q + Wk k + b)`` over every (target,
    source) pair, ``v`` rescaled to a learned norm; the context is the weighted keys."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.linear_q = nn.Linear(hidden, hidden, bias=False)
        self.linear_k = nn.Linear(hidden, hidden, bias=False)
        bound = 1 / math.sqrt(hidden)
        self.linear_att = nn.Parameter(torch.empty(hidden).uniform_(-bound, bound))
        self.normalize_scalar = nn.Parameter(torch.tensor([bound]))
        self.normalize_bias = nn.Parameter(torch.zeros(hidden))

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        q = self.linear_q(query).transpose(0, 1).unsqueeze(2)  # batch, target, 1, hidden
        k = self.linear_k(keys).transpose(0, 1).unsqueeze(1)  # batch, 1, source, hidden
        v = self.linear_att / self.linear_att.norm() * self.normalize_scalar
        scores = torch.matmul(torch.tanh(q + k + self.normalize_bias), v.to(q.dtype))
        weights = F.softmax(scores, dim=-1).to(keys.dtype)
        return torch.bmm(weights, keys.transpose(0, 1)).transpose(0, 1)


class Gnmt(nn.Module):
    """Encoder, attention decoder and classifier of GNMT v2 on time-major token ids."""

    def __init__(self, *, vocab: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)  # shared by encoder and decoder
        self.encoder = nn.ModuleList(
            [StepLSTM(hidden, hidden, bidirectional=True), StepLSTM(2 * hidden, hidden)]
            + [StepLSTM(hidden, hidden) for _ in range(layers - 2)])
        self.attention_rnn = StepLSTM(hidden, hidden)
        self.attention = BahdanauAttention(hidden)
        self.decoder = nn.ModuleList(StepLSTM(2 * hidden, hidden) for _ in range(layers - 1))
        self.classifier = nn.Linear(hidden, vocab)
        self.drop = nn.Dropout(dropout)

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Logits ``(target time, batch, vocab)`` for ``source`` and ``target`` ids."""
        x = self.encoder[1](self.drop(self.encoder[0](self.drop(self.embedding(source)))))
        for layer in self.encoder[2:]:
            x = x + layer(self.drop(x))
        y = self.attention_rnn(self.drop(self.embedding(target)))
        context = self.attention(y, x)
        y = self.decoder[0](torch.cat([self.drop(y), context], dim=2))
        for layer in self.decoder[1:]:
            y = y + layer(torch.cat([self.drop(y), context], dim=2))
        logits: torch.Tensor = self.classifier(self.drop(y))
        return logits


def build(**options: Any) -> BuiltWorkload:
    """GNMT v2 with synthetic sentence pairs of ``seq_len`` tokens a side and a
    label-smoothed cross-entropy; ModelOptionError names a bad option."""
    opts = check_options("gnmt", options, DEFAULTS, maximum=_MAXIMUM,
                         minimum={"layers": 2})
    length, vocab = opts.pop("seq_len"), opts["vocab"]
    model = Gnmt(**opts)

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randint(0, vocab, (length, batch_size), device=device),
                torch.randint(0, vocab, (length + 1, batch_size), device=device))

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        source, target = batch
        logits = net(source, target[:-1])
        return F.cross_entropy(logits.flatten(0, 1), target[1:].flatten(),
                               label_smoothing=_LABEL_SMOOTHING)

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
