"""Turn the packages' exception roots into one line on stderr and exit code 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import click

from advisor.errors import AdvisorError
from pricing.errors import PricingError
from probes.errors import ProbeError

__all__ = ["USER_ERRORS", "handle_errors"]

P = ParamSpec("P")
R = TypeVar("R")

USER_ERRORS: tuple[type[Exception], ...] = (AdvisorError, PricingError, ProbeError)


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
