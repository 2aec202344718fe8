"""A custom workload for advisor: a 1-D convolutional text classifier.

advisor calls ``build(**options)`` (the options come from model.yaml) and expects
``(model, make_batch, loss_fn)``:

- ``make_batch(batch_size, device)`` returns one synthetic batch already on ``device``;
- ``loss_fn(model, batch)`` runs the forward pass and returns the scalar loss.

Build tensors with the ``device`` argument (not a hard-coded "cuda") so advisor can profile
the model on the meta device without allocating memory.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class TextCNN(nn.Module):
    """Embedding, two convolution blocks, global max-pool, linear classifier."""

    def __init__(self, vocab: int, embed_dim: int, channels: int, num_classes: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embed_dim)
        self.conv1 = nn.Conv1d(embed_dim, channels, kernel_size=5, padding=2)
        self.conv2 = nn.Conv1d(channels, channels, kernel_size=5, padding=2)
        self.head = nn.Linear(channels, num_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids).transpose(1, 2)
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        logits: torch.Tensor = self.head(x.amax(dim=2))
        return logits


def build(*, vocab: int = 20000, embed_dim: int = 128, channels: int = 256,
          seq_len: int = 256, num_classes: int = 4) -> tuple[nn.Module, Any, Any]:
    """The model, a synthetic batch maker and the loss, as advisor expects."""
    model = TextCNN(vocab, embed_dim, channels, num_classes)

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq_len), device=device)
        return ids, torch.randint(0, num_classes, (batch_size,), device=device)

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, labels = batch
        return F.cross_entropy(net(ids), labels)

    return model, make_batch, loss_fn
