"""Rebuild ``advisor/data/reference_throughput.csv`` from the Lambda table in ``shared/data``.

Run ``python -m advisor.throughput._import_reference ../shared/data``. Keeps every measured row with the
software generation, drops the implausible multi-GPU ncf rows (about 1e10 samples/s), and
renames precision ``fp16_amp`` to ``mixed``. A test checks the shipped file equals the output.
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
            "batch_size_per_accelerator": str(int(float(raw["batch_size_per_gpu"] or 0))),
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
