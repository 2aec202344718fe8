"""The one exception root of the probes package."""

from __future__ import annotations

__all__ = ["ProbeError"]


class ProbeError(Exception):
    """Anything the probes package cannot do; the message says what to change."""
