"""Neural collaborative filtering (NeuMF, He et al. 2017) as NVIDIA DeepLearningExamples
(PyTorch/Recommendation/NCF) trains it on MovieLens-20M, in plain torch.

A reference model, built through the entrypoint ``probes.models.ncf:build``: the shipped
operator mix of Lambda's ``ncf`` rows (one sample is one user-item pair) is traced from it.
Defaults are the reference's: 138,493 users, 26,744 items, 64 matrix-factorization factors,
an MLP of layer sizes 256, 256, 128, 64 (its first layer the concatenated user and item
embeddings of 128 each), dropout 0.5, one logit from the concatenated factor product and MLP
output, binary cross-entropy on logits: 31,832,577 parameters. With ``fp16_model`` the model's
weights (embedding tables included), and so every operator, are fp16, as the reference's
``--amp`` ran it before April 2023 (apex AMP O2 with ``keep_batchnorm_fp32=False``; the fp32
master weights live in the optimizer, not the model).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models import check_options

__all__ = ["DEFAULTS", "NeuMF", "build"]

DEFAULTS: dict[str, Any] = {"users": 138493, "items": 26744, "factors": 64,
                            "mlp_width": 256, "mlp_layers": 4, "dropout": 0.5,
                            "fp16_model": False}
_MAXIMUM = {"users": 1 << 30, "items": 1 << 30, "factors": 65536, "mlp_width": 65536,
            "mlp_layers": 32}


class NeuMF(nn.Module):
    """Generalized matrix factorization and an MLP over user and item embeddings; the MLP's
    layers halve from ``mlp_width`` after the first two (256, 256, 128, 64 by default)."""

    def __init__(self, *, users: int, items: int, factors: int, mlp_width: int,
                 mlp_layers: int, dropout: float) -> None:
        super().__init__()
        self.mf_user = nn.Embedding(users, factors)
        self.mf_item = nn.Embedding(items, factors)
        self.mlp_user = nn.Embedding(users, mlp_width // 2)
        self.mlp_item = nn.Embedding(items, mlp_width // 2)
        sizes = [mlp_width, mlp_width] + [mlp_width // 2**i for i in range(1, mlp_layers - 1)]
        self.mlp = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:], strict=False))
        self.final = nn.Linear(factors + sizes[-1], 1)
        self.drop = nn.Dropout(dropout)

    def forward(self, user: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
        """One logit per (user, item) pair."""
        mf = self.mf_user(user) * self.mf_item(item)
        x = torch.cat([self.mlp_user(user), self.mlp_item(item)], dim=1)
        for layer in self.mlp:
            x = self.drop(F.relu(layer(x)))
        logit: torch.Tensor = self.final(torch.cat([mf, x], dim=1))
        return logit.squeeze(1)


def build(**options: Any) -> BuiltWorkload:
    """NeuMF with synthetic (user, item, label) batches and binary cross-entropy on logits;
    ModelOptionError names a bad option."""
    opts = check_options("ncf", options, DEFAULTS, maximum=_MAXIMUM, minimum={"mlp_layers": 2})
    fp16_model = opts.pop("fp16_model")
    model = NeuMF(**opts).half() if fp16_model else NeuMF(**opts)
    users, items = opts["users"], opts["items"]

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, ...]:
        return (torch.randint(0, users, (batch_size,), device=device),
                torch.randint(0, items, (batch_size,), device=device),
                torch.randint(0, 2, (batch_size,), device=device).float())

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, ...]) -> torch.Tensor:
        user, item, label = batch
        return F.binary_cross_entropy_with_logits(net(user, item).float(), label)

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)
