"""Options shared by several commands."""

from __future__ import annotations

import click

__all__ = ["json_option"]

json_option = click.option("--json", "as_json", is_flag=True,
                           help="Print one JSON object instead of a table (for scripts).")
