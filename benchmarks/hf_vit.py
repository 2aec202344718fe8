"""ViT from Hugging Face transformers as an advisor entrypoint (``hf_vit:build``).

``ViTForImageClassification`` from a ``ViTConfig`` (ViT-Base/16 at 224 x 224 unless options say
otherwise; ``sdpa`` attention); batches of random images and labels, the cross-entropy loss the
model computes itself. transformers is not a project dependency: ``pip install transformers``.
"""

from __future__ import annotations

from typing import Any


def build(image_size: int = 224, patch_size: int = 16, hidden: int = 768, layers: int = 12,
          heads: int = 12, ffn: int = 3072, num_classes: int = 1000) -> tuple[Any, Any, Any]:
    """(model, make_batch, loss_fn) of a ViTForImageClassification."""
    import torch
    from transformers import AutoModelForImageClassification, ViTConfig

    config = ViTConfig(image_size=image_size, patch_size=patch_size, hidden_size=hidden,
                       num_hidden_layers=layers, num_attention_heads=heads,
                       intermediate_size=ffn, num_labels=num_classes)
    model = AutoModelForImageClassification.from_config(config, attn_implementation="sdpa")

    def make_batch(batch_size: int, device: Any) -> Any:
        images = torch.randn(batch_size, 3, image_size, image_size, device=device)
        return images, torch.randint(0, num_classes, (batch_size,), device=device)

    def loss_fn(net: Any, batch: Any) -> Any:
        images, labels = batch
        return net(pixel_values=images, labels=labels).loss

    return model, make_batch, loss_fn
