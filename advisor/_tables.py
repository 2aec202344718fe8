"""CSV tables read with pandas and validated column by column, erring on the first bad line.

:func:`read_table` parses CSV text into a DataFrame of strings (every cell as written, empty
cells as ``""``) with the line each row ends on, as an editor numbers lines (blank lines and
the lines inside quoted cells count). :func:`first_failure` runs column-wise checks and
names the earliest failing row, and of its failures the first check in the order given, so a
reader that checks columns reports what a row-by-row reader would. DataFrames stay inside
the readers: they hand out their row dataclasses. pandas is imported on first use.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Check", "Table", "TableSyntaxError", "first_failure", "numbers", "read_data_table",
           "read_table"]

_LINE_END = re.compile(r"\r\n|\r|\n")
_PARSER_LINE = re.compile(r"\bline (\d+)\b")


class TableSyntaxError(ValueError):
    """The text is not CSV; ``line`` (1-based, None when unknown) and what is wrong."""

    def __init__(self, line: int | None, detail: str) -> None:
        super().__init__(detail)
        self.line = line
        self.detail = detail


@dataclass(frozen=True)
class Table:
    """A parsed CSV: ``frame`` of strings (columns as the header spells them) and, per row,
    the 1-based line it ends on (the header is line 1 when nothing precedes it)."""

    frame: pd.DataFrame
    lines: tuple[int, ...]

    @property
    def columns(self) -> list[str]:
        """The header's names, in order."""
        return [str(c) for c in self.frame.columns]

    def cells(self, column: str) -> list[str]:
        """The cells of ``column`` top to bottom."""
        return [str(v) for v in self.frame[column].tolist()]


def _record_lines(text: str) -> tuple[list[int], int | None]:
    """The line each record (header first) ends on, and the line a record left open at the
    end (an unclosed quote) starts on: blank lines are skipped, as pandas skips them, and a
    record goes on while a quote is open."""
    ends: list[int] = []
    quotes = 0
    start: int | None = None
    for number, line in enumerate(_LINE_END.split(text), start=1):
        if start is None and not line.strip():
            continue
        start = number if start is None else start
        quotes += line.count('"')
        if quotes % 2 == 0:
            ends.append(number)
            start = None
    return ends, start


def read_table(text: str) -> Table:
    """Parse ``text`` (CSV with a header line); TableSyntaxError when it is not CSV.

    An empty text is a table without columns. A row with fewer cells than the header gets
    empty ones; the first row may carry extra trailing cells (dropped), later rows may not.
    """
    import pandas as pd
    from pandas.errors import EmptyDataError, ParserError, ParserWarning

    ends, unclosed = _record_lines(text)
    try:
        with warnings.catch_warnings():  # extra cells in the first row: dropped, as documented
            warnings.simplefilter("ignore", ParserWarning)
            frame = pd.read_csv(io.StringIO(text), dtype=str, na_filter=False,
                                index_col=False, skip_blank_lines=True)
    except EmptyDataError:
        return Table(pd.DataFrame(), ())
    except ParserError as exc:
        detail = str(exc).strip().removeprefix("Error tokenizing data. ").removeprefix(
            "C error: ")
        found = _PARSER_LINE.search(detail)
        raise TableSyntaxError(int(found.group(1)) if found else unclosed, detail) from None
    ends = ends[1:]
    if len(ends) != len(frame):  # quotes our count reads otherwise: number rows in order
        ends = list(range(2, len(frame) + 2))
    return Table(frame, tuple(ends))


def read_data_table(path: Path, columns: Sequence[str]) -> Table:
    """A shipped data table: ``path`` parsed, with every one of ``columns``; AdvisorError (one
    line) naming the file and the line that is not CSV or the columns it lacks."""
    from advisor.errors import AdvisorError

    try:
        table = read_table(path.read_text())
    except TableSyntaxError as exc:
        raise AdvisorError(f"{path.name} line {exc.line}: not valid CSV ({exc.detail})") from exc
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise AdvisorError(f"{path.name}: missing column(s) {', '.join(missing)}")
    return table


def numbers(cells: Sequence[str]) -> tuple[list[float], list[bool]]:
    """Each cell as Python's ``float`` reads it, and whether it read at all (NaN if not)."""
    values: list[float] = []
    parsed: list[bool] = []
    for cell in cells:
        try:
            values.append(float(cell))
            parsed.append(True)
        except ValueError:
            values.append(math.nan)
            parsed.append(False)
    return values, parsed


Check = tuple[Sequence[bool], Callable[[int], Any]]


def first_failure(checks: Sequence[Check]) -> Any | None:
    """``make(row)`` of the earliest row any check fails (each check: per-row failed flags
    and ``make``); of the checks failing that row, the first given. None when all pass."""
    found: tuple[int, Callable[[int], Any]] | None = None
    for failed, make in checks:
        row = next((i for i, bad in enumerate(failed) if bad), None)
        if row is not None and (found is None or row < found[0]):
            found = (row, make)
    return None if found is None else found[1](found[0])
