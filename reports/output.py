"""What writing a report produced."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["ReportFiles"]


@dataclass(frozen=True)
class ReportFiles:
    """Paths a report wrote (``pdf`` is None unless asked for)."""

    html: Path
    csv: Path
    columns: Path
    pdf: Path | None = None
