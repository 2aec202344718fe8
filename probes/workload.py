"""What a probe (or the profiler) trains: a plain recipe, and the torch objects built from it.

The recipe is plain data so it can travel to a remote instance as JSON. ``build_workload``
imports torch lazily.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BuiltWorkload", "WorkloadRecipe"]


@dataclass(frozen=True)
class WorkloadRecipe:
    """How to build the model and its batches.

    Exactly one of ``builtin`` (a name in ``probes.models``) and ``entrypoint``
    (``"package.module:function"``, importable from ``base_dir``) is set. ``batch_size`` is
    per device; ``precision`` is fp32, tf32, bf16 or fp16.
    """

    builtin: str | None
    entrypoint: str | None
    options: Mapping[str, Any] = field(default_factory=dict)
    batch_size: int = 1
    precision: str = "fp32"
    base_dir: str | None = None


@dataclass
class BuiltWorkload:
    """Torch objects of one workload.

    ``make_batch(batch_size, device)`` returns one batch already on ``device``;
    ``loss_fn(model, batch)`` returns the scalar loss of a forward pass;
    ``make_loader(batch_size)``, when given, yields CPU batches the way the real input
    pipeline would (used by the input-bound check).
    """

    model: Any
    make_batch: Callable[[int, Any], Any]
    loss_fn: Callable[[Any, Any], Any]
    make_loader: Callable[[int], Iterable[Any]] | None = None
