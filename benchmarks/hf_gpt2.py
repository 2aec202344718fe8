"""GPT-2 from Hugging Face transformers as an advisor entrypoint (``hf_gpt2:build``).

``GPT2LMHeadModel`` with its default configuration (GPT-2 small, 124M parameters, attention
and residual dropout 0.1, ``sdpa`` attention) unless options say otherwise; batches of random
token ids; the loss the model computes itself from ``labels=input_ids`` (shifted inside, as in
causal-LM fine-tuning). transformers is not a project dependency: ``pip install transformers``.
"""

from __future__ import annotations

from typing import Any


def build(seq_len: int = 1024, n_embd: int = 768, n_layer: int = 12, n_head: int = 12,
          vocab_size: int = 50257, attn_implementation: str = "sdpa") -> tuple[Any, Any, Any]:
    """(model, make_batch, loss_fn) of a GPT2LMHeadModel."""
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config

    special = min(50256, vocab_size - 1)  # GPT-2's <|endoftext|>, inside a smaller vocabulary
    config = GPT2Config(n_positions=max(1024, seq_len), n_embd=n_embd, n_layer=n_layer,
                        n_head=n_head, vocab_size=vocab_size, bos_token_id=special,
                        eos_token_id=special)
    model = AutoModelForCausalLM.from_config(config, attn_implementation=attn_implementation)

    def make_batch(batch_size: int, device: Any) -> Any:
        return torch.randint(0, vocab_size, (batch_size, seq_len), device=device)

    def loss_fn(net: Any, ids: Any) -> Any:
        return net(input_ids=ids, labels=ids).loss

    return model, make_batch, loss_fn
