"""Names a package exports but imports only on first use (PEP 562), so importing the package
stays fast and free of heavy dependencies. The one implementation: it lives in the lowest
layer, so that ``pricing``, ``probes`` and its sub-packages and ``advisor``'s faces all use it."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, home: Mapping[str, str], namespace: dict[str, Any],
                 exported: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: each name in ``home`` is imported from
    ``package.<home[name]>`` the first time it is read, then kept in ``namespace``."""
    def getattr_(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted([*namespace, *exported])

    return getattr_, dir_
