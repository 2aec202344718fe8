"""``advisor probe`` and ``advisor probes list|show|gc`` through the click runner."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console

import cli.probe
import cli.probe_table
from advisor.formatting import fmt_usd_pair
from advisor.storage import data_dir, default_storage_url
from cli.main import advisor
from probes.launchers.fake import FakeLauncher
from probes.result_warnings import probe_warnings
from probes.store import ProbeStore
from probes.types import ProbeRequest, ProbeResult, ProbeStatus

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "probes" / "tiny_workload.py"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(advisor, list(args))
    return result.exit_code, result.stdout, result.stderr


def _tiny_yaml(tmp_path: Path, **options: object) -> Path:
    shutil.copy(TINY, tmp_path / "tiny_workload.py")
    path = tmp_path / "tiny.yaml"
    path.write_text(
        "name: tiny\nmodel:\n  entrypoint: \"tiny_workload:build\"\n"
        f"  options: {json.dumps(options)}\nbatch_size: 16\ndata: {{samples: 1000}}\n")
    return path


@pytest.mark.slow
def test_probe_local_json_is_ok_and_stored(tmp_path: Path) -> None:
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "local", "--time-box", "1",
                          "--json")
    assert code in (0, 3), err  # 3: ok, not settled in a 1 s box on a busy machine
    (row,) = json.loads(out)["probes"]
    assert row["status"] == "ok" and row["samples_per_second"] > 0
    assert row["offer_key"] == "local" and row["cost_usd"] == 0
    stored = ProbeStore(default_storage_url()).get(row["probe_id"])
    assert stored.status is ProbeStatus.OK


@pytest.mark.slow
def test_find_batch_under_a_memory_cap_searches_to_the_limit() -> None:
    code, out, err = _run("probe", str(ROOT / "examples" / "mlp.yaml"), "--on", "local",
                          "--find-batch", "--memory-limit-gib", "0.25", "--time-box", "20",
                          "--no-input-check", "--json")
    # The search ends when its bracket is tight (a few seconds on an idle machine, about 10 s
    # with the two cores shared by four processes); its box, as long as the measurement's,
    # has to outlast a busy machine. The measurement need not settle here (exit 3).
    assert code in (0, 3), err  # 3: ok, not settled in the box
    (row,) = json.loads(out)["probes"]
    fits, failed = row["largest_batch_that_fits"], row["smallest_batch_that_failed"]
    assert row["batch_search_complete"] is True and fits > row["batch_size"]
    assert failed - fits <= max(1, fits // 50)
    assert 0 < row["largest_batch_peak_memory_gib"] <= 0.25
    (finding,) = [f for f in row["findings"] if f["kind"] == "largest-batch"]
    assert f"about {fits}" in finding["advice"] and "\n" not in finding["evidence"]


@pytest.mark.slow
def test_probe_of_the_oom_example_reports_oom_and_exits_1() -> None:
    code, out, err = _run("probe", str(ROOT / "examples" / "mlp_oom.yaml"), "--on", "local",
                          "--json")
    assert code == 1, err
    (row,) = json.loads(out)["probes"]
    assert row["status"] == "oom" and row["batch_size"] == 1024
    assert row["findings"][0]["kind"] == "does-not-fit"


@pytest.mark.slow
def test_probe_whose_step_raises_exits_1_and_is_stored(tmp_path: Path) -> None:
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path, crash=True)), "--on", "local",
                          "--time-box", "1", "--json")
    assert code == 1 and "Traceback" not in err
    (row,) = json.loads(out)["probes"]
    assert row["status"] == "error" and "simulated crash" in row["error"]
    assert ProbeStore(default_storage_url()).get(row["probe_id"]).status is ProbeStatus.ERROR


def _fake_runs(monkeypatch: pytest.MonkeyPatch, statuses: list[ProbeStatus],
               width: float | None = 0.01) -> None:
    """Replace running the probes: the n-th request ends with statuses[n] (and is stored);
    an ok one measured to ``width`` (relative 95% half-width; settled under 2%; None: too
    few steps for an interval, unsettled)."""

    def run(requests: list[ProbeRequest], _launcher_for: Any, **_kw: Any) -> list[ProbeResult]:
        results = []
        for request, status in zip(requests, statuses, strict=True):
            extra: dict[str, Any] = ({"samples_per_second": 100.0, "measured_steps": 5,
                                      "rel_halfwidth": width,
                                      "stable": width is not None and width < 0.02}
                                     if status is ProbeStatus.OK else {})
            results.append(ProbeResult.failure(request, status, f"ended {status}", **extra)
                           if status is not ProbeStatus.OK else
                           ProbeResult(probe_id=request.probe_id, offer_key=request.offer_key,
                                       workload_fingerprint=request.workload_fingerprint,
                                       status=status, batch_size=request.recipe.batch_size,
                                       **extra))
            ProbeStore(default_storage_url()).record(results[-1])
        return results

    monkeypatch.setattr(cli.probe, "_run_with_progress", run)


@pytest.mark.parametrize(("statuses", "code"), [
    ([ProbeStatus.OK], 0),                              # all ok
    ([ProbeStatus.OK, ProbeStatus.ERROR], 1),            # one of two failed
    ([ProbeStatus.OOM], 1),                             # does not fit
    ([ProbeStatus.TIMEOUT, ProbeStatus.LAUNCH_FAILED], 1),
])
@pytest.mark.parametrize("as_json", [False, True])
def test_probe_exits_1_when_any_probe_did_not_end_ok(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, statuses: list[ProbeStatus], code: int,
        as_json: bool) -> None:
    _fake_runs(monkeypatch, statuses)
    offers = ["--on", "local", "--on", "aws:g5.xlarge:us-east-1", "--aws-bucket", "b",
              "--max-usd", "100"][:2 if len(statuses) == 1 else 8]
    args = ["probe", str(_tiny_yaml(tmp_path)), *offers] + (["--json"] if as_json else [])
    got, out, err = _run(*args)
    assert got == code, err
    assert len(ProbeStore(default_storage_url()).list()) == len(statuses)    # all stored
    if as_json:
        assert [p["status"] for p in json.loads(out)["probes"]] == [str(s) for s in statuses]
    else:
        assert all(str(s) in out for s in statuses)                       # all printed
    assert ("did not end ok" in err) == (code == 1) and "Traceback" not in err


@pytest.mark.parametrize(("cost_usd", "title"), [
    (0.0, "(spent $0.00 of an estimated $0.00)"),        # was "$0.0000 of an estimated $0.00"
    (0.0755, "(spent $0.0755 of an estimated $0.00)"),
])
def test_the_table_title_writes_spent_and_estimate_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cost_usd: float, title: str) -> None:
    _fake_runs(monkeypatch, [ProbeStatus.OK])
    original = cli.probe._run_with_progress

    def charged(*args: Any, **kwargs: Any) -> list[ProbeResult]:
        return [replace(r, cost_usd=cost_usd) for r in original(*args, **kwargs)]

    monkeypatch.setattr(cli.probe, "_run_with_progress", charged)
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "local")
    assert code == 0, err
    assert title in " ".join(out.split())


def test_the_progress_line_writes_the_probe_cost_as_the_title_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the line on stderr read "local: ok, 100 samples/s, $0.0000" under "spent $0.00"
    now = [1000.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    fake = FakeLauncher(clock=lambda: now[0], sleep=sleep, grace_s=60.0)
    monkeypatch.setattr(cli.probe, "_launcher_factory", lambda _opts: lambda _name: fake)
    code, _, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "local")
    assert code == 0, err
    assert "local: ok, 100 samples/s, $0.00" in " ".join(err.split())
    assert "$0.0000" not in err


def test_a_probe_warning_wraps_under_its_text(tmp_path: Path) -> None:
    # a warning wider than the console went on at column 0 ("... settles \nit")
    result = ProbeResult(probe_id="wrap00000001", offer_key="local", workload_fingerprint="fp",
                         status=ProbeStatus.OK, batch_size=256, samples_per_second=985.0,
                         measured_steps=14, stable=False, device="cpu")
    ProbeStore(default_storage_url()).record(result)
    done = CliRunner().invoke(advisor, ["probes", "show", "wrap0"], env={"COLUMNS": "80"})
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("warning: wrap00000001: "))
    parts = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith(" " * 9):
            break
        parts.append(line)
    assert len(parts) > 1 and all(len(p) <= 80 for p in parts)
    (text,) = probe_warnings(result)
    assert " ".join(p.strip() for p in parts) == f"warning: wrap00000001: {text}"


def test_probe_help_documents_the_exit_status() -> None:
    code, out, _ = _run("probe", "--help")
    assert code == 0
    assert "Exit status" in out and "1  a probe did not end ok" in out and "2  nothing" in out
    assert "3  every probe ended ok, but one did not settle" in out


def test_the_readme_names_every_exit_status_probe_help_documents() -> None:
    # the README's exit codes stopped at 2 and 130: a script reading it took 3 for a crash
    code, out, _ = _run("probe", "--help")
    assert code == 0
    statuses = re.findall(r"^\s+(\d+)  ", out.split("Exit status")[1], flags=re.M)
    assert statuses == ["0", "1", "3", "2", "130"]
    readme = " ".join((ROOT / "README.md").read_text().split())
    exit_codes = readme.split("Exit codes: ")[1].split(". ")[0]
    for status in statuses:
        assert f" {status} " in f" {exit_codes}", status


@pytest.mark.parametrize("as_json", [False, True])
def test_a_probe_that_did_not_settle_says_so_and_exits_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool) -> None:
    _fake_runs(monkeypatch, [ProbeStatus.OK], width=0.418)  # the issue's ±41.8%
    args = ["probe", str(_tiny_yaml(tmp_path)), "--on", "local"] + (["--json"] if as_json else [])
    code, out, err = _run(*args)
    assert code == 3, err
    assert "did not settle (" in err and "±41.8%" in err and "--time-box" in err
    if as_json:
        assert json.loads(out)["probes"][0]["stable"] is False
    else:
        assert "ok unsettled" in out
        # said once, with its advice: the table printed a noisy-estimate finding and then a
        # warning of the same fact
        said = " ".join(out.split())
        assert "noisy-estimate" not in said and said.count("did not settle") == 1
        assert "stop other work on the machine" in said
    assert len(ProbeStore(default_storage_url()).list()) == 1  # stored all the same


def test_a_probe_too_short_for_an_interval_says_so_and_exits_3(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a 5 s box measured 14 steps, fewer than an interval needs: the line read
    # "(5c56848ec578 samples/s at 95%)", a width with no figure
    _fake_runs(monkeypatch, [ProbeStatus.OK], width=None)
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "local")
    assert code == 3, err
    (probe_id,) = [r.probe_id for r in ProbeStore(default_storage_url()).list()]
    assert f"did not settle ({probe_id}: too few measured steps for an interval);" in err
    assert "samples/s at 95%" not in err
    assert ("did not settle (too few measured steps for an interval) in the time box"
            in " ".join(out.split()))  # the warning wraps at the console's width


def test_probe_refuses_when_over_max_usd(tmp_path: Path) -> None:
    code, _, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "aws:g5.xlarge:us-east-1",
                        "--max-usd", "0.01")
    assert code == 2
    assert "over --max-usd $0.01" in err and "Traceback" not in err
    assert ProbeStore(default_storage_url()).list() == []


def test_max_usd_refusal_shows_both_amounts_with_enough_digits() -> None:
    code, out, err = _run("probe", str(ROOT / "examples" / "resnet50.yaml"), "--on",
                          "aws:trn1.2xlarge:us-east-2:spot", "--max-usd", "0.001")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    match = re.search(r"may cost \$([0-9.]+), over --max-usd \$([0-9.]+);", err)
    assert match is not None, err
    shown, cap = match[1], match[2]
    assert cap == "0.001" and len(shown.split(".")[1]) >= 3     # not "$0.01 over $0.00"
    assert float(shown) > float(cap)


@pytest.mark.parametrize(("estimate", "cap", "shown"), [
    (0.0123, 0.001, ("0.0123", "0.001")),       # under $0.10: four decimals
    (0.00101, 0.001, ("0.00101", "0.001")),     # more digits until the two differ
    (3.456, 2.0, ("3.46", "2.00")),             # cents above $0.10
    (0.5, 0.25, ("0.50", "0.25")),
])
def test_usd_pair_tells_the_amounts_apart(estimate: float, cap: float,
                                          shown: tuple[str, str]) -> None:
    assert fmt_usd_pair(estimate, cap) == shown


@pytest.mark.parametrize(("offer", "message"), [
    ("aws:g5.xlarge", "cloud:instance_type:region"),            # malformed key
    ("aws:x9.huge:us-east-1", "no offer 'aws:x9.huge:us-east-1:on-demand' in the price catalog"),
    # a typo is answered with the keys it was meant to be
    ("aws:g5.xlarg:us-east-1", "did you mean aws:g5.xlarge:us-east-1:on-demand"),
    ("aws:g5.xlarge:us-east-7", "did you mean aws:g5.xlarge:us-east-1:on-demand"),
])
def test_bad_offers_are_one_line_errors(tmp_path: Path, offer: str, message: str) -> None:
    code, _, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", offer)
    assert code == 2 and message in err and err.count("\n") == 1


def test_gcp_probe_without_project_names_the_option(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    code, _, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on",
                        "gcp:g2-standard-4:us-central1", "--max-usd", "100")
    assert code == 2 and "--gcp-project" in err


@pytest.mark.parametrize(("offer", "option"), [
    ("aws:g5.xlarge:us-east-1", "--aws-bucket"),
    ("gcp:g2-standard-4:us-central1", "--gcp-bucket"),
])
def test_cloud_probe_without_a_bucket_stops_before_launching(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offer: str, option: str) -> None:
    for name in ("ADVISOR_AWS_BUCKET", "ADVISOR_GCP_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", offer, "--max-usd", "100")
    assert code == 2 and option in err and err.count("\n") == 1, err
    assert out == "" and ProbeStore(default_storage_url()).list() == []


def test_probes_list_and_show(tmp_path: Path) -> None:
    store = ProbeStore(default_storage_url())
    store.record(ProbeResult(probe_id="abc123", offer_key="aws:g5.xlarge:us-east-1:on-demand",
                             workload_fingerprint="fp", status=ProbeStatus.OK, batch_size=32,
                             samples_per_second=900.0, measured_steps=40, input_bound_ratio=2.0,
                             wall_time_s=300.0, cost_usd=0.08, device="cuda:NVIDIA A10G"))
    code, out, _ = _run("probes", "list", "--json")
    assert code == 0 and [p["probe_id"] for p in json.loads(out)["probes"]] == ["abc123"]
    code, out, _ = _run("probes", "show", "abc123", "--json")
    kinds = {f["kind"] for f in json.loads(out)["findings"]}
    assert code == 0 and {"input-bound", "bf16-unused"} <= kinds     # A10G has bf16
    code, out, _ = _run("probes", "list")
    assert code == 0 and "abc123" in out and " 0.08 " in out
    assert "$: aws bills per second, 60 s minimum" in out  # how the $ column was billed
    code, _, err = _run("probes", "show", "nope")
    assert code == 2 and "advisor probes list" in err


def _record(probe_id: str, offer_key: str = "aws:trn1.32xlarge:ap-southeast-2:spot",
            fingerprint: str = "fp") -> None:
    ProbeStore(default_storage_url()).record(ProbeResult(
        probe_id=probe_id, offer_key=offer_key, workload_fingerprint=fingerprint,
        status=ProbeStatus.OK, batch_size=32, samples_per_second=12345.6, measured_steps=40,
        step_time_p50_s=0.123456, step_time_p90_s=0.134567, rel_halfwidth=0.0123,
        peak_memory_gib=12.34, input_bound_ratio=1.02, largest_batch_that_fits=4096,
        wall_time_s=301.2, cost_usd=0.08, device="neuron:trn1", accelerator="Trainium1"))


def test_a_cpu_result_stored_for_an_accelerator_offer_shows_as_wrong_device() -> None:
    ProbeStore(default_storage_url()).record(ProbeResult(
        probe_id="fallback1", offer_key="aws:trn1.2xlarge:us-east-1:on-demand",
        workload_fingerprint="fp", status=ProbeStatus.OK, batch_size=32,
        samples_per_second=3.0, measured_steps=40, device="cpu"))
    code, out, _ = _run("probes", "show", "fallback1", "--json")
    row = json.loads(out)
    assert code == 0 and row["status"] == "wrong_device" and row["findings"] == []
    assert "Trainium1" in row["error"] and "cpu" in row["error"]
    code, out, _ = _run("probes", "list")
    assert code == 0 and "wrong_device" in out


_IDS = ["8812fb604c01", "a1b2c3d4e5f6"]


def _list_at(monkeypatch: pytest.MonkeyPatch, width: int | None) -> str:
    """'probes list' of two stored probes (_IDS) on a console ``width`` wide (None: a pipe)."""
    for probe_id in _IDS:
        _record(probe_id)
    if width is not None:
        monkeypatch.setattr(cli.probe_table, "console", lambda **kw: Console(
            width=width, highlight=False, soft_wrap=False, **kw))
    code, out, _ = _run("probes", "list")
    assert code == 0
    return out


@pytest.mark.parametrize(("width", "left_out"), [
    (200, ""),                   # the whole table, nothing folded
    (None, "step p90 s"),        # not a terminal (CliRunner, pipes): the 140-column default
    (120, "step p90 s, ±95%, wall s, input ratio"),  # headers break before columns go
    (100, "step p90 s, ±95%, wall s"),  # optional columns go before an offer key folds
    (80, "step p50 s, peak GiB, device"),  # ... over more than two lines
    (60, ""),                    # too narrow for the table: an entry per probe, nothing left out
    (40, ""),                    # very narrow: the entries' offer keys fold, the ids stay whole
])
def test_probe_ids_are_never_cut_off(monkeypatch: pytest.MonkeyPatch, width: int | None,
                                     left_out: str) -> None:
    """Every line fits the console; ids, samples/s and $ stay whole; no cell ends in '…'."""
    out = _list_at(monkeypatch, width)
    assert all(out.count(probe_id) == 1 for probe_id in _IDS)
    assert out.count("12,346") == 2 and out.count(" 0.08 ") == 2  # samples/s and $, whole
    assert "…" not in out and all(len(line) <= (width or 140) for line in out.splitlines())
    words = " ".join(out.split())
    assert ("left out to fit" in words) == bool(left_out) and left_out in words


@pytest.mark.parametrize("width", [
    140,  # the table, offers folded over two lines
    40,   # an entry per probe
])
def test_the_probe_id_leads_its_row_or_entry(monkeypatch: pytest.MonkeyPatch, width: int) -> None:
    out = _list_at(monkeypatch, width)
    table = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    entries = [line.split()[1] for line in out.splitlines() if line.split()[:1] == ["probe"]]
    assert [cell for cell in table + entries if cell] == _IDS


def test_probes_show_accepts_a_unique_prefix() -> None:
    _record("8812fb604c01")
    _record("8812aa000000")
    code, out, err = _run("probes", "show", "8812f", "--json")
    assert code == 0, err
    assert json.loads(out)["probe_id"] == "8812fb604c01"
    code, out, _ = _run("probes", "show", "8812f")
    assert code == 0 and "probe 8812fb604c01" in out


def test_probes_show_of_an_ambiguous_prefix_lists_the_matches() -> None:
    _record("8812fb604c01")
    _record("8812aa000000")
    code, out, err = _run("probes", "show", "8812")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "8812fb604c01" in err and "8812aa000000" in err and "Traceback" not in err


def test_probes_list_says_when_the_filter_matches_nothing() -> None:
    code, out, _ = _run("probes", "list")
    assert code == 0 and "no probes yet" in out
    assert not (data_dir() / "advisor.db").exists()  # listing creates no store
    _record("8812fb604c01")
    code, out, _ = _run("probes", "list", "--fingerprint", "nosuch")
    assert code == 0 and "no probes match --fingerprint nosuch" in out and "yet" not in out
    code, out, _ = _run("probes", "list", "--fingerprint", "nosuch", "--json")
    assert code == 0 and json.loads(out) == {"probes": []}


def test_probes_gc_dry_run() -> None:
    code, out, _ = _run("probes", "gc", "--dry-run", "--json")
    assert code == 0
    assert json.loads(out) == {"dry_run": True, "expired": {"local": []}, "stored": []}


def test_the_dollar_column_writes_costs_as_the_title_does(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # a free local probe read '0.0000' under a title of 'spent $0.00', a cloud one '0.0755'
    _fake_runs(monkeypatch, [ProbeStatus.OK])
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "local")
    assert code == 0, err
    assert "spent $0.00 of" in out and " 0.00 │" in out and "0.0000" not in out
    _record("cloud1")  # $0.08
    code, out, _ = _run("probes", "list")
    assert code == 0 and " 0.08 │" in out and "0.0800" not in out


def test_a_probe_that_saw_no_device_shows_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.probe_table, "console", lambda **kw: Console(  # every column fits
        width=200, highlight=False, soft_wrap=False, **kw))
    ProbeStore(default_storage_url()).record(ProbeResult(
        probe_id="nolaunch1", offer_key="aws:g5.xlarge:us-east-1:on-demand",
        workload_fingerprint="fp", status=ProbeStatus.LAUNCH_FAILED, batch_size=32, device="",
        error="aws aws:g5.xlarge:us-east-1:on-demand: no capacity in any zone"))
    code, out, _ = _run("probes", "list")
    row = next(line for line in out.splitlines() if "nolaunch1" in line)
    assert code == 0 and row.split("│")[3].strip() == "-", row


def test_probes_show_writes_nothing_recorded_as_a_dash() -> None:
    # it printed Python's words: 'accelerator: None', 'utilization_pct: None', 'error: '
    _record("shown1", offer_key="local")
    code, out, _ = _run("probes", "show", "shown1")
    lines = out.splitlines()
    assert code == 0 and "utilization_pct: -" in lines and "error: -" in lines
    assert "device: neuron:trn1" in lines and not any(line.endswith(": None") for line in lines)


def test_local_probes_have_no_billing_note(tmp_path: Path) -> None:
    _record("local1", offer_key="local")
    code, out, _ = _run("probes", "list")
    assert code == 0 and "local1" in out and "minimum" not in out

