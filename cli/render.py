"""Shared rendering helpers for the CLI: JSON output, rich tables, a status line, file notes."""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import click
from rich.console import Console, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.status import Status

from reports.formatting import fmt_bytes, fmt_compact, fmt_money, fmt_number, fmt_usd

__all__ = ["console", "echo_json", "echo_written", "fmt_bytes", "fmt_compact", "fmt_money",
           "fmt_number", "fmt_usd", "min_width", "printable", "status"]

PIPE_WIDTH = 140
_UNBOUNDED = 10_000  # a console width no table reaches: measures its true minimum


def console(*, stderr: bool = False) -> Console:
    """A rich console: plain and $COLUMNS (else 140) columns wide when not a terminal (pipes,
    files, CI); text is shown as written (no ``:name:`` emoji codes: an offer key or a
    workload name is data)."""
    probe = Console(stderr=stderr)
    width = None
    if not probe.is_terminal:
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width, emoji=False)


def printable(text: object) -> str:
    """``text`` with every control or format character written as its Python escape
    (``\\x1b[31m``), so data from files (a workload name, a price snapshot's cell) is shown,
    never obeyed by the terminal. Wrap in ``rich.markup.escape`` where the text is markup."""
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in ("Cc", "Cf")
        else ch
        for ch in str(text)
    )


def echo_json(data: Any) -> None:
    """Print one JSON document to stdout. Top-level values that are iterators (rows made as
    they are written) become arrays written one compact element per line (by orjson: a
    100,000-row listing is written in a fraction of a second and never exists as one
    string)."""
    if not isinstance(data, dict) or not any(isinstance(v, Iterator) for v in data.values()):
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    import orjson

    out = sys.stdout
    out.write("{")
    for i, (key, value) in enumerate(data.items()):
        out.write(("," if i else "") + f"\n  {json.dumps(key)}: ")
        if isinstance(value, Iterator):
            out.write("[")
            empty = True
            for item in value:
                out.write(("\n    " if empty else ",\n    ")
                          + orjson.dumps(item, default=str).decode())
                empty = False
            out.write("]" if empty else "\n  ]")
        else:
            out.write(json.dumps(value, indent=2, default=str).replace("\n", "\n  "))
    out.write("\n}\n")


def echo_written(files: Iterable[tuple[str, Path]]) -> None:
    """Say on stderr which files a command wrote (``wrote csv     ranking.csv``), so stdout
    keeps only the table or the JSON."""
    for kind, path in files:
        click.echo(f"wrote {kind:<7} {path}", err=True)


def status(message: str) -> AbstractContextManager[Status | None]:
    """A transient spinner with ``message`` on stderr while long work runs (entering gives the
    spinner, to update); nothing at all (None) when stderr is not a terminal (pipes, files,
    CI), so logs stay clean."""
    err = console(stderr=True)
    if not err.is_terminal:
        return nullcontext()
    return err.status(escape(message))


def min_width(renderable: RenderableType) -> int:
    """The narrowest console ``renderable`` fits without cutting what may not fold (rich's
    own measurement, on a console wider than any table)."""
    unbounded = Console(width=_UNBOUNDED)
    return Measurement.get(unbounded, unbounded.options, renderable).minimum
