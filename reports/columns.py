"""Documented CSV columns: name, unit and meaning, written beside the CSV and into the HTML.

A comment line inside a CSV breaks spreadsheet imports, so each CSV ``x.csv`` gets a
``x.columns.md`` next to it, and the HTML report carries the same table in its "Columns"
section (the ``columns`` macro of ``templates/macros.html.j2``). A report declares its columns
once, as a text table (:func:`column_table`), and writes the CSV and its documentation with one
call (:func:`write_csv`), the one CSV writer: it owns the columns' order, each cell's text and
each column's decimals (:attr:`Column.decimals`). It formats and writes 1,000 rows at a time
(a column of floats at once, with numpy), so 100,000 offers never sit in memory whole.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

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


_CHUNK_ROWS = 1_000  # rows formatted and written at a time


@dataclass(frozen=True)
class Column:
    """One CSV column: its header, its unit (``""`` when it has none), what it means, and the
    decimals its floats are rounded to (None: written at their shortest exact repr)."""

    name: str
    unit: str
    meaning: str
    decimals: int | None = None


def column_table(text: str, *, decimals: int | Mapping[str, int] | None = None
                 ) -> tuple[Column, ...]:
    """Columns declared one a line as ``name | unit | meaning`` (unit may be blank).

    A line that starts with white space continues the meaning above it (joined by one space);
    blank lines are skipped. ValueError names a line that is neither. ``decimals`` rounds the
    floats of every column (an int) or of the columns named (a mapping, name -> decimals).
    """
    columns = _column_lines(text)
    if decimals is None:
        return columns
    if isinstance(decimals, int):
        return tuple(replace(c, decimals=decimals) for c in columns)
    unknown = sorted(set(decimals) - {c.name for c in columns})
    if unknown:
        raise ValueError(f"decimals for {', '.join(unknown)}: no such column")
    return tuple(replace(c, decimals=decimals.get(c.name)) for c in columns)


def _column_lines(text: str) -> tuple[Column, ...]:
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
        columns.append(Column(parts[0], parts[1], parts[2]))
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


def _cell(value: object, decimals: int | None) -> str:
    """:func:`csv_cell` of ``value``, a float first rounded to ``decimals`` when given."""
    if decimals is not None and isinstance(value, float):
        value = round(value, decimals)
    return csv_cell(value)


def _rounded(values: np.ndarray[Any, Any], decimals: int) -> np.ndarray[Any, Any]:
    """``round(v, decimals)`` of each float, as Python rounds (correctly, half to even):
    scaled, rounded to an integer and scaled back, which is exact unless the scaled value
    sits next to a half or past 2**52; those few are rounded by Python."""
    import numpy as np

    scale = 10.0 ** decimals
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and infinities stay as they are
        scaled = values * scale
        out = np.rint(scaled) / scale
        fraction = np.abs(scaled - np.floor(scaled) - 0.5)
    doubtful = np.flatnonzero(np.isfinite(values) & ((fraction < 1e-3) | (np.abs(scaled) >= 2.0 ** 52)))
    for i in doubtful:
        out[i] = round(float(values[i]), decimals)
    return out


def _float_cells(values: np.ndarray[Any, Any], decimals: int | None) -> list[str]:
    """The cells of a column of floats (NaN where a row has none), as :func:`_cell` writes
    them: ``repr`` unless it is in exponent form, and empty when not finite."""
    import numpy as np

    numbers = values.astype(np.float64)
    if decimals is not None:
        numbers = _rounded(numbers, decimals)
    cells = [repr(x) for x in numbers.tolist()]
    for i in np.flatnonzero(~np.isfinite(numbers)):
        cells[i] = ""
    for row, text in enumerate(cells):
        if "e" in text:  # 9.477e-05 -> 0.00009477
            cells[row] = csv_cell(float(numbers[row]))
    return cells


def _column_cells(values: list[object], column: Column) -> list[str]:
    """The cells of one column (None where a row has no value): a column of floats (None
    aside) is formatted at once, one of strings and integers as ``str`` writes them, anything
    else cell by cell."""
    import numpy as np

    kinds = set(map(type, values)) - {type(None)}
    if kinds and all(issubclass(kind, float) for kind in kinds):
        return _float_cells(np.array([math.nan if v is None else v for v in values],
                                     dtype=np.float64), column.decimals)
    if kinds <= {str, int}:
        return ["" if v is None else str(v) for v in values]
    return [_cell(v, column.decimals) for v in values]


def _cell_chunks(columns: Sequence[Column], rows: Iterable[Mapping[str, object]], *,
                 ignore_extra: bool) -> Iterable[Iterable[tuple[str, ...]]]:
    """Rows of cells (strings), :data:`_CHUNK_ROWS` rows at a time, in order."""
    names = [c.name for c in columns]
    known = set(names)
    iterator = iter(rows)
    while chunk := list(itertools.islice(iterator, _CHUNK_ROWS)):
        if not ignore_extra:
            for row in chunk:
                extra = row.keys() - known
                if extra:
                    raise ValueError("dict contains fields not in fieldnames: "
                                     + ", ".join(repr(k) for k in extra))
        yield zip(*(_column_cells([row.get(c.name) for row in chunk], c) for c in columns),
                  strict=True)


def write_csv(path: Path, columns: Sequence[Column], rows: Iterable[Mapping[str, object]], *,
              intro: str, ignore_extra: bool = False) -> list[Path]:
    """Write ``rows`` as a CSV with one header per column (a missing key is an empty cell, each
    value written by :func:`csv_cell`, a float first rounded to its column's ``decimals``) and
    ``<name>.columns.md`` beside it, titled "Columns of <file name>"; returns both paths.

    A row key that is not a column raises ValueError unless ``ignore_extra``.
    """
    def write(handle: IO[str]) -> None:  # by chunks: 100,000 offers never sit in memory whole
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([c.name for c in columns])
        for chunk in _cell_chunks(columns, rows, ignore_extra=ignore_extra):
            writer.writerows(chunk)

    write_stream(path, write)
    return [path, write_columns_doc(path, f"Columns of {path.name}", intro, columns)]
