"""BENCH.csv as spreadsheets save it: a UTF-8 byte-order mark is read, other encodings are
one line naming the file and the fix."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.errors import AdvisorError
from advisor.throughput.evaluation import read_bench
from cli.main import advisor
from pricing import load_accelerators

HEADER = "workload,accelerator,throughput_samples_per_s\n"


def test_utf8_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    bench = tmp_path / "excel.csv"
    bench.write_bytes((HEADER + "résnet,T4,3\nrésnet,H100,9\n").encode("utf-8-sig"))
    rows = read_bench(bench, load_accelerators())
    assert [(r.workload, r.accelerator) for r in rows] == [
        ("résnet", "T4"), ("résnet", "H100-SXM")]


@pytest.mark.parametrize(("data", "expected"), [
    # Latin-1 (Excel's plain "CSV" on Western Windows): the line of the first bad byte
    ((HEADER + "r\xe9snet,T4,3\n").encode("latin-1"), ": not UTF-8 at line 2 (byte 0xe9)"),
    # a UTF-16 export (Excel's "Unicode Text") starts with its byte-order mark
    ((HEADER + "a,T4,3\n").encode("utf-16"), ": is UTF-16 text, not UTF-8"),
    # UTF-16 without a byte-order mark decodes as UTF-8 full of NULs
    ((HEADER + "a,T4,3\n").encode("utf-16-le"), ": has a NUL character at line 1"),
], ids=["latin-1", "utf-16", "utf-16-le"])
def test_other_encodings_are_one_line_and_exit_2(tmp_path: Path, data: bytes,
                                                 expected: str) -> None:
    bench = tmp_path / "bench.csv"
    bench.write_bytes(data)
    with pytest.raises(AdvisorError, match=re.escape(f"bench.csv{expected}")) as info:
        read_bench(bench, load_accelerators())
    assert str(info.value).endswith("save the file as UTF-8")
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "1"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith("error:")
    assert "save the file as UTF-8" in result.output


def test_row_errors_count_physical_lines(tmp_path: Path) -> None:
    bench = tmp_path / "bench.csv"
    bench.write_text(HEADER + "a,T4,3\n\na,T4,0\n")  # a blank line before the bad row
    with pytest.raises(AdvisorError, match=r"bench.csv:4: column throughput_samples_per_s"):
        read_bench(bench, load_accelerators())


@pytest.mark.parametrize(("text", "expected"), [
    # a later row with a cell more than the header (an unquoted comma, most likely): it said
    # "not valid CSV (Expected 3 fields in line 3, saw 4); fix the quoting of that line"
    (HEADER + "a,T4,3\na,H100,1,5\n", "bench.csv:3: 4 cells where the header has 3; remove the "
                                      "extra cells (or quote a cell that holds a comma)"),
    # a quote opened and never closed: the line the row starts on
    (HEADER + "a,T4,3\n\"a,H100,1\n", "bench.csv:3: not valid CSV (EOF inside string"),
], ids=["extra-cell", "open-quote"])
def test_text_that_is_not_csv_is_one_line_naming_the_line(tmp_path: Path, text: str,
                                                          expected: str) -> None:
    bench = tmp_path / "bench.csv"
    bench.write_text(text)
    with pytest.raises(AdvisorError, match=re.escape(expected)) as info:
        read_bench(bench, load_accelerators())
    assert str(info.value).endswith(("fix the quoting of that line", "holds a comma)"))
