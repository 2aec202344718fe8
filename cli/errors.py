"""Turn the packages' exception roots into one line on stderr and exit code 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import IO, Any, ParamSpec, TypeVar

import click

from advisor.errors import AdvisorError
from pricing.errors import PricingError
from probes import ProbeError

__all__ = ["USER_ERRORS", "BadInput", "handle_errors"]

P = ParamSpec("P")
R = TypeVar("R")

USER_ERRORS: tuple[type[Exception], ...] = (AdvisorError, PricingError, ProbeError)


class BadInput(click.ClickException):
    """Bad input found while click parses the command line (an argument type's check):
    printed as ``error: <message>``, one line, exit code 2, without click's usage lines."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the one line on stderr."""
        click.echo(f"error: {self.format_message()}", file=file, err=file is None)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Wrap a click command: a user error prints ``error: <message>`` and exits 2."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except USER_ERRORS as exc:
            click.echo(f"error: {exc}", err=True)
            raise SystemExit(2) from None

    return wrapper
