"""Options and argument types shared by several commands."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from advisor._fields import MAX_NUMBER
from cli.errors import BadInput

__all__ = ["OneOf", "PositiveNumber", "SpecFile", "check_report_outputs", "json_flag", "json_option",
           "spec_file_argument", "storage_option"]

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
    """A model.yaml, sweep.yaml (or BENCH.csv) path, checked before anything opens it.

    A missing path or a directory is refused with one line ``error: MODEL_YAML: ...`` and
    exit code 2, not click's three-line usage error; the loader (``advisor._yaml``) refuses
    FIFOs and devices (``/dev/zero``) before opening them and bounds size and content.
    Converts to ``Path`` (or ``str`` with ``as_str=True``, for commands that take a string).
    """

    name = "file"

    def __init__(self, *, as_str: bool = False, kind: str = "YAML") -> None:
        self.as_str = as_str
        self.kind = kind  # what the file holds: YAML (its loader bounds it) or CSV

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
            raise BadInput(f"{what}: {shown} is a directory; give the path of a {self.kind} "
                           "file in it")
        if self.kind != "YAML" and not stat.S_ISREG(mode):  # /dev/zero would be read forever
            raise BadInput(f"{what}: {shown} is not a regular file (a pipe, device or socket); "
                           f"give the path of a {self.kind} file")
        return str(value) if self.as_str else Path(value)


def _option_name(param: click.Parameter | None) -> str:
    """``--max-usd`` for an option (its long name), ``SEED`` for an argument."""
    if isinstance(param, click.Option):
        return next((o for o in param.opts if o.startswith("--")), param.opts[0])
    return (param.human_readable_name if param is not None else "value").upper()


class PositiveNumber(_ParamType):
    """A finite number above 0 (or at least ``minimum``), the type of every numeric option.

    NaN, infinity, a value out of range or text that is no number is refused with one line
    ``error: --max-usd: must be a finite number greater than 0, got 'nan'`` and exit code 2,
    before the command runs: no value can switch a cap off. ``integer`` asks for a whole
    number and converts to ``int``; ``maximum`` (default 1e18) keeps products finite.
    """

    name = "number"

    def __init__(self, *, minimum: float | None = None, integer: bool = False,
                 maximum: float = MAX_NUMBER) -> None:
        self.minimum = minimum
        self.integer = integer
        self.maximum = maximum

    def _wanted(self) -> str:
        kind = "a whole number" if self.integer else "a finite number"
        low = "greater than 0" if self.minimum is None else f"at least {self.minimum:g}"
        return f"{kind} {low} and at most {self.maximum:g}"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:  # noqa: ARG002
        if isinstance(value, bool):
            raise BadInput(f"{_option_name(param)}: must be {self._wanted()}, got {value!r}")
        if isinstance(value, int | float):
            number: float = value
        else:
            text = str(value).strip()
            try:
                number = int(text) if self.integer and text.lstrip("+-").isdigit() else float(text)
            except ValueError:
                number = math.nan
        too_low = (number <= 0 if self.minimum is None else number < self.minimum)
        if (not math.isfinite(number) or too_low or number > self.maximum
                or (self.integer and not float(number).is_integer())):
            shown = str(value) if len(str(value)) <= 40 else str(value)[:40] + "..."
            raise BadInput(f"{_option_name(param)}: must be {self._wanted()}, got {shown!r}")
        return int(number) if self.integer else float(number)


class OneOf(click.Choice):  # type: ignore[type-arg]
    """``click.Choice`` refusing in one line, as every option does:
    ``error: --cloud: must be one of aws, gcp, azure, got 'xyz'`` and exit code 2 (click's own
    refusal is four lines: the usage, a pointer to --help, a blank, the error)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            raise BadInput(f"{_option_name(param)}: must be one of "
                           f"{', '.join(map(str, self.choices))}, got {value!r}") from None


_Command = TypeVar("_Command", bound=Callable[..., Any])


def spec_file_argument(name: str, *, as_str: bool = False,
                       kind: str = "YAML") -> Callable[[_Command], _Command]:
    """``click.argument(name)`` for an input file (``kind``: YAML, CSV): bad paths are one
    line with exit code 2."""
    return click.argument(name, type=SpecFile(as_str=as_str, kind=kind))


def check_report_outputs(outputs: Sequence[tuple[str, Path | None]], *,
                         reads: Mapping[str, Path | None]) -> None:
    """Before the work, so a typo costs nothing: each given ``--csv``/``--html`` output (by
    option, in this order) can be written, and none is a file the command reads (``reads``,
    by name) or another output's, ``--csv``'s columns file (``NAME.columns.md``) included."""
    if all(path is None for _, path in outputs):
        return  # nothing to write: the reports' modules stay unloaded
    from reports.columns import columns_doc_path
    from reports.output import check_output_path, check_outputs_apart

    given: dict[str, Path] = {}
    for option, path in outputs:
        if path is None:
            continue
        check_output_path(path, option=option)
        given[option] = path
        if option == "--csv":
            given["--csv's columns file"] = columns_doc_path(path)
    check_outputs_apart(given, reads={name: path for name, path in reads.items()
                                      if path is not None})
