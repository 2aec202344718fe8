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
``4H x H`` product) and one fused gate kernel; backward, per step one fused gate kernel and
one recurrent product, then the input and weight gradients of all steps in one product each,
so a traced step counts each time step's work and kernels in order. Options: ``vocab``
32320, ``hidden`` 1024, ``layers`` 4 (per side), ``seq_len`` 25 (source and target tokens
per sentence, all sentences that long), ``dropout`` 0.2, ``fp16_model`` false: with it the
model's weights (embedding, LSTMs, attention, classifier), and so every operator, are fp16, as
the reference's ``--math fp16`` runs it (``seq2seq/train/trainer.py``: apex ``amp.initialize``
at ``opt_level='O2'`` with ``keep_batchnorm_fp32=False`` and ``cast_model_outputs=float16``;
Lambda's logs print "Selected optimization level O2"); the fp32 master weights live in the
optimizer, and the loss takes the fp16 logits into an fp32 log-softmax as the reference's
``LabelSmoothing`` does (``log_softmax(x, dtype=torch.float32)``, one kernel on CUDA).
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
                            "dropout": 0.2, "fp16_model": False}
_MAXIMUM = {"vocab": 1_048_576, "hidden": 65536, "layers": 64, "seq_len": 4096}
_LABEL_SMOOTHING = 0.1


class StepLSTM(nn.Module):
    """One LSTM layer (optionally bidirectional) with ``nn.LSTM``'s parameters (names,
    shapes, two bias vectors per direction), run time step by time step on ``(time, batch,
    features)`` inputs as cuDNN runs a layer (``_CudnnLayer``); the output concatenates the
    directions."""

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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        names = ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
        outs = [_CudnnLayer.apply(  # type: ignore[no-untyped-call]
                    x, *(getattr(self, f"{name}_l0{suffix}") for name in names), bool(suffix))
                for suffix in self.suffixes]
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=2)


class _CudnnLayer(torch.autograd.Function):
    """One direction of an LSTM layer, its kernels in cuDNN's order (cuDNN's API splits a
    layer's training into ``cudnnRNNForward``, ``cudnnRNNBackwardData`` and
    ``cudnnRNNBackwardWeights``, the last taking the whole sequence's inputs and hidden
    states once):

    - forward: the input product of every step in one matrix product, then per step the
      recurrent product (``h @ W_hh^T``) and one fused gate kernel (biases, activations, cell
      and hidden state; it keeps the activated gates for backward);
    - backward (data): per step, from the last, one fused gate kernel (the gates' gradient)
      and the recurrent product of that gradient, accumulated into the previous step's output
      gradient by the product itself; then the input gradient of every step in one product;
    - backward (weights): one product each for ``W_ih`` and ``W_hh`` over every step and one
      sum for the biases, not a product and an addition per step as autograd would run the
      step-by-step graph.

    The gate kernels are torch's fused LSTM cell (``_thnn_fused_lstm_cell`` and its
    ``_backward_impl``, the CUDA kernels of ``ATen/native/cuda/RNN.cu``) on CUDA and fake
    tensors; on real CPU tensors (which have no such kernel) the same arithmetic, unfused.
    Under autocast the products and gates run in the autocast dtype.
    """

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w_ih: torch.Tensor, w_hh: torch.Tensor,
                b_ih: torch.Tensor, b_hh: torch.Tensor, reverse: bool) -> torch.Tensor:
        kind = x.device.type
        dtype = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype
        x, w_ih, w_hh, b_ih, b_hh = (t.to(dtype) for t in (x, w_ih, w_hh, b_ih, b_hh))
        steps, batch, hidden = x.shape[0], x.shape[1], w_hh.shape[1]
        inputs = torch.mm(x.flatten(0, 1), w_ih.t()).view(steps, batch, -1).unbind(0)
        h = x.new_zeros(batch, hidden)
        c = torch.zeros_like(h)
        order = range(steps - 1, -1, -1) if reverse else range(steps)
        states: list[torch.Tensor] = [h]  # in processing order, h0 first
        cells, spaces = [c], []
        for t in order:
            h, c, space = _cell(inputs[t], torch.mm(h, w_hh.t()), c, b_ih, b_hh)
            states.append(h)
            cells.append(c)
            spaces.append(space)
        # hidden states in time order, h0 where the recurrence starts: one copy, as ``y``
        stacked = torch.stack(states[:0:-1] + [states[0]] if reverse else states)
        ctx.save_for_backward(x, w_ih, w_hh, stacked, *cells, *spaces)
        ctx.reverse = reverse
        return stacked[:-1] if reverse else stacked[1:]

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, w_ih, w_hh, stacked, *rest = ctx.saved_tensors
        steps = x.shape[0]
        cells, spaces = rest[:steps + 1], rest[steps + 1:]
        grad = grad.to(x.dtype)
        order = list(range(steps - 1, -1, -1) if ctx.reverse else range(steps))
        grad_h = grad[order[-1]]
        grad_c: torch.Tensor | None = None
        gates: list[torch.Tensor] = [grad_h] * steps  # per time step
        for n in range(steps - 1, -1, -1):  # processing order, backwards
            t = order[n]
            gates[t], grad_c = _cell_backward(grad_h, grad_c, cells[n], cells[n + 1], spaces[n])
            if n:
                grad_h = torch.addmm(grad[order[n - 1]], gates[t], w_hh)
        grad_gates = torch.stack(gates).flatten(0, 1)  # (time x batch, 4H)
        previous = (stacked[1:] if ctx.reverse else stacked[:-1]).flatten(0, 1)
        grad_x = torch.mm(grad_gates, w_ih).view_as(x)
        grad_w_ih = torch.mm(grad_gates.t(), x.flatten(0, 1))
        grad_w_hh = torch.mm(grad_gates.t(), previous)
        grad_b = grad_gates.sum(0)
        return grad_x, grad_w_ih, grad_w_hh, grad_b, grad_b, None


def _fused(t: torch.Tensor) -> bool:
    """Whether ``t`` takes torch's fused LSTM cell kernels (CUDA, or traced as CUDA)."""
    from torch._subclasses.fake_tensor import is_fake

    return t.is_cuda or is_fake(t)


def _cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, c: torch.Tensor,
          b_ih: torch.Tensor, b_hh: torch.Tensor,
          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step's gates: (h, c, the activated gates ``[i, f, g, o]``)."""
    if _fused(input_gates):
        fused = torch.ops.aten._thnn_fused_lstm_cell  # noqa: SLF001 - CUDA's fused cell
        out: tuple[torch.Tensor, torch.Tensor, torch.Tensor] = fused(
            input_gates, hidden_gates, c, b_ih, b_hh)
        return out
    i, f, g, o = (input_gates + hidden_gates + b_ih + b_hh).chunk(4, dim=1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c = f * c + i * g
    return o * torch.tanh(c), c, torch.cat([i, f, g, o], dim=1)


def _cell_backward(grad_h: torch.Tensor, grad_c: torch.Tensor | None, c_before: torch.Tensor,
                   c_after: torch.Tensor, space: torch.Tensor,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradient of one step's gate pre-activations and of the cell state before it."""
    if grad_c is None:
        grad_c = torch.zeros_like(c_after)
    if _fused(space):
        gates, before, _ = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(  # noqa: SLF001
            grad_h, grad_c, c_before, c_after, space, False)
        return gates, before
    i, f, g, o = space.chunk(4, dim=1)
    tanh_c = torch.tanh(c_after)
    total = grad_c + grad_h * o * (1 - tanh_c * tanh_c)
    gates = torch.cat([total * g * i * (1 - i), total * c_before * f * (1 - f),
                       total * i * (1 - g * g), grad_h * tanh_c * o * (1 - o)], dim=1)
    return gates, total * f


class BahdanauAttention(nn.Module):
    """Normalized additive attention: ``v . tanh(Wq q + Wk k + b)`` over every (target,
    source) pair, ``v`` rescaled to a learned norm; the context is the weighted keys."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.linear_q = nn.Linear(hidden, hidden, bias=False)
        self.linear_k = nn.Linear(hidden, hidden, bias=False)
        bound = 1 / math.sqrt(hidden)
        self.linear_att = nn.Parameter(torch.empty(hidden).uniform_(-bound, bound))
        self.normalize_scalar = nn.Parameter(torch.full((1,), bound))
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
    length, vocab, fp16_model = opts.pop("seq_len"), opts["vocab"], opts.pop("fp16_model")
    model = Gnmt(**opts).half() if fp16_model else Gnmt(**opts)

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randint(0, vocab, (length, batch_size), device=device),
                torch.randint(0, vocab, (length + 1, batch_size), device=device))

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        source, target = batch
        logits = net(source, target[:-1]).flatten(0, 1)
        if logits.dtype != torch.float16:
            return F.cross_entropy(logits, target[1:].flatten(), label_smoothing=_LABEL_SMOOTHING)
        # the reference's LabelSmoothing on fp16 logits: log_softmax(x, dtype=float32), which
        # CUDA runs as one half-to-float kernel (ATen's log_softmax; the CPU has no such kernel,
        # so this path is for CUDA and the fake-tensor trace)
        logprobs = torch._log_softmax(logits, -1, True)  # noqa: SLF001 (the aten op, no public name)
        nll = F.nll_loss(logprobs, target[1:].flatten())
        return (1 - _LABEL_SMOOTHING) * nll - _LABEL_SMOOTHING * logprobs.mean(-1).mean()

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
