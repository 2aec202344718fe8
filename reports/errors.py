"""Errors of the reports package (a kind of ``AdvisorError``, so the CLI prints one line)."""

from __future__ import annotations

from advisor.errors import AdvisorError

__all__ = ["ReportError"]


class ReportError(AdvisorError):
    """A report cannot be written as asked; the message names the option and the fix."""
