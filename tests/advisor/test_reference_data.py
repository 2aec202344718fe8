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


@pytest.mark.parametrize(("change", "named"), [
    # a count that is not a whole number
    ((4, "8.5"), "line 3: accelerator_count '8.5' is not a whole number"),
    # a batch size that is text
    ((5, "big"), "line 3: batch_size_per_accelerator 'big' is not a whole number"),
    # a throughput that is not a number
    ((6, "fast"), "line 3: samples_per_second 'fast' is not a number"),
    # a throughput that is not above zero
    ((6, "0"), "line 3: samples_per_second '0' must be a finite number above zero"),
])
def test_a_bad_reference_row_is_one_line_naming_it(tmp_path: Path, change: tuple[int, str],
                                                   named: str) -> None:
    from advisor.errors import AdvisorError

    header, first, second = REFERENCE_CSV.read_text().splitlines()[:3]
    cells = next(csv.reader([second]))
    cells[change[0]] = change[1]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    path = tmp_path / "reference_throughput.csv"
    path.write_text(f"{header}\n{first}\n{out.getvalue()}")
    with pytest.raises(AdvisorError, match=f"^reference_throughput.csv {named}$"):
        load_reference(path)


def test_a_reference_table_without_a_column_is_refused(tmp_path: Path) -> None:
    from advisor.errors import AdvisorError

    path = tmp_path / "reference_throughput.csv"
    path.write_text("generation,model\nlambda_v0,ssd\n")
    with pytest.raises(AdvisorError, match="reference_throughput.csv: missing column"):
        load_reference(path)
