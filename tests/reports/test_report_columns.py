"""Column tables declared as text, and the one writer of a CSV with its ``.columns.md``."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from reports.columns import Column, column_table, write_csv

_TABLE = """
name | unit | meaning
cost | USD  | what it cost, split
       over two lines

flag |      | `true` or `false` | kept whole
"""


def test_column_table_reads_units_continuations_and_bars() -> None:
    assert column_table(_TABLE) == (
        Column("name", "unit", "meaning"),
        Column("cost", "USD", "what it cost, split over two lines"),
        Column("flag", "", "`true` or `false` | kept whole"),  # a bar inside the meaning stays
    )


@pytest.mark.parametrize("text", [
    "cost | USD",             # no meaning
    "  cost | USD | what",    # continuation with nothing above it
    " | USD | what",          # no name
])
def test_column_table_rejects_a_malformed_line(text: str) -> None:
    expected = f"column line {text.strip()!r}: write 'name | unit | meaning'"
    with pytest.raises(ValueError, match=re.escape(expected)):
        column_table(text)


def test_write_csv_writes_rows_and_their_documentation(tmp_path: Path) -> None:
    columns = column_table("a | s | first\nb |  | second")
    paths = write_csv(tmp_path / "t.csv", columns, [{"a": 1.5}, {"a": 2, "b": "x|y"}],
                      intro="Two rows.")
    assert paths == [tmp_path / "t.csv", tmp_path / "t.columns.md"]
    assert list(csv.reader(paths[0].read_text().splitlines())) == [
        ["a", "b"], ["1.5", ""], ["2", "x|y"]]
    assert paths[1].read_text().splitlines() == [
        "# Columns of t.csv", "", "Two rows.", "", "| column | unit | meaning |", "|---|---|---|",
        "| `a` | s | first |", "| `b` | - | second |"]


def test_write_csv_rejects_a_key_that_is_no_column(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'z'"):
        write_csv(tmp_path / "t.csv", column_table("a |  | first"), [{"a": 1, "z": 2}], intro="")


def test_write_csv_may_ignore_extra_keys(tmp_path: Path) -> None:
    path, _ = write_csv(tmp_path / "t.csv", column_table("a |  | first"), [{"a": 1, "z": 2}],
                        intro="", ignore_extra=True)
    assert path.read_text() == "a\n1\n"


def test_the_writer_owns_decimals_and_cell_text(tmp_path: Path) -> None:
    columns = column_table("n |  | count\nusd | USD | cost\ns | seconds | time\nnote |  | text",
                           decimals={"usd": 2})
    rows = [
        {"n": 1, "usd": 2.675, "s": 9.477e-05, "note": 'say "hi", twice'},  # 2.675 is 2.67499...
        {"n": 2, "usd": 0.125, "s": float("inf")},  # a tie rounds to even; no infinity written
        {"usd": 1e17, "s": 1.0, "note": None},  # no exponent; None is an empty cell
    ]
    path, _ = write_csv(tmp_path / "t.csv", columns, rows, intro="")
    assert path.read_text() == ('n,usd,s,note\n1,2.67,0.00009477,"say ""hi"", twice"\n'
                                "2,0.12,,\n,100000000000000000,1.0,\n")


def test_decimals_name_only_columns_that_exist() -> None:
    with pytest.raises(ValueError, match="decimals for z: no such column"):
        column_table("a |  | first", decimals={"z": 1})


def test_write_csv_writes_the_header_once_over_many_chunks(tmp_path: Path) -> None:
    rows = [{"a": i / 3} for i in range(5_001)]  # more rows than one chunk holds
    path, _ = write_csv(tmp_path / "t.csv", column_table("a |  | x", decimals=3), rows,
                        intro="")
    lines = path.read_text().splitlines()
    assert lines[:3] == ["a", "0.0", "0.333"] and len(lines) == 5_002
    assert lines[-1] == "1666.667"


def test_write_csv_with_no_rows_writes_the_header(tmp_path: Path) -> None:
    path, _ = write_csv(tmp_path / "t.csv", column_table("a |  | x\nb |  | y"), [], intro="")
    assert path.read_text() == "a,b\n"
