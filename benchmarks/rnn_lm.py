"""Recurrent language models as one advisor entrypoint (``rnn_lm:build``), in plain torch.

The shape of PyTorch's ``word_language_model`` example: token embedding, a stacked
``nn.LSTM`` or ``nn.GRU`` (cuDNN's fused layers on CUDA, oneDNN's on the CPU), dropout
between layers, a linear decoder over the vocabulary, cross-entropy on the next token.
``size="medium"`` is that example's WikiText-2 medium model (650 wide, 2 layers, 35 steps,
33,278 words); the default ``small`` one is small enough to run on a CPU in seconds. For
``benchmarks/bench_trace_zoo.py`` (traced against measured peaks on the CPU) and
``benchmarks/bench_gpu_targets.py`` (the same against a CUDA device).
"""

from __future__ import annotations

from typing import Any

# size -> (vocabulary, embedding and hidden width, layers, sequence length)
SIZES = {"small": (4000, 128, 2, 35), "medium": (33278, 650, 2, 35)}
CELLS = ("lstm", "gru")


def build(cell: str = "lstm", size: str = "small", dropout: float = 0.2) -> tuple[Any, Any, Any]:
    """(model, make_batch, loss_fn) of a ``cell`` (``lstm`` or ``gru``) language model of
    ``size`` (one of ``SIZES``)."""
    import torch
    from torch import nn

    if cell not in CELLS or size not in SIZES:
        raise ValueError(f"cell must be one of {', '.join(CELLS)} and size one of "
                         f"{', '.join(SIZES)}; got {cell!r}, {size!r}")
    vocab, width, layers, seq_len = SIZES[size]
    recurrent = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]

    class RecurrentLM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            self.drop = nn.Dropout(dropout)
            self.rnn = recurrent(width, width, layers, dropout=dropout, batch_first=True)
            self.decoder = nn.Linear(width, vocab)

        def forward(self, tokens: Any) -> Any:
            out, _ = self.rnn(self.drop(self.embed(tokens)))
            return self.decoder(self.drop(out))

    def make_batch(batch_size: int, device: Any) -> Any:
        tokens = torch.randint(0, vocab, (batch_size, seq_len + 1), device=device)
        return tokens[:, :-1], tokens[:, 1:]

    def loss_fn(net: Any, batch: Any) -> Any:
        inputs, targets = batch
        logits = net(inputs)
        return nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))

    return RecurrentLM(), make_batch, loss_fn
