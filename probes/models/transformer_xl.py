"""Transformer-XL (NVIDIA DeepLearningExamples, PyTorch/LanguageModeling/Transformer-XL) in
plain torch: the WikiText-103 language model with relative positional attention, a memory of
the previous segment's hidden states and an adaptive embedding and softmax.

A reference model, built through the entrypoint ``probes.models.transformer_xl:build``: the
shipped operator mixes of Lambda's ``transformerxlbase`` and ``transformerxllarge`` rows are
traced from it. Defaults are the reference's ``wt103_base.yaml`` (16 layers, width 512, 8
heads of 64, inner 2048, 192 target and 192 memory tokens, ``div_val`` 1: about 192 M
parameters); ``wt103_large.yaml`` is 18 layers, width 1024, 16 heads of 64, inner 4096, 384
and 384 tokens, dropout 0.2 and ``div_val`` 4. Vocabulary 267,735 words in clusters split at
19,997, 39,997 and 199,997; tied embedding and softmax weights (and, as the reference, the
tail clusters' projections; the head's is its own). With ``adaptive`` false the model is the
reference trainer's without ``--adaptive`` (its default: the flag is set only by the YAML
configs): one embedding table and one softmax over the whole vocabulary, tied. With
``fp16_model`` the model's weights, and so every operator, are fp16, as apex AMP O2 (the
trainer's ``--fp16``) runs it; its fp32 master weights live in the optimizer, not the model.

Attention is computed as the reference does (batched products of queries with keys and with
the projected relative positions, the relative shift, softmax), not by a fused kernel. The
adaptive softmax scores the head (the shortlist and one logit per tail cluster) for every
token and each tail cluster only for the tokens whose target falls in it; which tokens those
are depends on the data, so a fixed share of each batch goes to each cluster
(``cluster_shares``, default the shares a Zipf law of exponent 1 gives over the vocabulary:
the token frequencies of running text follow one closely).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.errors import ProbeError
from probes.models import check_options

__all__ = ["DEFAULTS", "LARGE", "TransformerXL", "build", "zipf_cluster_shares"]

_VOCAB = 267735
_CUTOFFS = (19997, 39997, 199997)
DEFAULTS: dict[str, Any] = {"layers": 16, "d_model": 512, "heads": 8, "d_head": 64,
                            "d_inner": 2048, "tgt_len": 192, "mem_len": 192, "div_val": 1,
                            "dropout": 0.1, "attention_dropout": 0.0, "vocab": _VOCAB,
                            "adaptive": True, "fp16_model": False}
LARGE: dict[str, Any] = {"layers": 18, "d_model": 1024, "heads": 16, "d_head": 64,
                         "d_inner": 4096, "tgt_len": 384, "mem_len": 384, "div_val": 4,
                         "dropout": 0.2, "attention_dropout": 0.2}
_MAXIMUM = {"layers": 512, "d_model": 65536, "heads": 512, "d_head": 4096, "d_inner": 262144,
            "tgt_len": 65536, "mem_len": 65536, "div_val": 64, "vocab": 1_048_576}


def zipf_cluster_shares(vocab: int, cutoffs: Sequence[int]) -> tuple[float, ...]:
    """Share of running text whose word falls in each cluster (``[0, c0)``, ``[c0, c1)``, ...
    up to ``vocab``) under a Zipf law of exponent 1: word rank r has frequency 1/r."""
    def harmonic(n: int) -> float:
        return math.log(n) + 0.5772156649 + 1 / (2 * n)

    ends = [0, *cutoffs, vocab]
    total = harmonic(vocab)
    return tuple((harmonic(ends[i + 1]) - (harmonic(ends[i]) if ends[i] else 0.0)) / total
                 for i in range(len(ends) - 1))


class RelPartialAttention(nn.Module):
    """Relative multi-head attention over memory and segment (Dai et al. 2019, section 3.3),
    post-layer-norm residual; ``r_w_bias`` and ``r_r_bias`` are the model's, shared."""

    def __init__(self, d_model: int, heads: int, d_head: int, dropout: float,
                 attention_dropout: float) -> None:
        super().__init__()
        self.heads, self.d_head = heads, d_head
        self.qkv_net = nn.Linear(d_model, 3 * heads * d_head, bias=False)
        self.r_net = nn.Linear(d_model, heads * d_head, bias=False)
        self.o_net = nn.Linear(heads * d_head, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(attention_dropout)

    def forward(self, w: torch.Tensor, memory: torch.Tensor, r: torch.Tensor,
                biases: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        qlen, batch = w.shape[:2]
        heads = self.qkv_net(torch.cat([memory, w], 0))
        q, k, v = (t.view(t.shape[0], batch, self.heads, self.d_head)
                   for t in heads.chunk(3, dim=-1))
        q = q[-qlen:]
        r_k = self.r_net(r).view(r.shape[0], self.heads, self.d_head)
        ac = torch.einsum("ibnd,jbnd->bnij", q + biases[0], k)
        bd = _rel_shift(torch.einsum("ibnd,jnd->bnij", q + biases[1], r_k))
        score = (ac + bd) * (1 / math.sqrt(self.d_head))
        score = score.masked_fill(mask, -float("inf"))
        prob = self.dropatt(F.softmax(score, dim=3))
        vec = torch.einsum("bnij,jbnd->ibnd", prob.to(v.dtype), v)
        out = self.o_net(vec.reshape(qlen, batch, self.heads * self.d_head))
        normed: torch.Tensor = self.layer_norm(w + self.drop(out))
        return normed


def _rel_shift(x: torch.Tensor) -> torch.Tensor:
    """Shift each query row's relative scores into absolute key positions (pad, re-view)."""
    padded = torch.cat([x.new_zeros(*x.shape[:3], 1), x], dim=3)
    padded = padded.view(x.shape[0], x.shape[1], x.shape[3] + 1, x.shape[2])
    return padded[:, :, 1:].reshape(x.shape)


class Layer(nn.Module):
    """Relative attention, then a post-layer-norm ReLU feed-forward."""

    def __init__(self, d_model: int, heads: int, d_head: int, d_inner: int, dropout: float,
                 attention_dropout: float) -> None:
        super().__init__()
        self.dec_attn = RelPartialAttention(d_model, heads, d_head, dropout, attention_dropout)
        self.ff = nn.Sequential(nn.Linear(d_model, d_inner), nn.ReLU(), nn.Dropout(dropout),
                                nn.Linear(d_inner, d_model), nn.Dropout(dropout))
        self.ff_norm = nn.LayerNorm(d_model)

    def forward(self, w: torch.Tensor, memory: torch.Tensor, r: torch.Tensor,
                biases: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        x = self.dec_attn(w, memory, r, biases, mask)
        out: torch.Tensor = self.ff_norm(x + self.ff(x))
        return out


class Adaptive(nn.Module):
    """Adaptive embedding and softmax sharing cluster weights (tied), ``div_val`` shrinking
    each further cluster's width; projections to ``d_model`` where a width differs."""

    def __init__(self, vocab: int, d_model: int, div_val: int, cutoffs: Sequence[int],
                 shares: Sequence[float]) -> None:
        super().__init__()
        self.ends = (0, *cutoffs, vocab)
        self.shares = tuple(shares)
        self.d_model = d_model
        widths = [d_model // div_val**i for i in range(len(self.ends) - 1)]
        if div_val == 1:  # one table, sliced per cluster
            widths = [d_model]
        self.emb_layers = nn.ModuleList(
            nn.Embedding(self.ends[i + 1] - self.ends[i] if div_val > 1 else vocab, width)
            for i, width in enumerate(widths))
        self.emb_projs = nn.ParameterList(
            nn.Parameter(torch.randn(d_model, width) * 0.02) for width in widths
            if div_val > 1)
        # the head's output projection is its own; the tails' are the embedding's (tied)
        self.head_proj = nn.Parameter(torch.randn(d_model, d_model) * 0.02) if div_val > 1 \
            else None
        self.bias = nn.Parameter(torch.zeros(vocab))
        # one head logit per tail cluster (none without clusters, as the reference)
        self.cluster_weight = nn.Parameter(torch.zeros(len(self.ends) - 2, widths[0])) \
            if len(self.ends) > 2 else None
        self.cluster_bias = nn.Parameter(torch.zeros(len(self.ends) - 2)) \
            if len(self.ends) > 2 else None

    def _counts(self, n: int) -> list[int]:
        counts = [round(share * n) for share in self.shares[1:]]
        return [n - sum(counts), *counts]

    def _cluster(self, i: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Weight (tied to the embedding) and projection of cluster ``i``."""
        table = cast("nn.Embedding", self.emb_layers[0 if len(self.emb_layers) == 1 else i])
        if len(self.emb_layers) == 1:
            return table.weight[self.ends[i]:self.ends[i + 1]], None
        proj: torch.Tensor | None = self.head_proj if i == 0 else self.emb_projs[i]
        return table.weight, proj

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Scaled embeddings of ``ids`` (time, batch); with several tables the first tokens
        of the flattened batch are looked up in the first cluster, and so on by share."""
        if len(self.emb_layers) == 1:
            out: torch.Tensor = self.emb_layers[0](ids)
        else:
            flat, parts, start = ids.flatten(), [], 0
            for i, count in enumerate(self._counts(flat.numel())):
                local = flat[start:start + count] % (self.ends[i + 1] - self.ends[i])
                parts.append(F.linear(self.emb_layers[i](local), self.emb_projs[i]))
                start += count
            out = torch.cat(parts).view(*ids.shape, self.d_model)
        return out * math.sqrt(self.d_model)

    def loss(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of ``target`` under the adaptive softmax."""
        hidden, target = hidden.flatten(0, 1), target.flatten()
        if self.cluster_weight is None or self.cluster_bias is None:
            # no clusters: the reference's plain softmax over the vocabulary (its
            # ``n_clusters == 0`` branch), log-softmax in the logits' dtype
            table = cast("nn.Embedding", self.emb_layers[0])
            logprob = F.log_softmax(F.linear(hidden, table.weight, self.bias), dim=1)
            return (-logprob.gather(1, target[:, None]).squeeze(1)).float().mean()
        head_weight, head_proj = self._cluster(0)
        head_bias = torch.cat([self.bias[:self.ends[1]], self.cluster_bias])
        head_in = hidden if head_proj is None else F.linear(hidden, head_proj.t())
        head_logprob = F.log_softmax(
            F.linear(head_in, torch.cat([head_weight, self.cluster_weight]), head_bias), dim=1)
        counts, start, nll = self._counts(hidden.shape[0]), 0, []
        for i, count in enumerate(counts):
            rows = torch.arange(start, start + count, device=hidden.device)
            width = self.ends[i + 1] - self.ends[i]
            local = target.index_select(0, rows) % width
            head_rows = head_logprob.index_select(0, rows)
            if i == 0:
                nll.append(-head_rows.gather(1, local[:, None]).squeeze(1))
            else:
                weight, proj = self._cluster(i)
                tail_in = hidden.index_select(0, rows)
                if proj is not None:
                    tail_in = F.linear(tail_in, proj.t())
                tail = F.log_softmax(F.linear(tail_in, weight, self.bias[
                    self.ends[i]:self.ends[i + 1]]), dim=1)
                nll.append(-(head_rows[:, -i] + tail.gather(1, local[:, None]).squeeze(1)))
            start += count
        return torch.cat(nll).float().mean()


class TransformerXL(nn.Module):
    """Adaptive embedding, ``layers`` relative-attention layers over memory, adaptive
    softmax loss (``forward`` returns the loss)."""

    def __init__(self, *, layers: int, d_model: int, heads: int, d_head: int, d_inner: int,
                 mem_len: int, div_val: int, dropout: float, attention_dropout: float,
                 vocab: int, cutoffs: Sequence[int], shares: Sequence[float]) -> None:
        super().__init__()
        self.mem_len, self.d_model = mem_len, d_model
        self.adaptive = Adaptive(vocab, d_model, div_val, cutoffs, shares)
        self.layers = nn.ModuleList(
            Layer(d_model, heads, d_head, d_inner, dropout, attention_dropout)
            for _ in range(layers))
        self.r_w_bias = nn.Parameter(torch.zeros(heads, d_head))
        self.r_r_bias = nn.Parameter(torch.zeros(heads, d_head))
        self.drop = nn.Dropout(dropout)
        self.register_buffer("inv_freq", 1 / (10000 ** (torch.arange(0.0, d_model, 2.0)
                                                       / d_model)), persistent=False)

    def forward(self, ids: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        qlen, batch = ids.shape
        klen = qlen + self.mem_len
        x = self.drop(self.adaptive.embed(ids))
        # positions in the embeddings' dtype, as the reference builds them
        positions = torch.arange(klen - 1, -1, -1.0, device=ids.device, dtype=x.dtype)
        angles = torch.outer(positions, self.get_buffer("inv_freq"))
        r = self.drop(torch.cat([angles.sin(), angles.cos()], dim=-1))
        mask = torch.triu(torch.ones(qlen, klen, dtype=torch.bool, device=ids.device),
                          diagonal=1 + self.mem_len)[None, None]
        biases = (self.r_w_bias, self.r_r_bias)
        for layer in self.layers:
            # the previous segment's hidden states of this layer's input (no gradient)
            memory = x.new_zeros(self.mem_len, batch, self.d_model)
            x = layer(x, memory, r, biases, mask)
        return self.adaptive.loss(self.drop(x), target)


def build(**options: Any) -> BuiltWorkload:
    """Transformer-XL with synthetic WikiText-103-like segments (``tgt_len`` tokens) and its
    adaptive-softmax loss; ModelOptionError names a bad option."""
    opts = check_options("transformer_xl", options, DEFAULTS, maximum=_MAXIMUM)
    adaptive, fp16_model = opts.pop("adaptive"), opts.pop("fp16_model")
    if not adaptive and opts["div_val"] != 1:
        raise ProbeError("transformer_xl: div_val above 1 needs the adaptive softmax "
                         "(adaptive: true)")
    if adaptive and (opts["d_model"] % opts["div_val"] ** len(_CUTOFFS)
                     or opts["vocab"] <= _CUTOFFS[-1]):
        raise ProbeError("transformer_xl: d_model must be divisible by div_val^3 and vocab "
                         f"above {_CUTOFFS[-1]}")
    length, vocab = opts.pop("tgt_len"), opts["vocab"]
    cutoffs = _CUTOFFS if adaptive else ()
    model = TransformerXL(**opts, cutoffs=cutoffs, shares=zipf_cluster_shares(vocab, cutoffs))
    if fp16_model:
        model = model.half()

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randint(0, vocab, (length, batch_size), device=device),
                torch.randint(0, vocab, (length, batch_size), device=device))

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        loss: torch.Tensor = net(*batch)
        return loss

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
