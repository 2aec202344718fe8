"""Options and argument types shared by several commands."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from cli.errors import BadInput

__all__ = ["SpecFile", "json_flag", "json_option", "spec_file_argument", "storage_option"]

_Decorator = Callable[[Any], Any]


def json_flag(help_text: str = "Print one JSON object instead of a table (for scripts).",
              ) -> _Decorator:
    """``--json`` (as ``as_json``), with what this command prints as JSON."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


json_option = json_flag()


def storage_option(help_text: str = "Storage URL (default: the local SQLite file in "
                                    "ADVISOR_HOME, or ADVISOR_STORAGE_URL).") -> _Decorator:
    """``--storage URL`` (as ``storage``, None when not given)."""
    return click.option("--storage", default=None, metavar="URL", help=help_text)


if TYPE_CHECKING:  # generic only in click 8.2+; pyproject allows 8.1
    _ParamType = click.ParamType[Any]
else:
    _ParamType = click.ParamType


class SpecFile(_ParamType):
    """A model.yaml or sweep.yaml path, checked before anything opens it.

    A missing path or a directory is refused with one line ``error: MODEL_YAML: ...`` and
    exit code 2, not click's three-line usage error; the loader (``advisor._yaml``) refuses
    FIFOs and devices (``/dev/zero``) before opening them and bounds size and content.
    Converts to ``Path`` (or ``str`` with ``as_str=True``, for commands that take a string).
    """

    name = "file"

    def __init__(self, *, as_str: bool = False) -> None:
        self.as_str = as_str

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:  # noqa: ARG002
        what = (param.human_readable_name if param is not None else "FILE").upper()
        text = str(value)
        shown = text if text.isprintable() and len(text) <= 200 else repr(text[:200])
        try:
            mode = os.stat(value).st_mode
        except OSError as exc:
            raise BadInput(f"{what}: cannot read {shown}: {exc.strerror}") from None
        if stat.S_ISDIR(mode):
            raise BadInput(f"{what}: {shown} is a directory; give the path of a YAML file in it")
        return str(value) if self.as_str else Path(value)


_Command = TypeVar("_Command", bound=Callable[..., Any])


def spec_file_argument(name: str, *, as_str: bool = False) -> Callable[[_Command], _Command]:
    """``click.argument(name)`` for a spec file: bad paths are one line with exit code 2."""
    return click.argument(name, type=SpecFile(as_str=as_str))
