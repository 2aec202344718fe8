"""Names a package exports but imports only on first use (PEP 562): ``probes``' one
implementation, which ``advisor``'s faces use too (advisor sits on probes)."""

from __future__ import annotations

from probes import lazy_exports

__all__ = ["lazy_exports"]
