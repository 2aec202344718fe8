"""Rebuild ``advisor/data/reference_throughput.csv`` from the Lambda table in ``shared/data``.

Run ``python -m advisor.throughput._import_reference ../shared/data``. Keeps every measured row with the
software generation, drops the implausible multi-GPU ncf rows (about 1e10 samples/s), and
renames precision ``fp16_amp`` to ``mixed``. A test checks the shipped file equals the output.

Lambda's ``batch_size_per_gpu`` is the per-GPU batch on one GPU but the GLOBAL batch on N
GPUs, whatever its name (and shared/data's README) says: of the 1,652 multi-GPU rows with a
one-GPU twin (same generation, model, precision, GPU), 1,566 hold exactly N times the twin's
batch (ResNet-50 lambda_v0 fp32 A100-80GB-SXM: 720, 1440, 2880, 5760 on 1, 2, 4, 8 GPUs), and
all but one of the rest are other multiples of N (SSD fp32 RTX-2080Ti: 112 on 4 GPUs, 28
each). So ``batch_size_per_accelerator`` is the column divided by ``num_accelerators``:

- where it divides, the quotient, even where that differs from the one-GPU batch (SSD above;
  BERT-large fp16 on RTX-2080Ti holds 4, 8, 16 on 2, 4, 8 GPUs, the one-GPU batch of 4 on
  two GPUs, so 2 per GPU, not 4: the three rows that equal their one-GPU batch are these);
- where it does not divide (one row: Transformer-XL large fp32 lambda_v0 on 8 A100-80GB-SXM,
  182, likely a typo for 192 = 8 x 24 as in lambda_v1) or is blank, 0: not known.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

__all__ = ["COLUMNS", "build_reference", "main"]

COLUMNS = [
    "generation", "model", "precision", "accelerator", "accelerator_count",
    "batch_size_per_accelerator", "samples_per_second", "sample_unit", "source", "captured_at",
]
# Lambda publishes no dates per row; the generation says the container era.
_CAPTURED = {"lambda_v0": "2022-12-31", "lambda_v1": "2024-12-31"}
_SOURCE = "Lambda deep-learning benchmark tables (public), hand-extracted"
_UNIT = {"gnmt": "token", "transformerxlbase": "token", "transformerxllarge": "token",
         "ncf": "user-item pair"}
_IMPLAUSIBLE_SAMPLES_PER_SECOND = 1e9


def _per_accelerator_batch(raw: dict[str, str]) -> int:
    """The per-device batch of a Lambda row: its global batch over its GPU count; 0 (not
    known) where the batch is blank or does not divide evenly."""
    count = int(float(raw["num_accelerators"]))
    global_batch = int(float(raw["batch_size_per_gpu"] or 0))
    return global_batch // count if global_batch % count == 0 else 0


def build_reference(lambda_csv: str) -> list[dict[str, str]]:
    """Turn the Lambda table into the shipped reference rows."""
    rows = []
    for raw in csv.DictReader(io.StringIO(lambda_csv)):
        throughput = float(raw["throughput_samples_per_s"])
        if throughput <= 0 or throughput > _IMPLAUSIBLE_SAMPLES_PER_SECOND:
            continue
        rows.append({
            "generation": raw["source"],
            "model": raw["model"],
            "precision": "mixed" if raw["precision"] == "fp16_amp" else raw["precision"],
            "accelerator": raw["accelerator"],
            "accelerator_count": str(int(float(raw["num_accelerators"]))),
            "batch_size_per_accelerator": str(_per_accelerator_batch(raw)),
            "samples_per_second": f"{throughput:g}",
            "sample_unit": _UNIT.get(raw["model"], "sample"),
            "source": _SOURCE,
            "captured_at": _CAPTURED[raw["source"]],
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    """Write ``advisor/data/reference_throughput.csv``."""
    shared = Path((argv or sys.argv[1:] or ["../shared/data"])[0])
    rows = build_reference((shared / "benchmarks/lambda_train_throughput.csv").read_text())
    out = Path(__file__).parent.parent / "data" / "reference_throughput.csv"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    print(f"{len(rows)} reference rows -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
