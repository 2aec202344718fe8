"""The shipped reference measurements: rebuilt from shared/data, plausible, sourced."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from advisor.throughput._import_reference import COLUMNS, build_reference
from advisor.throughput.reference import REFERENCE_CSV, load_reference

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not SHARED.exists(), reason="shared/data is not beside this checkout")
def test_shipped_reference_equals_a_rebuild_from_shared_data() -> None:
    rows = build_reference((SHARED / "benchmarks/lambda_train_throughput.csv").read_text())
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    assert REFERENCE_CSV.read_text() == out.getvalue()


def test_implausible_rows_are_dropped_and_every_row_is_sourced() -> None:
    with REFERENCE_CSV.open() as handle:
        raw = list(csv.DictReader(handle))
    assert all(r["source"] and r["captured_at"] for r in raw)
    assert max(float(r["samples_per_second"]) for r in raw) < 1e9


def test_both_software_generations_and_precisions_are_present() -> None:
    rows = load_reference()
    assert {r.generation for r in rows} == {"lambda_v0", "lambda_v1"}
    assert {r.precision for r in rows} == {"fp32", "mixed"}
    assert {r.accelerator_count for r in rows} >= {1, 2, 4, 8}
