"""A tiny HTML builder: escaped text, elements, tables and a self-contained page.

Everything a report needs is inline: one ``<style>``, SVG charts drawn by ``reports.charts``,
no scripts, no fonts, no URLs. The page carries a Content-Security-Policy that forbids any
fetch, so a stray external reference would be blocked (and reported) by the browser instead
of leaking a request.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

__all__ = [
    "CSP",
    "Child",
    "Markup",
    "card",
    "el",
    "escape",
    "offer_key",
    "page",
    "table",
]


class Markup(str):
    """HTML that is already safe (built by :func:`el` or :func:`escape`); never re-escaped."""

    __slots__ = ()


Child: TypeAlias = "str | int | float | Markup | None | Iterable[Child]"

_VOID = frozenset({"br", "hr", "meta", "col", "wbr"})

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_CSS = """
:root { --ink: #1d2430; --muted: #5b6575; --line: #d7dce3; --band: #f4f6f9;
        --accent: #2166ac; --good: #1b7837; --warn: #b35806; --bad: #b2182b; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0 auto; max-width: 72rem; padding: 1.5rem 2rem 3rem;
       line-height: 1.45; font-size: 15px; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.2rem; margin: 2rem 0 .5rem; border-bottom: 2px solid var(--line);
     padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
p.sub, .muted { color: var(--muted); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(12rem, 1fr));
         gap: .75rem; margin: 1rem 0; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: .6rem .8rem;
        background: var(--band); }
.card .k { font-size: .8rem; color: var(--muted); text-transform: uppercase;
           letter-spacing: .03em; }
.card .v { font-size: 1.35rem; font-weight: 600; }
.card .n { font-size: .8rem; color: var(--muted); }
.nobr { white-space: nowrap; }
table { border-collapse: collapse; width: 100%; font-size: .85rem; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid var(--line); padding: .25rem .45rem; text-align: left;
         vertical-align: top; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.top td { background: #e8f1fa; font-weight: 600; }
ul.notes li { margin: .2rem 0; }
p.headline { font-size: 1.05rem; font-weight: 600; }
.warning { border-left: 4px solid var(--warn); background: #fdf3e7; padding: .4rem .7rem;
           margin: .4rem 0; }
.advice { border-left: 4px solid var(--good); background: #edf6ee; padding: .4rem .7rem;
          margin: .4rem 0; }
.tag { display: inline-block; border-radius: 3px; padding: 0 .35rem; font-size: .75rem;
       color: #fff; }
.tag.measured { background: var(--good); } .tag.predicted { background: var(--accent); }
.tag.prior { background: var(--warn); } .tag.tuned { background: #5aae61; }
figure { margin: 1rem 0; break-inside: avoid; page-break-inside: avoid; }
figcaption { font-size: .85rem; color: var(--muted); margin-top: .3rem; }
svg.chart { width: 100%; height: auto; max-width: 100%; display: block;
            font-family: inherit; }
svg.chart text { fill: var(--ink); font-size: 11px; }
svg.chart .axis line, svg.chart .axis path { stroke: #8a94a3; }
svg.chart .grid line { stroke: #e6e9ee; }
details { margin: .5rem 0; } summary { cursor: pointer; color: var(--accent); }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .85em; }
footer { margin-top: 2.5rem; font-size: .8rem; color: var(--muted); }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  h2 { break-after: avoid; page-break-after: avoid; }
  tr, .card, figure { break-inside: avoid; page-break-inside: avoid; }
  details::details-content { content-visibility: visible; display: block; }
  summary { color: var(--ink); }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def escape(text: object) -> Markup:
    """``text`` as HTML-safe markup (``<``, ``>``, ``&`` and both quotes escaped)."""
    if isinstance(text, Markup):
        return text
    return Markup(html.escape(str(text), quote=True))


def _render_child(child: Child, out: list[str]) -> None:
    if child is None:
        return
    if isinstance(child, Markup):
        out.append(child)
    elif isinstance(child, str):
        out.append(html.escape(child, quote=False))
    elif isinstance(child, int | float):
        out.append(str(child))
    else:
        for sub in child:
            _render_child(sub, out)


def _attr_text(attrs: Mapping[str, object] | None) -> str:
    if not attrs:
        return ""
    parts = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        if value is True:
            parts.append(f" {name}")
        else:
            parts.append(f' {name}="{html.escape(str(value), quote=True)}"')
    return "".join(parts)


def el(tag: str, attrs: Mapping[str, object] | None = None, *children: Child) -> Markup:
    """``<tag attrs>children</tag>``; str children are escaped, ``Markup`` kept as is.

    Attribute values are escaped; ``None``/``False`` drop the attribute, ``True`` writes it
    bare (``open``). Void elements (``meta``, ``br``) take no children.
    """
    out = [f"<{tag}{_attr_text(attrs)}>"]
    if tag in _VOID:
        return Markup(out[0])
    for child in children:
        _render_child(child, out)
    out.append(f"</{tag}>")
    return Markup("".join(out))


def card(key: str, value: str, note: Child = "") -> Markup:
    """A summary card: a small caption, the value in large type and a note under it (if any)."""
    return el("div", {"class": "card"}, el("div", {"class": "k"}, key),
              el("div", {"class": "v"}, value), el("div", {"class": "n"}, note) if note else None)


def offer_key(key: str) -> Markup:
    """An offer key that wraps only after a ``:`` (``aws:p4d.24xlarge:`` / ``us-east-1``),
    never inside a part (at its hyphens or dots)."""
    parts = [el("span", {"class": "nobr"}, part) for part in key.split(":")]
    return Markup(":<wbr>".join(parts))


def table(headers: Sequence[str], rows: Iterable[Sequence[Child]], *,
          numeric: Iterable[int] = (), row_classes: Iterable[str | None] | None = None,
          caption: str | None = None) -> Markup:
    """A table; columns whose index is in ``numeric`` are right-aligned."""
    num = set(numeric)
    head = el("tr", None, [el("th", {"class": "num" if i in num else None}, h)
                           for i, h in enumerate(headers)])
    classes = iter(row_classes) if row_classes is not None else None
    body = []
    for row in rows:
        cls = next(classes, None) if classes is not None else None
        body.append(el("tr", {"class": cls}, [el("td", {"class": "num" if i in num else None}, c)
                                              for i, c in enumerate(row)]))
    return el("table", None, el("caption", None, caption) if caption else None,
              el("thead", None, head), el("tbody", None, body))


def page(title: str, *body: Child, footer: Child = None) -> str:
    """A complete, self-contained HTML document (inline CSS, CSP forbidding all fetches)."""
    head = el(
        "head", None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("title", None, title),
        el("style", None, Markup(_CSS)),
    )
    foot = el("footer", None, footer) if footer is not None else None
    return "<!DOCTYPE html>\n" + el("html", {"lang": "en"}, head,
                                    el("body", None, *body, foot)) + "\n"
