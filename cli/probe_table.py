"""The probe table of ``advisor probe`` and ``advisor probes list``: fits the console without
ever cutting a probe id."""

from __future__ import annotations

import textwrap
from itertools import product
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.render import console, fmt_number, min_width, printable
from pricing import PricingError, billing_rule, parse_offer_key
from probes import FindingKind, ProbeResult, fmt_usd_small, probe_warnings

__all__ = ["billing_notes", "op_class_line", "print_warnings", "probe_table"]

# findings whose advice a warning of ``probes.probe_warnings`` already carries
_WARNED = (FindingKind.INPUT_BOUND, FindingKind.NOISY)


def _num(value: float | None, fmt: str = "") -> str:
    if value is None:
        return "-"
    return format(value, fmt) if fmt else fmt_number(value)


_TEXT_COLUMNS = ("probe", "offer", "device", "status")
_COLUMNS = (*_TEXT_COLUMNS, "batch", "samples/s", "±95%", "step p50 s", "step p90 s",
            "peak GiB", "input ratio", "max batch", "wall s", "$")
# Left out, in this order, when the table cannot fit otherwise (--json keeps them all).
_OPTIONAL = ("step p90 s", "±95%", "wall s", "input ratio", "max batch", "step p50 s", "peak GiB",
             "device")
_MIN_OFFER = 12  # an offer key folds onto more lines down to this width


def _cells(row: dict[str, Any]) -> dict[str, str]:
    """The texts of one row, escapes from stored data shown escaped."""
    halfwidth = row["rel_halfwidth"]
    cells = {
        "probe": row["probe_id"], "offer": row["offer_key"],
        "status": (f"{row['status']} unsettled"  # measured, interval over the target: exit 3
                   if row["status"] == "ok" and not row.get("stable", True) else row["status"]),
        "device": row.get("accelerator") or row["device"] or "-",  # "": none was seen
        "batch": str(row["batch_size"]), "samples/s": _num(row["samples_per_second"]),
        "±95%": f"{halfwidth:.1%}" if halfwidth is not None else "-",
        "step p50 s": _num(row["step_time_p50_s"], ".4g"),
        "step p90 s": _num(row["step_time_p90_s"], ".4g"),
        "peak GiB": _num(row["peak_memory_gib"], ".2f"),
        "input ratio": _num(row["input_bound_ratio"], ".2f"),
        "max batch": _num(row["largest_batch_that_fits"], "d"),
        "wall s": f"{row['wall_time_s']:.1f}", "$": fmt_usd_small(row["cost_usd"]),
    }
    return {name: printable(text) for name, text in cells.items()}


def _table(title: str, cells: list[dict[str, str]], columns: list[str], *,
           offer_max_width: int | None = None, stacked: bool = False) -> Table:
    """The cells as a rich table: rich folds the offer keys to fit the console (to at most
    ``offer_max_width`` characters a line when given); every other column is never narrowed
    (its minimum width is its longest cell or header line). ``stacked`` breaks each header
    after its first word."""
    table = Table(title=Text(title))
    for name in columns:
        header = name.replace(" ", "\n", 1) if stacked else name
        longest = max(len(text) for text in (*header.split("\n"), *(c[name] for c in cells)))
        folds = name == "offer"
        table.add_column(header, justify="left" if name in _TEXT_COLUMNS else "right",
                         overflow="fold", no_wrap=not folds, min_width=None if folds else longest,
                         max_width=offer_max_width if folds else None)
    for texts in cells:
        table.add_row(*(Text(texts[name]) for name in columns))
    return table


def _entries(title: str, cells: list[dict[str, str]]) -> Group:
    """The narrow-console layout: one entry per probe, a line per column, the id first (folded
    only when the console is narrower than the id)."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(overflow="fold")
    for i, texts in enumerate(cells):
        if i:
            grid.add_row()
        for name in _COLUMNS:
            grid.add_row(name, Text(texts[name]))
    return Group(Text(title), grid)


def _layout(title: str, cells: list[dict[str, str]], width: int) -> tuple[Table | Group, list[str]]:
    """The probe table no wider than ``width``, and the optional columns it left out.

    The probe id is never cut (it is what 'probes show' takes). Headers break after their
    first word before optional columns are left out (while rich measures the table wider than
    ``width``), and both happen before an offer key is folded over more than two lines; only
    when that is not enough does it fold further (down to ``_MIN_OFFER`` characters a line);
    on a console narrower still, each probe becomes an entry with a line per column.
    """
    half_offer = -(-max(len(text) for text in ("offer", *(c["offer"] for c in cells))) // 2)
    for offer_width, n, stacked in product((half_offer, _MIN_OFFER), range(len(_OPTIONAL) + 1),
                                           (False, True)):
        columns = [c for c in _COLUMNS if c not in _OPTIONAL[:n]]
        folded = _table(title, cells, columns, offer_max_width=offer_width, stacked=stacked)
        if min_width(folded) <= width:
            return _table(title, cells, columns, stacked=stacked), list(_OPTIONAL[:n])
    return _entries(title, cells), []


def billing_notes(offer_keys: list[str]) -> list[str]:
    """How the clouds of ``offer_keys`` bill a probe's instance, one line per rule
    (``$: aws bills per second, 60 s minimum``); none for local probes and unknown clouds."""
    clouds: dict[str, list[str]] = {}
    for key in offer_keys:
        try:
            cloud = parse_offer_key(key).cloud
            rule = billing_rule(cloud) if cloud is not None else None
        except PricingError:
            continue
        if rule is not None and str(cloud) not in clouds.setdefault(rule.text(), []):
            clouds[rule.text()].append(str(cloud))
    return [f"$: {' and '.join(names)} bill{'' if len(names) > 1 else 's'} {text}"
            for text, names in clouds.items()]


def probe_table(rows: list[dict[str, Any]], title: str, *, warnings_follow: bool = False) -> None:
    """Print probe rows (as ``advisor probe --json`` gives them) as a table that fits the
    console, then each probe's error and findings; with ``warnings_follow`` the error and the
    input-bound and noisy-estimate findings are left to ``print_warnings``, which the caller
    calls next."""
    out = console()
    table, dropped = _layout(title, [_cells(row) for row in rows], out.width)
    out.print(table)
    if dropped:
        out.print(f"({', '.join(dropped)} left out to fit {out.width} columns; "
                  "--json has every column)")
    for note in billing_notes([row["offer_key"] for row in rows]):
        out.print(escape(note))
    for row in rows:
        if row["error"] and not warnings_follow:
            out.print(f"[bold]{escape(printable(row['probe_id']))}[/bold] {row['status']}: "
                      f"{escape(printable(row['error']))}")
        for finding in row.get("findings", []):
            if warnings_follow and finding["kind"] in _WARNED:
                continue
            text = f"{finding['advice']} ({finding['evidence']}; {finding['expected_gain']})"
            out.print(f"[bold]{escape(printable(row['probe_id']))}[/bold] {finding['kind']}: "
                      f"{escape(printable(text))}")


def print_warnings(result: ProbeResult) -> None:
    """Print ``result``'s warnings (``probes.probe_warnings``, the ones probe.html shows), one
    ``warning: PROBE_ID: ...`` line each."""
    out = console()
    for text in probe_warnings(result):
        line = f"warning: {printable(result.probe_id)}: {printable(text)}"
        # wrapped under the text: a continuation never restarts at column 0
        for part in textwrap.wrap(line, width=out.width, subsequent_indent=" " * 9,
                                  break_on_hyphens=False) or [line]:
            out.print(Text(part), soft_wrap=True)


def op_class_line(result: ProbeResult) -> str:
    """``result``'s time per step by operator class, largest first, with its share (``matmul
    1.2 ms (61%), ...``) and which time it is; "" where the probe recorded none."""
    seconds = {name: s for name, s in result.op_class_seconds.items() if s > 0}
    total = sum(seconds.values())
    if total <= 0:
        return ""
    kind = "CPU self time" if result.device == "cpu" else "device time"
    parts = ", ".join(f"{name} {_duration(s)} ({s / total:.0%})"
                      for name, s in sorted(seconds.items(), key=lambda item: -item[1]))
    return f"operator classes ({kind} per step, profiled): {parts}"


def _duration(seconds: float) -> str:
    """Three significant digits in s, ms or µs, whichever keeps them before the point."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms")):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e6:.3g} µs"
