"""Runtime memory overhead as data: every row sourced and dated, vendors the specs know."""

from __future__ import annotations

import csv
from datetime import date
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.profiling.runtime_overhead import (
    RUNTIMES,
    SHIPPED_OVERHEAD,
    load_runtime_overheads,
    overhead_for_accelerator,
)
from pricing import load_accelerators


def _rows() -> list[dict[str, str]]:
    with SHIPPED_OVERHEAD.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['runtime']}:{r['what'][:30]}")
def test_every_row_has_a_known_runtime_a_source_and_a_date(row: dict[str, str]) -> None:
    assert row["runtime"] in RUNTIMES
    assert row["source"].strip() and row["what"].strip()
    assert date.fromisoformat(row["captured_at"]) <= date.today()
    vendors = {spec.vendor for spec in load_accelerators().values()} | {"*"}
    assert row["vendor"] in vendors


@pytest.mark.parametrize(("accelerator", "runtime", "gib_at_40"), [
    ("H100-SXM", "CUDA runtime", 0.5 + 0.0625 + 0.03 * 40),  # context + cuBLAS + allocator slack
    ("TPU-v5e", "TPU runtime", 1.0),                          # stated default
    ("Gaudi", "Gaudi runtime", 1.0),
    ("no-such-accelerator", "runtime", 1.0),                  # the '*' rows
])
def test_overhead_is_the_vendors(accelerator: str, runtime: str, gib_at_40: float) -> None:
    overhead = overhead_for_accelerator(accelerator)
    assert overhead.name == runtime
    assert overhead.gib(40.0) == pytest.approx(gib_at_40)


def test_a_bad_row_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "overhead.csv"
    path.write_text("runtime,vendor,overhead_gib,overhead_fraction,what,source,captured_at\n"
                    "cuda,NVIDIA,0.5,0,context,,2026-01-01\n")
    with pytest.raises(AdvisorError, match=r"overhead.csv:2: .*source given"):
        load_runtime_overheads(path)
