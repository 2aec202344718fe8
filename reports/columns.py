"""Documented CSV columns: name, unit and meaning, written beside the CSV and into the HTML.

A comment line inside a CSV breaks spreadsheet imports, so each CSV ``x.csv`` gets a
``x.columns.md`` next to it, and the HTML report carries the same table in its "Columns"
section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.html import Markup, el, table
from reports.output import write_text

__all__ = ["Column", "columns_doc_path", "columns_html", "columns_markdown", "write_columns_doc"]


@dataclass(frozen=True)
class Column:
    """One CSV column: its header, its unit (``""`` when it has none) and what it means."""

    name: str
    unit: str
    meaning: str


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


def columns_html(columns: Sequence[Column]) -> Markup:
    """The same documentation as an HTML table."""
    return table(["column", "unit", "meaning"],
                 [[el("code", None, c.name), c.unit or "-", c.meaning] for c in columns])
