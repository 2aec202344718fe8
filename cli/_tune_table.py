"""``advisor probe --tune``: its options, and the tuning table it and ``advisor probes show``
print: one row per configuration, then the knobs that do not apply, the tuned
configuration and the profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.render import console, fmt_number
from probes import ProbeResult, RowKind, RowStatus, TuneReport, TuneRow

__all__ = ["print_tuning", "tune_options"]

_Command = TypeVar("_Command", bound=Callable[..., object])


def tune_options(command: _Command) -> _Command:
    """``--tune`` and ``--allow-numerics``."""
    command = click.option(
        "--allow-numerics", is_flag=True,
        help="With --tune: let precision and batch changes into the best combination (they "
             "change the numerics: check convergence before training with them).")(command)
    return click.option(
        "--tune", is_flag=True,
        help="Measure what each applicable knob buys on your step, one at a time, then the "
             "best combination and a short profile, inside the same time box: precision, "
             "channels-last, cuDNN autotuning (cudnn.benchmark, CUDA), torch.compile, batch, "
             "DataLoader num_workers and pin_memory, cached input vs your loader. How the box "
             "is shared: a tenth (1 to 30 s) is kept for the profile; the baseline goes first "
             "and measures until it settles, for at most a third of the rest (half when its "
             "steps are slow; longer only until 3 steps are timed, as nothing compares "
             "without it); the knobs, the baseline again and the combinations then "
             "share what is left evenly, each at least 8 steps at the baseline's pace (plus "
             "compiling); one that cannot get that is skipped for time, listed with what it "
             "needed.")(command)


_COLUMNS = ("knob", "setting", "samples/s", "±95%", "speed-up", "samples/$", "numerics", "note")
_TOP_OPERATORS = 5


def _cells(row: TuneRow, price_usd_per_hour: float) -> list[str]:
    measured = row.status is RowStatus.MEASURED
    per_usd = row.samples_per_usd(price_usd_per_hour) if measured else None
    note = row.note if measured else f"{row.status.replace('_', ' ')}: {row.note}"
    return [
        str(row.knob) if row.knob else str(row.kind), row.setting,
        fmt_number(row.samples_per_second) if measured and row.samples_per_second else "-",
        f"{row.rel_halfwidth:.1%}" if measured and row.rel_halfwidth is not None else "-",
        f"{row.speedup:.2f}x" if measured and row.speedup is not None else "-",
        fmt_number(per_usd) if per_usd is not None else "-",
        "needs a convergence check" if row.changes_numerics else "same",
        note,
    ]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _batch_line(result: ProbeResult, report: TuneReport) -> str:
    fits, failed = result.largest_batch_that_fits, result.smallest_batch_that_failed
    if result.batch_search_complete and fits is not None:
        return f"largest batch that fits: {fits} (searched to within 2%)"
    reach = report.batch_reach()
    if reach is None:
        return ""
    ran, best = reach
    bound = f"; batch {failed} ran out of memory" if failed else ""
    return (f"batch: the largest that ran is {ran}{bound} (--find-batch searches the limit); "
            f"the best samples/s is at batch {best}")


def _summary_lines(report: TuneReport, batch_line: str) -> list[str]:
    lines = [f"not applicable: {skip.knob}: {skip.reason}" for skip in report.skipped]
    late = report.skipped_for_time()
    if late:
        lines.append("skipped for time (no room left in the box for their least window; give "
                     "a longer --time-box): " + ", ".join(r.setting for r in late))
    missing = report.not_measured()
    if missing:
        lines.append("not measured: " + ", ".join(r.setting for r in missing))
    for allowed in (False, True) if report.allow_numerics else (False,):
        tuned = report.tuned(allow_numerics=allowed)
        if tuned is not None:
            caveat = "; needs a convergence check" if tuned.changes_numerics else ""
            lines.append(f"tuned{' (numerics allowed)' if allowed else ''}: {tuned.setting}: "
                         f"{tuned.speedup or 1.0:.2f}x the baseline{caveat}")
    gains = report.numerics_gains()
    if gains and not report.allow_numerics:
        shown = ", ".join(f"{r.setting} {r.speedup or 1.0:.2f}x" for r in gains)
        lines.append(f"held back, they change the numerics: {shown}; check convergence with "
                     "them, then tune again with --allow-numerics")
    if not any(r.kind is RowKind.COMBINATION for r in report.rows):
        keep = ("; keep the step as it is" if report.baseline.status is RowStatus.MEASURED
                else "")
        lines.append(f"tuned: {report.untuned_because}{keep}")
    if batch_line:
        lines.append(batch_line)
    profile = report.profile
    if profile is not None:
        split = ", ".join(f"{name} {_ms(s)} ({share:.0%})" for name, s, share in profile.shares())
        lines.append(f"profile of {profile.setting} ({profile.steps} steps): {split}")
        for op in profile.top_operators[:_TOP_OPERATORS]:
            name = op.name if len(op.name) <= 60 else op.name[:57] + "..."
            lines.append(f"  {name}: {_ms(op.self_time_s)} a step, {op.share:.0%} of the "
                         f"{profile.operator_time}, {op.calls:g} calls")
    return lines


def print_tuning(result: ProbeResult, *, price_usd_per_hour: float) -> None:
    """Print ``result``'s tuning (nothing when it has none): the table of rows with samples
    per dollar at ``price_usd_per_hour`` (``-`` when free), then the summary lines (its
    warnings, the drift among them, are ``cli.probe_table.print_warnings``'s)."""
    report = result.tuning
    if report is None:
        return
    out = console()
    measured = len(report.measured())
    table = Table(title=Text(
        f"tuning of probe {result.probe_id} on {result.offer_key} ({result.device}): "
        f"{measured} of {len(report.rows)} runs measured in {report.elapsed_s:.0f} s "
        f"of a {report.time_box_s:g} s box"))
    for name in _COLUMNS:
        numeric = name in ("samples/s", "±95%", "speed-up", "samples/$")
        table.add_column(name, justify="right" if numeric else "left", overflow="fold")
    for row in report.rows:
        table.add_row(*(Text(cell) for cell in _cells(row, price_usd_per_hour)))
    out.print(table)
    for line in _summary_lines(report, _batch_line(result, report)):
        out.print(escape(line))
