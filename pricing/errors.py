"""The one exception root of the pricing package."""

from __future__ import annotations

__all__ = ["PricingError", "SnapshotError", "UnknownNameError"]


class PricingError(Exception):
    """Anything the pricing package cannot do; the message says what to change."""


class UnknownNameError(PricingError, ValueError):
    """A cloud, region or accelerator name that the catalog does not know."""


class SnapshotError(PricingError):
    """A price catalog file (a refreshed snapshot, its meta file or the shipped catalog) that
    cannot be used: unreadable meta, a missing column, a bad row, no offers, another schema
    version. The message names the file (and line) and whether to fix, delete or refresh it;
    a caller can fall back to other prices."""
