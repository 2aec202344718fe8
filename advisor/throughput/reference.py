"""Shipped reference measurements: training throughput of public models on many accelerators.

Rows come from the public Lambda benchmark tables (``advisor/data/reference_throughput.csv``);
``generation`` is the software generation (do not mix generations when fitting ratios).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from advisor._tables import Table, first_failure, numbers, read_data_table
from advisor.errors import AdvisorError

__all__ = [
    "REFERENCE_CONV_FLOPS_FRACTION",
    "REFERENCE_CSV",
    "REFERENCE_FLOPS_PER_SAMPLE",
    "ReferenceRow",
    "load_reference",
]

REFERENCE_CSV = Path(__file__).parent.parent / "data" / "reference_throughput.csv"

# Training FLOPs per sample (forward + backward = 3 x forward) of the reference models whose
# architecture is public and fixed by the benchmark, so measured samples/s becomes achieved
# TFLOPS. ResNet-50 at 224x224: 4.09 GMACs forward (torchvision model card) = 8.18 GFLOPs.
# BERT on SQuAD at 384 tokens: per token 2N + 2 n_layer n_ctx d_model (Kaplan et al. 2020)
# with N the non-embedding parameters (base: 12 x 12 x 768^2; large: 24 x 12 x 1024^2).
REFERENCE_FLOPS_PER_SAMPLE: dict[str, float] = {
    "resnet50": 3 * 8.18e9,
    "bert_base_squad": 3 * 384 * (2 * 12 * 12 * 768**2 + 2 * 12 * 384 * 768),
    "bert_large_squad": 3 * 384 * (2 * 24 * 12 * 1024**2 + 2 * 24 * 384 * 1024),
}

# Share of training FLOPs spent in convolutions: tells convolutional and attention workloads
# apart, which reach very different fractions of peak on the same accelerator. ResNet-50 has
# one small fully connected layer (2048 x 1000) after 53 convolutions; BERT has none; SSD300 is
# convolutions only (its traced mix). GNMT (LSTM steps), NCF (embedding-bound) and
# Transformer-XL (unfused relative attention) have no convolutions either, but a device's miss
# on them says little of its miss on a transformer encoder: unlisted, the anchors weight them as
# another kind (the roofline's distance 0.5), and they still teach the per-class efficiencies.
REFERENCE_CONV_FLOPS_FRACTION: dict[str, float] = {
    "resnet50": 0.99,
    "bert_base_squad": 0.0,
    "bert_large_squad": 0.0,
    "ssd": 1.0,
}


@dataclass(frozen=True, slots=True)
class ReferenceRow:
    """One measurement: ``samples_per_second`` of ``model`` on ``accelerator_count`` devices.

    ``precision`` is ``fp32`` (probably TF32 on Ampere and newer) or ``mixed`` (fp16 AMP).
    ``batch_size_per_accelerator`` is the batch on each device (Lambda's global batch over the
    device count, see ``_import_reference``); 0 where not known.
    """

    generation: str
    model: str
    precision: str
    accelerator: str
    accelerator_count: int
    batch_size_per_accelerator: int
    samples_per_second: float
    sample_unit: str


_COLUMNS = ("generation", "model", "precision", "accelerator", "accelerator_count",
            "batch_size_per_accelerator", "samples_per_second", "sample_unit")


def _whole(cells: list[str]) -> list[bool]:
    """Per cell: does ``int`` refuse it?"""
    failed = []
    for cell in cells:
        try:
            int(cell)
            failed.append(False)
        except ValueError:
            failed.append(True)
    return failed


def _check(path: Path, table: Table) -> None:
    """AdvisorError naming the first bad line (a row's columns in file order)."""
    def fail(problem: Callable[[int], str]) -> Callable[[int], AdvisorError]:
        return lambda i: AdvisorError(f"{path.name} line {table.lines[i]}: {problem(i)}")

    counts, batches = table.cells("accelerator_count"), table.cells("batch_size_per_accelerator")
    speeds = table.cells("samples_per_second")
    values, parsed = numbers(speeds)
    error = first_failure([
        (_whole(counts), fail(lambda i: f"accelerator_count {counts[i]!r} is not a whole "
                                        "number")),
        (_whole(batches), fail(lambda i: f"batch_size_per_accelerator {batches[i]!r} is not a "
                                         "whole number")),
        ([not ok for ok in parsed], fail(lambda i: f"samples_per_second {speeds[i]!r} is not a "
                                                   "number")),
        ([not (math.isfinite(v) and v > 0) for v in values],
         fail(lambda i: f"samples_per_second {speeds[i]!r} must be a finite number above zero")),
    ])
    if error is not None:
        raise error


@cache
def load_reference(path: Path = REFERENCE_CSV) -> tuple[ReferenceRow, ...]:
    """All shipped reference rows; AdvisorError (one line) names a missing column or the first
    bad line."""
    table = read_data_table(path, _COLUMNS)
    _check(path, table)
    return tuple(
        ReferenceRow(generation, model, precision, accelerator, int(count), int(batch),
                     float(speed), unit)
        for generation, model, precision, accelerator, count, batch, speed, unit
        in table.frame[list(_COLUMNS)].itertuples(index=False, name=None)
    )
