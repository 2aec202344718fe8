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
