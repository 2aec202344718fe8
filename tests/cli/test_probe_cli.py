"""``advisor probe`` and ``advisor probes list|show|gc`` through the click runner."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.storage import default_storage_url
from cli.main import advisor
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

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
    assert code == 0, err
    (row,) = json.loads(out)["probes"]
    assert row["status"] == "ok" and row["samples_per_second"] > 0
    assert row["offer_key"] == "local" and row["cost_usd"] == 0
    stored = ProbeStore(default_storage_url()).get(row["probe_id"])
    assert stored.status is ProbeStatus.OK


@pytest.mark.slow
def test_probe_of_the_oom_example_reports_oom() -> None:
    code, out, err = _run("probe", str(ROOT / "examples" / "mlp_oom.yaml"), "--on", "local",
                          "--json")
    assert code == 0, err
    (row,) = json.loads(out)["probes"]
    assert row["status"] == "oom" and row["batch_size"] == 1024
    assert row["findings"][0]["kind"] == "does-not-fit"


def test_probe_refuses_when_over_max_usd(tmp_path: Path) -> None:
    code, _, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", "aws:g5.xlarge:us-east-1",
                        "--max-usd", "0.01")
    assert code == 2
    assert "over --max-usd $0.01" in err and "Traceback" not in err
    assert ProbeStore(default_storage_url()).list() == []


@pytest.mark.parametrize(("offer", "message"), [
    ("aws:g5.xlarge", "cloud:instance_type:region"),            # malformed key
    ("aws:x9.huge:us-east-1", "not in the price catalog"),       # unknown offer
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
                             wall_time_s=300.0, cost_usd=0.08))
    code, out, _ = _run("probes", "list", "--json")
    assert code == 0 and [p["probe_id"] for p in json.loads(out)["probes"]] == ["abc123"]
    code, out, _ = _run("probes", "show", "abc123", "--json")
    kinds = {f["kind"] for f in json.loads(out)["findings"]}
    assert code == 0 and {"input-bound", "bf16-unused"} <= kinds     # A10G has bf16
    code, out, _ = _run("probes", "list")
    assert code == 0 and "abc123" in out and "0.0800" in out
    code, _, err = _run("probes", "show", "nope")
    assert code == 2 and "advisor probes list" in err


def test_probes_gc_dry_run() -> None:
    code, out, _ = _run("probes", "gc", "--dry-run", "--json")
    assert code == 0
    assert json.loads(out) == {"dry_run": True, "expired": {"local": []}}
