"""The probe report of a tuned probe: its tuning table and step profile as CSV, and one
self-contained HTML page with a bar chart of the speed-ups.

``write_probe_report(result, out_dir, price_usd_per_hour=...)`` writes ``probe.html``,
``probe_tuning.csv`` (one row per configuration) and ``probe_profile.csv`` (the time split
and the top operators), each CSV with its ``.columns.md``. Pure: values in, files out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from probes import ProbeResult, RowKind, RowStatus, StepProfile, TuneRow, probe_warnings
from reports.charts import Bar, StackedBar, bar_chart, stacked_bar_chart
from reports.columns import column_table, write_csv
from reports.errors import ReportError
from reports.formatting import fmt_number
from reports.output import ReportFiles, ensure_folder, write_text
from reports.pdf import print_pdf
from reports.render import render

__all__ = ["PROFILE_COLUMNS", "TUNING_COLUMNS", "ProbeReportFiles", "profile_rows",
           "tuning_rows", "write_probe_report"]

TUNING_COLUMNS = column_table("""
probe_id                |             | the probe that ran the tune
offer                   |             | offer key the probe ran on (`local`: this machine)
device                  |             | the device as its runtime names it
kind                    |             | `baseline` (the spec as written), `trial` (one knob changed),
                                        `baseline_again` (after the trials: the machine's drift) or
                                        `combination` (the knobs that beat both baselines, together)
knob                    |             | the knob a trial changes (empty for the baseline and combinations)
setting                 |             | the configuration's change in words
status                  |             | `measured`, `oom`, `failed`, `not_measured` (started, but fewer than
                                        3 steps timed; or a batch size not tried) or `skipped_for_time` (not
                                        started: the box had no room for it)
samples_per_second      | samples/s   | steady-state training throughput
samples_per_second_low  | samples/s   | low end of the 95% interval
samples_per_second_high | samples/s   | high end of the 95% interval
speedup                 | x           | samples/s over the baseline's
samples_per_usd         | samples/USD | samples per dollar at the offer's price (empty when the offer is
                                        free, as local probes are)
changes_numerics        |             | `true` when precision or batch differ from the spec: needs a
                                        convergence check before training with it
precision               |             | fp32, tf32, bf16 or fp16
batch_size              | samples     | per-device batch
channels_last           |             | `true` for channels-last memory format
compiler                |             | torch.compile backend (empty: eager)
cudnn_benchmark         |             | `true` when cuDNN autotuned the convolutions
                                        (torch.backends.cudnn.benchmark; the baseline keeps the
                                        process's setting, torch's default is off)
input                   |             | `cached` (one batch reused) or `loader` (the entrypoint's loader)
num_workers             |             | DataLoader workers (empty: as the loader has them)
pin_memory              |             | DataLoader pinned memory (empty: as the loader has it)
measured_steps          | steps       | steps measured after warm-up
peak_memory_gib         | GiB         | peak device memory (process RSS growth on the CPU)
note                    |             | why a row was not measured or failed, or what a combination held
                                        back
""")
PROFILE_COLUMNS = column_table("""
section          |          | `phase` (input wait, forward, backward, optimizer) or `operator`
name             |          | the phase, or the operator as torch.profiler names it
seconds_per_step | seconds  | mean time per profiled step (operators: self time)
share            | fraction | of the step (phases) or of all operators' self time
calls_per_step   | calls    | operator calls per step (empty for phases)
""")
_GROUP_COLORS = {"baseline": "#6b7785", "same numerics": "#1b7837",
                 "changes numerics": "#d6842a", "combination": "#2166ac"}
_PHASE_COLORS = {"input wait": "#b2182b", "forward": "#2166ac", "backward": "#4393c3",
                 "optimizer": "#1b7837"}


@dataclass(frozen=True)
class ProbeReportFiles(ReportFiles):
    """Paths the probe report wrote: ``csv`` is the tuning table, ``profile_csv`` the profile."""

    profile_csv: Path | None = None
    profile_columns: Path | None = None


def _blank(value: Any) -> Any:
    return "" if value is None else value


def tuning_rows(result: ProbeResult, price_usd_per_hour: float) -> list[dict[str, Any]]:
    """The tuning CSV rows as dicts keyed by the column names, baseline first."""
    assert result.tuning is not None
    rows = []
    for row in result.tuning.rows:
        low, high = row.interval or (None, None)
        cfg = row.config
        rows.append({
            "probe_id": result.probe_id, "offer": result.offer_key, "device": result.device,
            "kind": str(row.kind), "knob": _blank(row.knob), "setting": row.setting,
            "status": str(row.status), "samples_per_second": _blank(row.samples_per_second),
            "samples_per_second_low": _blank(low), "samples_per_second_high": _blank(high),
            "speedup": _blank(row.speedup),
            "samples_per_usd": _blank(row.samples_per_usd(price_usd_per_hour)),
            "changes_numerics": str(row.changes_numerics).lower(),
            "precision": str(cfg.precision), "batch_size": cfg.batch_size,
            "channels_last": str(cfg.channels_last).lower(), "compiler": _blank(cfg.compiler),
            "cudnn_benchmark": str(cfg.cudnn_benchmark).lower(),
            "input": "cached" if cfg.cached_input else "loader",
            "num_workers": _blank(cfg.num_workers),
            "pin_memory": "" if cfg.pin_memory is None else str(cfg.pin_memory).lower(),
            "measured_steps": row.measured_steps, "peak_memory_gib": _blank(row.peak_memory_gib),
            "note": row.note,
        })
    return rows


def profile_rows(profile: StepProfile) -> list[dict[str, Any]]:
    """The profile CSV rows: the four phases, then the top operators."""
    rows = [{"section": "phase", "name": name, "seconds_per_step": seconds, "share": share,
             "calls_per_step": ""} for name, seconds, share in profile.shares()]
    rows += [{"section": "operator", "name": op.name, "seconds_per_step": op.self_time_s,
              "share": op.share, "calls_per_step": op.calls} for op in profile.top_operators]
    return rows


def _group(row: TuneRow) -> str:
    if row.kind in (RowKind.BASELINE, RowKind.RECHECK):
        return "baseline"
    if row.kind is RowKind.COMBINATION:
        return "combination" if not row.changes_numerics else "changes numerics"
    return "changes numerics" if row.changes_numerics else "same numerics"


def _speedup_bars(rows: Sequence[TuneRow]) -> list[Bar]:
    base = rows[0].samples_per_second or 1.0
    bars = []
    for row in rows:
        if row.status is not RowStatus.MEASURED or row.speedup is None:
            continue
        low, high = row.interval or (None, None)
        bars.append(Bar(f"{row.knob or row.kind}: {row.setting}", row.speedup,
                        low / base if low is not None else None,
                        high / base if high is not None and high != float("inf") else None,
                        group=_group(row),
                        title=f"{row.setting}: {row.speedup:.2f}x the baseline"))
    return bars


def _num(value: float | None, fmt: str = "") -> str:
    if value is None:
        return "-"
    return format(value, fmt) if fmt else fmt_number(value)


def render_probe_html(result: ProbeResult, *, price_usd_per_hour: float,
                      generated_at: datetime) -> str:
    """The whole page of a tuned probe as one HTML document, with every warning the CLI
    prints for it (``probes.probe_warnings``)."""
    report = result.tuning
    assert report is not None
    rows = report.rows
    tuned = report.tuned(allow_numerics=report.allow_numerics)
    cells = [[str(r.knob or r.kind), r.setting, str(r.status), _num(r.samples_per_second),
              _num(r.rel_halfwidth, ".1%"), f"{r.speedup:.2f}x" if r.speedup else "-",
              _num(r.samples_per_usd(price_usd_per_hour)),
              "needs a convergence check" if r.changes_numerics else "same", r.note] for r in rows]
    profile = report.profile
    split = None if profile is None else stacked_bar_chart(
        [StackedBar("one step", profile.phases(), fmt=lambda s: f"{s * 1e3:.3g} ms")],
        colors=_PHASE_COLORS, name="step-split")
    operators = [] if profile is None else [
        [op.name, f"{op.self_time_s * 1e3:.3g} ms", f"{op.share:.0%}", f"{op.calls:g}"]
        for op in profile.top_operators]
    return render(
        "probe.html.j2", result=result, report=report, tuned=tuned,
        warnings=probe_warnings(result),
        tuned_index=next((i for i, r in enumerate(rows) if r is tuned), None),
        baseline_speed=_num(rows[0].samples_per_second), measured=len(report.measured()),
        speedups=bar_chart(_speedup_bars(rows), x_label="speed-up (x the baseline)",
                           colors=_GROUP_COLORS, name="speedups", fmt=lambda v: f"{v:.2f}x"),
        cells=cells, profile=profile, split=split, operators=operators,
        columns=TUNING_COLUMNS, when=f"{generated_at:%Y-%m-%d %H:%M}")


def write_probe_report(result: ProbeResult, out_dir: Path, *, price_usd_per_hour: float,
                       pdf: bool = False, generated_at: datetime | None = None) -> ProbeReportFiles:
    """Write the probe report of a tuned ``result`` into ``out_dir`` (created); ReportError
    when the probe was not tuned."""
    if result.tuning is None:
        raise ReportError(f"probe {result.probe_id} was not tuned; run 'advisor probe "
                          "MODEL_YAML --on OFFER --tune' and report that probe")
    ensure_folder(out_dir)
    when = generated_at or datetime.now(UTC)
    html_path = write_text(out_dir / "probe.html", render_probe_html(
        result, price_usd_per_hour=price_usd_per_hour, generated_at=when))
    tuning_csv, doc = write_csv(out_dir / "probe_tuning.csv", TUNING_COLUMNS,
                                tuning_rows(result, price_usd_per_hour),
                                intro="One row per configuration the tune ran, the baseline "
                                      "first. Empty cells: not measured or not applicable.")
    profile_csv = profile_doc = None
    if result.tuning.profile is not None:
        profile_csv, profile_doc = write_csv(
            out_dir / "probe_profile.csv", PROFILE_COLUMNS, profile_rows(result.tuning.profile),
            intro="The profiled configuration's time split per step, then its top operators by "
                  "self time.")
    pdf_path = print_pdf(html_path, out_dir / "probe.pdf") if pdf else None
    return ProbeReportFiles(html_path, tuning_csv, doc, pdf_path, profile_csv, profile_doc)
