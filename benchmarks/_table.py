"""Tiny helpers shared by the benchmark scripts: print a Markdown result and save it."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def write_table(name: str, title: str, header: list[str], rows: list[list[str]],
                notes: list[str] = (), appendix: str = "") -> str:  # type: ignore[assignment]
    """Print the table and write it to ``benchmarks/results/<name>.md``, the notes as a list
    below it and then ``appendix`` (Markdown, kept as given); returns the text."""
    lines = [f"# {title}", "",
             f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
             f"Python {platform.python_version()}", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += [""] + [f"- {n}" for n in notes]
    if appendix:
        lines += ["", appendix.strip()]
    return write_result(name, "\n".join(lines) + "\n")


def write_result(name: str, text: str, directory: Path = RESULTS) -> str:
    """Print ``text`` and write it to ``<directory>/<name>.md`` (by default
    ``benchmarks/results``); returns it."""
    print(text)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.md").write_text(text)
    return text
