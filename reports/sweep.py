"""The sweep report (budget review): one self-contained HTML page plus the per-trial CSV.

Sections: summary (spend against the planned budget, savings by pruning, storage freed, best
trial and its cost), spend over time against the budget, spend and trials by state, cost per
trial against its objective, the trials, and the CSV columns. The page is
``templates/sweep.html.j2``; this module works out what it shows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from advisor.sweep import SweepStatus, TrialCost, TrialStatus
from reports._scale import wants_log_axis
from reports.charts import (
    Chart,
    Point,
    Series,
    StackedBar,
    line_chart,
    scatter_chart,
    stacked_bar_chart,
)
from reports.formatting import fmt_bytes, fmt_count, fmt_money
from reports.output import ReportFiles, ensure_folder, write_text
from reports.pdf import print_pdf
from reports.render import render
from reports.sweep_csv import COLUMN_DOCS, write_sweep_csv

__all__ = [
    "STATE_COLORS",
    "render_sweep_html",
    "spend_over_time",
    "write_sweep_html",
    "write_sweep_report",
]

STATE_COLORS = {TrialStatus.COMPLETE: "#1b7837", TrialStatus.PRUNED: "#d6842a",
                TrialStatus.FAIL: "#b2182b", TrialStatus.RUNNING: "#6b7785",
                TrialStatus.WAITING: "#a7b0bd"}
_STATE_NAMES = {TrialStatus.COMPLETE: "completed", TrialStatus.PRUNED: "pruned",
                TrialStatus.FAIL: "failed", TrialStatus.RUNNING: "running",
                TrialStatus.WAITING: "waiting"}
_TABLE_ROWS = 30


def _money(value: float) -> str:
    """Dollars as every output writes them (``fmt_money``: $1,234.50 / $12.35 / $0.0042 /
    $0.0000512), so the page and ``advisor sweep status`` show one figure alike."""
    return fmt_money(value)


def _value(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def spend_over_time(trials: Sequence[TrialCost]) -> tuple[list[tuple[float, float]], str]:
    """Cumulative dollars of ended trials, as (x, USD) steps, and the x axis label.

    x is the time since the first trial started (in hours, minutes or seconds, whichever
    reads best) when the trials carry times, else the count of trials ended.
    """
    ended = [t for t in trials if t.state.ended]
    timed = [t for t in ended if t.finished_at is not None]
    starts = [t.started_at for t in trials if t.started_at is not None]
    if timed and starts:
        origin = min(starts)
        order = sorted(timed, key=lambda t: (t.finished_at, t.number))
        seconds = [((t.finished_at or origin) - origin).total_seconds() for t in order]
        unit_s, unit = next((u, n) for u, n in ((3600.0, "hours"), (60.0, "minutes"), (1.0, "seconds"))
                            if max(seconds) >= 2 * u or u == 1.0)
        xs = [s / unit_s for s in seconds]
        label = f"{unit} since the first trial started"
    else:
        order = sorted(ended, key=lambda t: t.number)
        xs = [float(i) for i in range(1, len(order) + 1)]
        label = "trials ended"
    points, total = [(0.0, 0.0)], 0.0
    for x, t in zip(xs, order, strict=True):
        total += t.cost_usd
        points.append((x, total))
    return points, label


def _spend_chart(data: SweepStatus) -> Chart:
    points, x_label = spend_over_time(data.trials)
    hlines = [(data.budget_usd, f"budget {_money(data.budget_usd)}", "#b2182b")] \
        if data.budget_usd else []
    return line_chart([Series("spent (ended trials)", points, "#2166ac")],
                      x_label=x_label, y_label="cumulative spend (USD)", hlines=hlines,
                      name="spend-over-time", fmt_y=_money)


def _by_state(data: SweepStatus) -> tuple[Chart, list[list[object]]]:
    usd, counts = data.spend_by_state(), data.count_by_state()
    names = {s: _STATE_NAMES[s] for s in counts}
    colors = {names[s]: STATE_COLORS[s] for s in counts}
    bars = [StackedBar("dollars", [(names[s], v) for s, v in usd.items()], _money),
            StackedBar("trials", [(names[s], float(n)) for s, n in counts.items()],
                       lambda n: f"{n:,.0f}")]
    total = sum(usd.values()) or 1.0
    rows: list[list[object]] = [[names[s], counts[s], _money(usd[s]), f"{usd[s] / total:.0%}",
                                 _money(usd[s] / counts[s])] for s in counts]
    return stacked_bar_chart(bars, colors=colors, name="spend-by-state"), rows


def _objective_chart(data: SweepStatus, best: TrialCost | None) -> tuple[Chart, int]:
    shown = [t for t in data.trials if t.value is not None and math.isfinite(t.value)]
    points = [Point(t.cost_usd, float(t.value or 0.0), _STATE_NAMES[t.state],
                    f"trial {t.number} ({t.state}): {_money(t.cost_usd)}, objective "
                    f"{_value(t.value)}") for t in shown]
    at = next((i for i, t in enumerate(shown) if t is best), None)
    highlight = [] if at is None or best is None else [(points[at], f"best #{best.number}")]
    colors = {_STATE_NAMES[s]: c for s, c in STATE_COLORS.items()}
    chart = scatter_chart(points, x_label="trial cost (USD)", y_label="objective",
                          colors=colors, name="cost-vs-objective",
                          log_y=wants_log_axis([p.y for p in points]), highlight=highlight,
                          fmt_x=_money)
    return chart, len(points)


def _trial_rows(trials: Sequence[TrialCost]) -> list[list[object]]:
    return [[t.number, _STATE_NAMES[t.state], _value(t.value)
             + (" (last step)" if t.value_is_intermediate else ""), _money(t.cost_usd),
             "" if t.wall_s is None else f"{t.wall_s:,.1f}",
             t.started_at.strftime("%Y-%m-%d %H:%M:%S") if t.started_at else "",
             ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in sorted(t.params.items()))] for t in trials]


def render_sweep_html(data: SweepStatus, *, generated_at: datetime | None = None) -> str:
    """The whole sweep report as an HTML string."""
    best = data.best_trial()
    by_state, state_rows = _by_state(data)
    objective, valued = _objective_chart(data, best)
    costly = sorted(data.trials, key=lambda t: (-t.cost_usd, t.number))[:_TABLE_ROWS]
    return render(
        "sweep.html.j2", data=data, best=best, money=_money, size=fmt_bytes, value=_value,
        fmt_count=fmt_count, when=(generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        counts=", ".join(f"{n} {_STATE_NAMES[s]}" for s, n in data.count_by_state().items()),
        running_usd=sum(t.cost_usd for t in data.trials if t.state is TrialStatus.RUNNING),
        spend_chart=_spend_chart(data), by_state=by_state, state_rows=state_rows,
        objective=objective, valued=valued, costly=_trial_rows(costly),
        everything=_trial_rows(sorted(data.trials, key=lambda t: t.number)),
        best_params=[[k, str(v)] for k, v in sorted(best.params.items())] if best else [],
        columns=COLUMN_DOCS)


def write_sweep_html(data: SweepStatus, path: Path, *,
                     generated_at: datetime | None = None) -> Path:
    """Write the HTML report to ``path`` (UTF-8, missing folders created); returns the path."""
    return write_text(path, render_sweep_html(data, generated_at=generated_at))


def write_sweep_report(data: SweepStatus, out_dir: Path, *, pdf: bool = False,
                       name: str = "sweep", generated_at: datetime | None = None) -> ReportFiles:
    """Write ``<name>.html``, ``<name>.csv`` and ``<name>.columns.md`` (and ``.pdf``) to
    ``out_dir``, creating it."""
    ensure_folder(out_dir)
    html_path = write_sweep_html(data, out_dir / f"{name}.html", generated_at=generated_at)
    csv_path, doc = write_sweep_csv(data, out_dir / f"{name}.csv")
    pdf_path = print_pdf(html_path, out_dir / f"{name}.pdf") if pdf else None
    return ReportFiles(html_path, csv_path, doc, pdf_path)
