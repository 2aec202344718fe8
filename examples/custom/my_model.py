"""A custom workload for advisor: a 1-D convolutional text classifier and its input pipeline.

advisor imports this file, calls ``build(**options)`` (the options come from model.yaml's
``model.options``) and expects ``(model, make_batch, loss_fn)`` or
``(model, make_batch, loss_fn, make_loader)``:

- ``make_batch(batch_size, device)`` returns one synthetic batch already on ``device``; the
  step is timed on it;
- ``loss_fn(model, batch)`` runs the forward pass and returns the scalar loss;
- ``make_loader(batch_size)`` (optional) returns an iterable of CPU batches, in the structure
  ``make_batch`` returns, read the way training reads them: here a ``DataLoader`` over text
  shards on disk, tokenized in the worker processes. A probe then times steps on one cached
  batch against steps on the loader's batches and says whether the input pipeline is the
  bottleneck. Leave it out and the probe makes no claim about input.

Build tensors with the ``device`` argument (not a hard-coded "cuda"), and do no slow work in
``build``: advisor builds the model on the meta device to profile it without allocating
memory. The data set is written (once, to ``data_dir`` or the system temporary folder) when
``make_loader`` is first called, not when the model is built.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import zlib
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

_FORMAT = 1           # bump when the shard layout changes: a new folder is written
_SHARD_LINES = 512    # samples per shard file
_PAD = 0              # token id of padding; words hash to 1 .. vocab - 1


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


class TextShards(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Samples of the ``shard-*.txt`` files in ``folder``, one ``label<TAB>text`` per line.

    ``__getitem__`` reads its line from disk, decodes it and tokenizes it (lower-case words
    hashed into ``1 .. vocab - 1``, cut or padded to ``seq_len``); it returns ``(ids, label)``.
    """

    def __init__(self, folder: Path, *, vocab: int, seq_len: int) -> None:
        self.vocab = vocab
        self.seq_len = seq_len
        self.index: list[tuple[str, int]] = []  # (shard path, byte offset of the line)
        for shard in sorted(folder.glob("shard-*.txt")):
            offset = 0
            with open(shard, "rb") as handle:
                for line in handle:
                    self.index.append((str(shard), offset))
                    offset += len(line)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        path, offset = self.index[i]
        with open(path, "rb") as handle:
            handle.seek(offset)
            label, _, text = handle.readline().decode("utf-8").rstrip("\n").partition("\t")
        ids = [zlib.crc32(word.encode()) % (self.vocab - 1) + 1
               for word in text.lower().split()][:self.seq_len]
        ids += [_PAD] * (self.seq_len - len(ids))
        return torch.tensor(ids, dtype=torch.long), torch.tensor(int(label), dtype=torch.long)


def write_shards(folder: Path, *, samples: int, words: int, num_classes: int) -> Path:
    """Write ``samples`` synthetic sentences (about ``words`` words each) as shard files.

    Written once: a finished folder holds a ``DONE`` file and is reused. The shards are
    written to a staging folder next to ``folder`` and renamed into place, so processes that
    race to write the same folder never see half a data set.
    """
    if (folder / "DONE").exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{folder.name}.partial-", dir=folder.parent))
    rng = random.Random(0)
    lexicon = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 9)))
               for _ in range(5000)]
    zipf = [1.0 / rank for rank in range(1, len(lexicon) + 1)]
    for first in range(0, samples, _SHARD_LINES):
        lines = []
        for _ in range(min(_SHARD_LINES, samples - first)):
            length = rng.randint(max(1, words // 2), words + words // 4)
            text = " ".join(rng.choices(lexicon, weights=zipf, k=length)).capitalize()
            lines.append(f"{rng.randrange(num_classes)}\t{text}.\n")
        (staging / f"shard-{first // _SHARD_LINES:05d}.txt").write_text("".join(lines))
    (staging / "DONE").touch()
    try:
        os.rename(staging, folder)
    except OSError:  # another process finished first, or a broken folder is in the way
        shutil.rmtree(staging, ignore_errors=True)
        if not (folder / "DONE").exists():
            raise RuntimeError(f"data folder {folder} exists but is incomplete; "
                               "delete it and run again") from None
    return folder


def build(*, vocab: int = 20000, embed_dim: int = 128, channels: int = 256,
          seq_len: int = 256, num_classes: int = 4, loader_workers: int = 2,
          dataset_samples: int = 8192, data_dir: str | None = None,
          ) -> tuple[nn.Module, Any, Any, Any]:
    """The model, a synthetic batch maker, the loss and the real loader, as advisor expects.

    ``loader_workers`` DataLoader worker processes (0: load in the training process) read
    ``dataset_samples`` sentences from ``data_dir`` (default: a folder in the system
    temporary folder).
    """
    if loader_workers < 0:
        raise ValueError(f"loader_workers must be 0 or more, got {loader_workers}")
    model = TextCNN(vocab, embed_dim, channels, num_classes)

    def make_batch(batch_size: int, device: Any) -> tuple[torch.Tensor, torch.Tensor]:
        ids = torch.randint(0, vocab, (batch_size, seq_len), device=device)
        return ids, torch.randint(0, num_classes, (batch_size,), device=device)

    def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        ids, labels = batch
        return F.cross_entropy(net(ids), labels)

    def make_loader(batch_size: int) -> DataLoader[tuple[torch.Tensor, torch.Tensor]]:
        root = Path(data_dir) if data_dir else Path(tempfile.gettempdir()) / "advisor-text-data"
        name = f"v{_FORMAT}-n{dataset_samples}-w{seq_len}-c{num_classes}"
        folder = write_shards(root / name, samples=dataset_samples, words=seq_len,
                              num_classes=num_classes)
        dataset = TextShards(folder, vocab=vocab, seq_len=seq_len)
        if len(dataset) < batch_size:
            raise ValueError(f"dataset_samples ({len(dataset)}) is smaller than one batch "
                             f"({batch_size}); raise dataset_samples")
        return DataLoader(dataset, batch_size=batch_size, shuffle=True,
                          num_workers=loader_workers, pin_memory=torch.cuda.is_available(),
                          drop_last=True)

    return model, make_batch, loss_fn, make_loader
