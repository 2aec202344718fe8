"""A multi-layer perceptron classifier in plain torch.

Options: ``input_dim`` 784, ``hidden`` 1024, ``layers`` 3 (hidden layers, each Linear +
ReLU), ``num_classes`` 10.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from probes.built import BuiltWorkload
from probes.models import check_builtin_options

__all__ = ["build", "mlp"]



def mlp(*, input_dim: int, hidden: int, layers: int, num_classes: int) -> nn.Sequential:
    """``layers`` hidden Linear+ReLU layers of width ``hidden``, then a linear classifier."""
    modules: list[nn.Module] = []
    width = input_dim
    for _ in range(layers):
        modules += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    modules.append(nn.Linear(width, num_classes))
    return nn.Sequential(*modules)


def build(**options: Any) -> BuiltWorkload:
    """An MLP with synthetic flat inputs (MNIST-like by default) and a cross-entropy loss."""
    opts = check_builtin_options("mlp", options)
    model = mlp(**opts)
    dim, classes = opts["input_dim"], opts["num_classes"]

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        return (torch.randn(batch_size, dim, device=device),
                torch.randint(0, classes, (batch_size,), device=device))

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        inputs, labels = batch
        return F.cross_entropy(net(inputs), labels)

    return BuiltWorkload(model=model, make_batch=make_batch, loss_fn=loss_fn)

