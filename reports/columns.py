"""Documented CSV columns: name, unit and meaning, written beside the CSV and into the HTML.

A comment line inside a CSV breaks spreadsheet imports, so each CSV ``x.csv`` gets a
``x.columns.md`` next to it, and the HTML report carries the same table in its "Columns"
section (the ``columns`` macro of ``templates/macros.html.j2``). A report declares its columns
once, as a text table (:func:`column_table`), and writes the CSV and its documentation with one
call (:func:`write_csv`).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO

from reports.output import write_stream, write_text

__all__ = [
    "Column",
    "column_table",
    "columns_doc_path",
    "csv_cell",
    "columns_markdown",
    "write_columns_doc",
    "write_csv",
]


@dataclass(frozen=True)
class Column:
    """One CSV column: its header, its unit (``""`` when it has none) and what it means."""

    name: str
    unit: str
    meaning: str


def column_table(text: str) -> tuple[Column, ...]:
    """Columns declared one a line as ``name | unit | meaning`` (unit may be blank).

    A line that starts with white space continues the meaning above it (joined by one space);
    blank lines are skipped. ValueError names a line that is neither.
    """
    columns: list[Column] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0].isspace() and columns:
            last = columns.pop()
            columns.append(Column(last.name, last.unit, f"{last.meaning} {line.strip()}"))
            continue
        parts = [part.strip() for part in line.split("|", 2)]
        if len(parts) != 3 or not parts[0] or line[0].isspace():
            raise ValueError(f"column line {line.strip()!r}: write 'name | unit | meaning', "
                             "or indent it to continue the meaning above")
        columns.append(Column(*parts))
    return tuple(columns)


def columns_doc_path(csv_path: Path) -> Path:
    """``ranking.csv`` -> ``ranking.columns.md`` in the same folder."""
    return csv_path.with_name(csv_path.stem + ".columns.md")


def columns_markdown(title: str, intro: str, columns: Sequence[Column]) -> str:
    """A Markdown page documenting ``columns`` in order."""
    lines = [f"# {title}", "", intro, "", "| column | unit | meaning |", "|---|---|---|"]
    for col in columns:
        meaning = col.meaning.replace("|", "\\|")
        lines.append(f"| `{col.name}` | {col.unit or '-'} | {meaning} |")
    return "\n".join(lines) + "\n"


def write_columns_doc(csv_path: Path, title: str, intro: str, columns: Sequence[Column]) -> Path:
    """Write the ``.columns.md`` beside ``csv_path``; returns its path."""
    return write_text(columns_doc_path(csv_path), columns_markdown(title, intro, columns))


def csv_cell(value: object) -> str:
    """One CSV cell as every report writes it: a float as a plain decimal with no exponent and
    no thousands separator, at its shortest exact repr (``9.477e-05`` -> ``0.00009477``); an
    infinite or NaN float and None as an empty cell (not applicable); anything else as ``str`` writes it."""
    if value is None:
        return ""
    if isinstance(value, float):
        return format(Decimal(repr(value)), "f") if math.isfinite(value) else ""
    return str(value)


def write_csv(path: Path, columns: Sequence[Column], rows: Iterable[Mapping[str, object]], *,
              intro: str, ignore_extra: bool = False) -> list[Path]:
    """Write ``rows`` as a CSV with one header per column (a missing key is an empty cell, each
    value written by :func:`csv_cell`) and ``<name>.columns.md`` beside it, titled "Columns of
    <file name>"; returns both paths.

    A row key that is not a column raises ValueError unless ``ignore_extra``.
    """
    def write(handle: IO[str]) -> None:  # row by row: 100,000 offers never sit in memory whole
        writer = csv.DictWriter(handle, fieldnames=[c.name for c in columns], lineterminator="\n",
                                extrasaction="ignore" if ignore_extra else "raise")
        writer.writeheader()
        writer.writerows({key: csv_cell(value) for key, value in row.items()} for row in rows)

    write_stream(path, write)
    return [path, write_columns_doc(path, f"Columns of {path.name}", intro, columns)]
