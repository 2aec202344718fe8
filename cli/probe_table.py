"""The probe table of ``advisor probe`` and ``advisor probes list``: fits the console without
ever cutting a probe id."""

from __future__ import annotations

from typing import Any

from cli.render import console, fit_widths, fmt_number

__all__ = ["probe_table"]


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
    halfwidth = row["rel_halfwidth"]
    return {
        "probe": row["probe_id"], "offer": row["offer_key"], "status": row["status"],
        "device": row.get("accelerator") or row["device"],
        "batch": str(row["batch_size"]), "samples/s": _num(row["samples_per_second"]),
        "±95%": f"{halfwidth:.1%}" if halfwidth is not None else "-",
        "step p50 s": _num(row["step_time_p50_s"], ".4g"),
        "step p90 s": _num(row["step_time_p90_s"], ".4g"),
        "peak GiB": _num(row["peak_memory_gib"], ".2f"),
        "input ratio": _num(row["input_bound_ratio"], ".2f"),
        "max batch": _num(row["largest_batch_that_fits"], "d"),
        "wall s": f"{row['wall_time_s']:.1f}", "$": f"{row['cost_usd']:.4f}",
    }


def _layout(cells: list[dict[str, str]], width: int) -> tuple[list[str], list[int], list[str]]:
    """Columns, their content widths and the optional columns left out to fit ``width``.

    The probe id is never cut (it is what 'probes show' takes). Optional columns are left out
    before an offer key is folded over more than two lines; only when that is not enough does
    it fold further (down to ``_MIN_OFFER`` characters a line); on a console narrower still,
    every column but the id folds (each character is still shown).
    """
    for fold_offer in (False, True):
        columns, dropped = list(_COLUMNS), []
        for name in (None, *_OPTIONAL):
            if name is not None:
                columns.remove(name)
                dropped.append(name)
            maxes = [max(len(text) for text in (c, *(r[c] for r in cells))) for c in columns]
            mins = [min(_MIN_OFFER if fold_offer else -(-top // 2), top) if c == "offer" else
                    max(*(len(word) for word in c.split()), *(len(r[c]) for r in cells))
                    for c, top in zip(columns, maxes, strict=True)]
            widths = fit_widths(mins, maxes, width)
            if widths is not None:
                return columns, widths, dropped
    mins = [m if c == "probe" else 1 for c, m in zip(columns, mins, strict=True)]
    return columns, fit_widths(mins, maxes, width) or mins, dropped


def probe_table(rows: list[dict[str, Any]], title: str) -> None:
    """Print probe rows (as ``advisor probe --json`` gives them) as a table that fits the
    console, then each probe's error and findings."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    out = console()
    cells = [_cells(row) for row in rows]
    columns, widths, dropped = _layout(cells, out.width)
    table = Table(title=Text(title))
    for name, width in zip(columns, widths, strict=True):
        table.add_column(name, justify="left" if name in _TEXT_COLUMNS else "right",
                         width=width, overflow="fold")
    for texts in cells:
        table.add_row(*(Text(texts[name]) for name in columns))
    out.print(table)
    if dropped:
        out.print(f"({', '.join(dropped)} left out to fit {out.width} columns; "
                  "--json has every column)")
    for row in rows:
        if row["error"]:
            out.print(f"[bold]{row['probe_id']}[/bold] {row['status']}: {escape(row['error'])}")
        for finding in row.get("findings", []):
            text = f"{finding['advice']} ({finding['evidence']}; {finding['expected_gain']})"
            out.print(f"[bold]{row['probe_id']}[/bold] {finding['kind']}: {escape(text)}")
