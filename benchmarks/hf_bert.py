"""BERT from Hugging Face transformers as an advisor entrypoint (``hf_bert:build``).

``BertForMaskedLM`` from a ``BertConfig`` (BERT-base unless options say otherwise; dropout
0.1, ``sdpa`` attention); batches of random token ids with 15% of the positions as labels
(the rest -100, ignored), the loss the model computes itself, as in masked-LM pre-training.
transformers is not a project dependency: ``pip install transformers``.
"""

from __future__ import annotations

from typing import Any


def build(seq_len: int = 128, hidden: int = 768, layers: int = 12, heads: int = 12,
          ffn: int = 3072, vocab_size: int = 30522) -> tuple[Any, Any, Any]:
    """(model, make_batch, loss_fn) of a BertForMaskedLM."""
    import torch
    from transformers import AutoModelForMaskedLM, BertConfig

    config = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=ffn,
                        max_position_embeddings=max(512, seq_len))
    model = AutoModelForMaskedLM.from_config(config, attn_implementation="sdpa")

    def make_batch(batch_size: int, device: Any) -> Any:
        ids = torch.randint(0, vocab_size, (batch_size, seq_len), device=device)
        masked = torch.rand(batch_size, seq_len, device=device) < 0.15
        return ids, torch.where(masked, ids, torch.full_like(ids, -100))

    def loss_fn(net: Any, batch: Any) -> Any:
        ids, labels = batch
        return net(input_ids=ids, labels=labels).loss

    return model, make_batch, loss_fn
