"""``lazy_exports`` for ``probes`` and its sub-packages: the one implementation lives in
``pricing._lazy``, the lowest layer, so that every package's face can use it."""

from __future__ import annotations

from pricing._lazy import lazy_exports

__all__ = ["lazy_exports"]
