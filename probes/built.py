"""The torch objects of a built workload: what every model builder and entrypoint returns."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["BuiltWorkload"]


@dataclass
class BuiltWorkload:
    """Torch objects of one workload.

    ``make_batch(batch_size, device)`` returns one batch already on ``device``;
    ``loss_fn(model, batch)`` returns the scalar loss of a forward pass;
    ``make_loader(batch_size)``, when given, returns an iterable of CPU batches, in the
    structure ``make_batch`` returns, read the way training reads them (the user's real input
    pipeline). Only then does a probe compare steps on one cached batch with steps on the
    loader's batches (the input-bound check). Built-in models give none: they make no claim
    about an input pipeline.
    """

    model: Any
    make_batch: Callable[[int, Any], Any]
    loss_fn: Callable[[Any, Any], Any]
    make_loader: Callable[[int], Iterable[Any]] | None = None
