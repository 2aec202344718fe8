"""The Jinja2 environment that renders every HTML report from ``reports/templates``.

Autoescaping is on for every template: text from the data (workload names, reasons, advice,
offer keys) is escaped wherever it lands, and a template writes markup only in its own source.
Templates are strict: an undefined name is an error, not an empty string. ``base.html.j2`` is
the page: inline CSS, a Content-Security-Policy that forbids any fetch, no scripts, no URLs.
"""

from __future__ import annotations

import functools

from jinja2 import Environment, PackageLoader, StrictUndefined

from reports.formatting import fmt_compact, fmt_money, fmt_number, fmt_usd

__all__ = ["CSP", "code_spans", "environment", "render"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def code_spans(text: str) -> list[tuple[str, bool]]:
    """``text`` cut at Markdown backticks into (part, is_code) pairs, so a template shows
    ```x``` as ``<code>x</code>`` (an unpaired backtick stays as it is)."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an odd number of backticks: the last one opens nothing
        parts[-2:] = [parts[-2] + "`" + parts[-1]]
    return [(part, i % 2 == 1) for i, part in enumerate(parts) if part]


def _px(value: float) -> str:
    return f"{value:.1f}"


def _hours(value: float) -> str:
    return f"{value:,.1f}"


def _pct(value: float) -> str:
    return f"{value:.0%}"


def _count(value: int) -> str:
    return f"{value:,}"


@functools.cache
def environment() -> Environment:
    """The shared environment (built once): autoescape, strict undefined, the report filters."""
    env = Environment(loader=PackageLoader("reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                      keep_trailing_newline=True)
    env.filters.update(px=_px, code_spans=code_spans, money=fmt_money, number=fmt_number,
                       compact=fmt_compact,
                       usd=fmt_usd, hours=_hours, pct=_pct, count=_count)
    env.globals["csp"] = CSP
    return env


def render(template: str, /, **context: object) -> str:
    """``template`` (a name under reports/templates) rendered with ``context``."""
    return environment().get_template(template).render(**context)
