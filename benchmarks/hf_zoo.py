"""Many Hugging Face transformers architectures as one advisor entrypoint (``hf_zoo:build``).

``build(arch=...)`` makes a small model of that architecture from its config (``size``
options: hidden width 256, 4 layers, 4 heads, 1024 feed-forward, 8000-token vocabulary,
128 tokens; 64 x 64 images, 10 classes), with the head its task uses: causal LM, masked
LM, sequence-to-sequence LM or image classification. Batches are random token ids (labels
= the ids) or random images and labels; the loss is the one the model computes itself. For
``benchmarks/bench_trace_zoo.py``: which architectures trace on fake tensors, and how close the
traced peak is to the measured one. transformers is not a project dependency.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

HIDDEN, LAYERS, HEADS, FFN, VOCAB, CLASSES = 256, 4, 4, 1024, 8000, 10


def _text(name: str, **extra: Any) -> Callable[[Any], Any]:
    def config(t: Any) -> Any:
        return getattr(t, name)(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                                num_attention_heads=HEADS, intermediate_size=FFN, **extra)
    return config


def _image(name: str, **extra: Any) -> Callable[[Any], Any]:
    def config(t: Any) -> Any:
        return getattr(t, name)(image_size=64, num_labels=CLASSES, **extra)
    return config


_VIT = {"patch_size": 8, "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "intermediate_size": FFN}

# architecture -> (task, config factory taking the transformers module)
ARCHITECTURES: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "llama": ("causal", _text("LlamaConfig", num_key_value_heads=2)),
    "mistral": ("causal", _text("MistralConfig", num_key_value_heads=2)),
    "qwen2": ("causal", _text("Qwen2Config", num_key_value_heads=2)),
    "gemma": ("causal", _text("GemmaConfig", num_key_value_heads=2, head_dim=HIDDEN // HEADS)),
    "phi": ("causal", _text("PhiConfig")),
    "gpt_neox": ("causal", _text("GPTNeoXConfig")),
    "mixtral": ("causal", _text("MixtralConfig", num_key_value_heads=2, num_local_experts=4,
                                num_experts_per_tok=2)),
    "opt": ("causal", lambda t: t.OPTConfig(vocab_size=VOCAB, hidden_size=HIDDEN,
                                            num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                            ffn_dim=FFN, word_embed_proj_dim=HIDDEN)),
    "roberta": ("masked", _text("RobertaConfig")),
    "electra": ("masked", _text("ElectraConfig", embedding_size=HIDDEN)),
    "deberta_v2": ("masked", _text("DebertaV2Config")),
    "albert": ("masked", _text("AlbertConfig", embedding_size=128)),
    "distilbert": ("masked", lambda t: t.DistilBertConfig(vocab_size=VOCAB, dim=HIDDEN,
                                                          n_layers=LAYERS, n_heads=HEADS,
                                                          hidden_dim=FFN)),
    "t5": ("seq2seq", lambda t: t.T5Config(vocab_size=VOCAB, d_model=HIDDEN, d_kv=HIDDEN // HEADS,
                                           d_ff=FFN, num_layers=LAYERS, num_heads=HEADS,
                                           decoder_start_token_id=0, pad_token_id=0)),
    # the released t5-small's shape (transformers' T5Config defaults: d_model 512, 6 + 6 layers,
    # 8 heads, d_ff 2048, 32,128-token vocabulary), not the zoo's small size: issue 28's case
    "t5_small": ("seq2seq", lambda t: t.T5Config(decoder_start_token_id=0, pad_token_id=0)),
    "bart": ("seq2seq", lambda t: t.BartConfig(vocab_size=VOCAB, d_model=HIDDEN,
                                               encoder_layers=LAYERS, decoder_layers=LAYERS,
                                               encoder_attention_heads=HEADS,
                                               decoder_attention_heads=HEADS,
                                               encoder_ffn_dim=FFN, decoder_ffn_dim=FFN)),
    "vit": ("image", _image("ViTConfig", **_VIT)),
    "deit": ("image", _image("DeiTConfig", **_VIT)),
    "beit": ("image", _image("BeitConfig", **_VIT)),
    "dinov2": ("image", _image("Dinov2Config", **_VIT)),
    "swin": ("image", _image("SwinConfig", patch_size=4, embed_dim=64, depths=[2, 2],
                             num_heads=[2, 4], window_size=4)),
    "convnext": ("image", _image("ConvNextConfig", num_stages=2, hidden_sizes=[64, 128],
                                 depths=[2, 2])),
    "resnet": ("image", lambda t: t.ResNetConfig(embedding_size=64, hidden_sizes=[64, 128],
                                                 depths=[2, 2], num_labels=CLASSES)),
    "mobilevit": ("image", _image("MobileViTConfig")),
}

_AUTO = {"causal": "AutoModelForCausalLM", "masked": "AutoModelForMaskedLM",
         "seq2seq": "AutoModelForSeq2SeqLM", "image": "AutoModelForImageClassification"}


def build(arch: str = "llama", seq_len: int = 128, checkpointing: bool = False,
          train: str = "all", weights: str = "fp32") -> tuple[Any, Any, Any]:
    """(model, make_batch, loss_fn) of a small ``arch`` model (one of ``ARCHITECTURES``).

    Common fine-tuning set-ups: ``checkpointing`` (activation recomputation through
    transformers' ``gradient_checkpointing_enable``), ``train="head"`` (every weight frozen
    but the last module's: adapter-style fine-tuning), ``weights="bf16"`` (the model cast to
    bf16, as pure-bf16 training does)."""
    import torch
    import transformers

    if arch not in ARCHITECTURES:
        raise ValueError(f"arch {arch!r} is not one of {', '.join(ARCHITECTURES)}")
    task, make_config = ARCHITECTURES[arch]
    config = make_config(transformers)
    if arch == "deit":  # no auto class maps DeiT's config without a checkpoint's name
        model = transformers.DeiTForImageClassification(config)
    else:
        model = getattr(transformers, _AUTO[task]).from_config(config)
    if checkpointing:
        model.gradient_checkpointing_enable()
    if train == "head":
        model.requires_grad_(False)
        list(model.children())[-1].requires_grad_(True)
    if weights == "bf16":
        model = model.to(torch.bfloat16)

    def make_batch(batch_size: int, device: Any) -> Any:
        if task == "image":
            return {"pixel_values": torch.randn(batch_size, 3, 64, 64, device=device),
                    "labels": torch.randint(0, CLASSES, (batch_size,), device=device)}
        ids = torch.randint(0, VOCAB, (batch_size, seq_len), device=device)
        return {"input_ids": ids, "labels": ids.clone()}

    def loss_fn(net: Any, batch: Any) -> Any:
        return net(**batch).loss

    return model, make_batch, loss_fn
