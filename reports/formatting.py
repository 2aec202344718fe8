"""How numbers read in every output: the formatters of ``advisor.formatting``, re-exported for
the renderers (one figure looks the same in the terminal, the JSON texts and the HTML)."""

from __future__ import annotations

from advisor.formatting import fmt_bytes, fmt_compact, fmt_count, fmt_money, fmt_number, fmt_usd

__all__ = ["fmt_bytes", "fmt_compact", "fmt_count", "fmt_money", "fmt_number", "fmt_usd"]
