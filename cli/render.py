"""Shared rendering helpers for the CLI: JSON output and rich tables."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

__all__ = ["console", "echo_json", "fmt_number"]


def console(*, stderr: bool = False) -> Console:
    """A rich console: plain and 140 columns wide when not a terminal (pipes, files, CI)."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal else 140
    return Console(stderr=stderr, highlight=False, soft_wrap=False, width=width)


def echo_json(data: Any) -> None:
    """Print one JSON document to stdout."""
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def fmt_number(value: float) -> str:
    """Three significant figures with thousands separators (12,300 / 45.6 / 0.0789)."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"
