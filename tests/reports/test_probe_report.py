"""``advisor report probe``: the tuning and profile CSVs and the self-contained HTML page."""

from __future__ import annotations

import csv
import html
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from offline_html import external_references

from advisor.storage import default_storage_url
from cli.main import advisor
from probes.store import ProbeStore
from probes.tune.knobs import Knob, Skipped, StepConfig
from probes.tune.profile import OperatorTime, StepProfile
from probes.tune.report import RowKind, RowStatus, TuneReport, TuneRow
from probes.types import ProbeResult, ProbeStatus
from probes.vocabulary import Precision
from reports.probe import TUNING_COLUMNS, write_probe_report

GENERATED_AT = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
BASE = StepConfig(Precision.FP32, 16)


def _row(kind: RowKind, knob: Knob | None, config: StepConfig, sps: float | None, *,
         numerics: bool = False, status: RowStatus = RowStatus.MEASURED,
         note: str = "") -> TuneRow:
    setting = config.setting(knob) if knob else config.describe()
    return TuneRow(kind, knob, setting, config, status, numerics, samples_per_second=sps,
                   rel_halfwidth=0.02 if sps else None, speedup=sps / 100.0 if sps else None,
                   measured_steps=30 if sps else 0, note=note)


def tuned_sample(probe_id: str = "tune0001") -> ProbeResult:
    """A tuned probe on an A10G offer: channels-last and compile won, bf16 held back."""
    cl = replace(BASE, channels_last=True)
    rows = (
        _row(RowKind.BASELINE, None, BASE, 100.0),
        _row(RowKind.TRIAL, Knob.PRECISION, replace(BASE, precision=Precision.BF16), 190.0,
             numerics=True),
        _row(RowKind.TRIAL, Knob.MEMORY_FORMAT, cl, 120.0),
        _row(RowKind.TRIAL, Knob.BATCH, replace(BASE, batch_size=32), None, numerics=True,
             status=RowStatus.OOM, note="out of memory at batch 32"),
        _row(RowKind.TRIAL, Knob.COMPILER, replace(BASE, compiler="inductor"), None,
             status=RowStatus.NOT_MEASURED, note="it may take 60 s to compile and 9 s were left"),
        replace(_row(RowKind.COMBINATION, None, cl, 120.0), setting="channels_last",
                note="held back (changes numerics; --allow-numerics applies it): bf16"),
    )
    profile = StepProfile("channels_last", 5, 0.001, 0.02, 0.03, 0.01,
                          (OperatorTime("aten::convolution_backward", 0.012, 53.0, 0.3),
                           OperatorTime("aten::mkldnn_convolution", 0.006, 53.0, 0.15)))
    report = TuneReport(rows, (Skipped(Knob.INPUT, "the entrypoint gives no make_loader"),),
                        allow_numerics=False, time_box_s=120.0, elapsed_s=101.0, profile=profile)
    return ProbeResult(probe_id=probe_id, offer_key="aws:g5.xlarge:us-east-1",
                       workload_fingerprint="fp", status=ProbeStatus.OK, batch_size=16,
                       samples_per_second=100.0, measured_steps=30, stable=True,
                       device="cuda:NVIDIA A10G", accelerator="A10G", tuning=report)


def test_the_report_writes_html_and_both_csvs(tmp_path: Path) -> None:
    files = write_probe_report(tuned_sample(), tmp_path, price_usd_per_hour=1.0,
                               generated_at=GENERATED_AT)
    assert {p.name for p in tmp_path.iterdir()} == {
        "probe.html", "probe_tuning.csv", "probe_tuning.columns.md", "probe_profile.csv",
        "probe_profile.columns.md"}
    assert files.html.name == "probe.html" and files.profile_csv is not None


def test_the_tuning_csv_has_one_row_per_configuration(tmp_path: Path) -> None:
    files = write_probe_report(tuned_sample(), tmp_path, price_usd_per_hour=1.0,
                               generated_at=GENERATED_AT)
    with files.csv.open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == [c.name for c in TUNING_COLUMNS]
    assert [r["kind"] for r in rows] == ["baseline", "trial", "trial", "trial", "trial",
                                         "combination"]
    bf16 = rows[1]
    assert bf16["changes_numerics"] == "true" and float(bf16["speedup"]) == 1.9
    assert float(rows[0]["samples_per_usd"]) == 100.0 * 3600  # 100 samples/s at $1/h
    assert rows[4]["status"] == "not_measured" and rows[4]["samples_per_second"] == ""


def test_the_profile_csv_has_phases_then_operators(tmp_path: Path) -> None:
    files = write_probe_report(tuned_sample(), tmp_path, price_usd_per_hour=1.0)
    assert files.profile_csv is not None
    with files.profile_csv.open() as handle:
        rows = list(csv.DictReader(handle))
    assert [r["name"] for r in rows[:4]] == ["input wait", "forward", "backward", "optimizer"]
    assert rows[4]["section"] == "operator" and rows[4]["name"] == "aten::convolution_backward"


def test_the_html_is_self_contained_with_a_bar_per_measured_row(tmp_path: Path) -> None:
    files = write_probe_report(tuned_sample(), tmp_path, price_usd_per_hour=1.0,
                               generated_at=GENERATED_AT)
    document = files.html.read_text()
    assert external_references(document) == []
    chart = document.split('data-chart="speedups"')[1].split("</svg>")[0]
    assert chart.count('class="mark"') == 4  # baseline, bf16, channels_last, the combination
    assert "needs a convergence check" in document and 'data-chart="step-split"' in document


def test_a_probe_that_was_not_tuned_is_one_line_and_exit_2(tmp_path: Path) -> None:
    store = ProbeStore(default_storage_url())
    store.record(replace(tuned_sample("plain0001"), tuning=None))
    done = CliRunner().invoke(advisor, ["report", "probe", "plain", "--out", str(tmp_path)])
    assert done.exit_code == 2
    assert "was not tuned" in done.output and "Traceback" not in done.output


def test_the_cli_writes_the_report_of_a_stored_probe(tmp_path: Path) -> None:
    ProbeStore(default_storage_url()).record(tuned_sample())
    done = CliRunner().invoke(advisor, ["report", "probe", "tune", "--out", str(tmp_path / "r"),
                                        "--json"])
    assert done.exit_code == 0, done.output
    paths = json.loads(done.stdout)
    assert Path(paths["html"]).exists() and Path(paths["profile_csv"]).exists()


def _drifted_unsettled_sample() -> ProbeResult:
    """The sample tune, its baseline slowed to 0.10x after the trials, its samples/s unsettled
    and held back by its loader."""
    sample = tuned_sample("drift0001")
    assert sample.tuning is not None
    again = _row(RowKind.RECHECK, None, BASE, 10.0)
    rows = (*sample.tuning.rows[:5], replace(again, setting="the baseline again"),
            *sample.tuning.rows[5:])
    return replace(sample, stable=False, rel_halfwidth=0.418, input_bound_ratio=2.5,
                   tuning=replace(sample.tuning, rows=rows))


def test_every_warning_the_cli_prints_for_a_probe_is_in_its_html(tmp_path: Path) -> None:
    ProbeStore(default_storage_url()).record(_drifted_unsettled_sample())
    runner = CliRunner()
    shown = runner.invoke(advisor, ["probes", "show", "drift"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    warnings = [line[line.index("warning: "):].strip() for line in shown.output.splitlines()
                if "warning: " in line]
    assert any("0.10x its first speed" in w for w in warnings), shown.output  # the drift
    assert any("±41.8%" in w for w in warnings) and any("input-bound" in w for w in warnings)
    done = runner.invoke(advisor, ["report", "probe", "drift", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    page = html.unescape((tmp_path / "probe.html").read_text())
    for warning in warnings:
        assert warning.replace("warning: drift0001: ", "warning: ") in page, warning


def _unmeasured_baseline_sample() -> ProbeResult:
    """A tune whose time box ended before its baseline was measured (a 40 s box on a CPU)."""
    note = "its first steps took its whole share of the box (4 s); give a longer --time-box"
    rows = (_row(RowKind.BASELINE, None, BASE, None, status=RowStatus.NOT_MEASURED, note=note),)
    report = TuneReport(rows, (), allow_numerics=False, time_box_s=40.0, elapsed_s=21.0)
    return ProbeResult(probe_id="nobase001", offer_key="local", workload_fingerprint="fp",
                       status=ProbeStatus.TIMEOUT, batch_size=16, device="cpu", error=note,
                       tuning=report)


def test_a_tune_without_a_measured_baseline_claims_no_comparison(tmp_path: Path) -> None:
    # it said "no knob ... beat the baseline beyond the noise; keep the step as it is", a
    # finding drawn from nothing measured
    ProbeStore(default_storage_url()).record(_unmeasured_baseline_sample())
    shown = CliRunner().invoke(advisor, ["probes", "show", "nobase"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert ("tuned: nothing compared: the baseline was not measured inside the time box; give "
            "a longer --time-box\n") in shown.output
    assert "beat the baseline" not in shown.output and "keep the step" not in shown.output
    done = CliRunner().invoke(advisor, ["report", "probe", "nobase", "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    page = html.unescape((tmp_path / "probe.html").read_text())
    assert "nothing compared: the baseline was not measured" in page
    assert "beat the baseline" not in page and "1.00x" not in page


def test_a_tune_whose_knobs_lost_says_to_keep_the_step(tmp_path: Path) -> None:
    sample = tuned_sample("lost0001")
    assert sample.tuning is not None
    rows = tuple(r for r in sample.tuning.rows if r.kind is not RowKind.COMBINATION)
    ProbeStore(default_storage_url()).record(
        replace(sample, tuning=replace(sample.tuning, rows=rows)))
    shown = CliRunner().invoke(advisor, ["probes", "show", "lost"], env={"COLUMNS": "400"})
    assert shown.exit_code == 0, shown.output
    assert ("tuned: no knob that keeps the numerics beat the baseline beyond the noise; keep "
            "the step as it is") in shown.output
