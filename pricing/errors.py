"""The one exception root of the pricing package."""

from __future__ import annotations

__all__ = ["PricingError", "UnknownNameError"]


class PricingError(Exception):
    """Anything the pricing package cannot do; the message says what to change."""


class UnknownNameError(PricingError, ValueError):
    """A cloud, region or accelerator name that the catalog does not know."""
