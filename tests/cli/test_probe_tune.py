"""``advisor probe --tune`` through the CLI and the local launcher: the table, the JSON, the
stored result, the flag rules, and the custom example's num_workers over its real loader."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cli.main import advisor

CUSTOM = Path(__file__).resolve().parents[2] / "examples" / "custom"
TINY = {"name": "tiny-mlp", "model": {"builtin": "mlp",
                                      "options": {"input_dim": 32, "hidden": 32, "layers": 2}},
        "batch_size": 16, "data": {"samples": 1000}}


@pytest.fixture(autouse=True)
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a busy shared CPU, threads waiting for each other make tiny steps erratic.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _spec(tmp_path: Path, spec: dict[str, object]) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_tune_prints_the_tuning_table_after_the_probe_table(tmp_path: Path) -> None:
    done = CliRunner().invoke(advisor, ["probe", _spec(tmp_path, TINY), "--on", "local",
                                        "--tune", "--time-box", "6"], env={"COLUMNS": "200"})
    assert done.exit_code in (0, 3), done.output  # 3: ok, not settled in a short box
    assert "tuning of probe" in done.output and "batch 32" in done.output
    assert "needs a convergence check" in done.output
    assert "not applicable: memory_format" in done.output  # an MLP has no convolutions


@dataclass(frozen=True)
class _Done:
    exit_code: int
    output: str
    stdout: str
    stderr: str
    home: Path


@pytest.fixture(scope="module")
def json_tune(tmp_path_factory: pytest.TempPathFactory) -> _Done:
    """``advisor probe TINY --on local --tune --time-box 6 --json`` run once for the tests
    that read its stdout, its stderr and the probe it stored (in a data directory of its own)."""
    folder = tmp_path_factory.mktemp("json-tune")
    home = folder / "advisor-home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ADVISOR_HOME", str(home))
        patch.delenv("ADVISOR_STORAGE_URL", raising=False)
        patch.setenv("OMP_NUM_THREADS", "1")  # as one_thread, for this module-wide run
        done = CliRunner().invoke(advisor, ["probe", _spec(folder, TINY), "--on", "local",
                                            "--tune", "--time-box", "6", "--json"])
    return _Done(done.exit_code, done.output, done.stdout, done.stderr, home)


def test_tune_json_carries_the_rows_and_the_stored_probe_shows_them(
        json_tune: _Done, monkeypatch: pytest.MonkeyPatch) -> None:
    done = json_tune
    assert done.exit_code in (0, 3), done.output  # 3: ok, not settled in a short box
    (row,) = json.loads(done.stdout)["probes"]
    rows = row["tuning"]["rows"]
    assert rows[0]["kind"] == "baseline" and rows[0]["status"] == "measured"
    assert {r["knob"] for r in rows[1:] if r["kind"] == "trial"} >= {"batch", "compiler"}
    monkeypatch.setenv("ADVISOR_HOME", str(done.home))  # where the tune stored its probe
    shown = CliRunner().invoke(advisor, ["probes", "show", row["probe_id"]],
                               env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "tuning of probe" in shown.output


def test_allow_numerics_without_tune_is_a_usage_error(tmp_path: Path) -> None:
    done = CliRunner().invoke(advisor, ["probe", _spec(tmp_path, TINY), "--on", "local",
                                        "--allow-numerics"])
    assert done.exit_code == 2 and "--allow-numerics applies to --tune" in done.output


@pytest.mark.slow
def test_the_custom_example_tunes_num_workers_over_its_real_loader(tmp_path: Path) -> None:
    # The example's code with small options; its data goes to tmp_path.
    shutil.copy(CUSTOM / "my_model.py", tmp_path / "my_model.py")
    spec = {"name": "custom-small", "batch_size": 8, "data": {"samples": 1000},
            "model": {"entrypoint": "my_model:build", "options": {
                "vocab": 500, "embed_dim": 16, "channels": 16, "seq_len": 24,
                "dataset_samples": 256, "loader_workers": 2, "data_dir": str(tmp_path / "d")}}}
    done = CliRunner().invoke(advisor, ["probe", _spec(tmp_path, spec), "--on", "local",
                                        "--tune", "--time-box", "30", "--json"])
    assert done.exit_code in (0, 3), done.output  # 3: ok, not settled in a short box
    rows = json.loads(done.stdout)["probes"][0]["tuning"]["rows"]
    workers = [r for r in rows if r["knob"] == "num_workers"]
    assert workers and all(r["config"]["cached_input"] is False for r in workers)
    assert any(r["status"] == "measured" for r in workers)
    assert any(r["knob"] == "input" and r["status"] == "measured" for r in rows)


def test_a_piped_tune_prints_one_progress_line_per_row_on_stderr(json_tune: _Done) -> None:
    # CliRunner's stderr is not a terminal: each configuration the harness child measures is
    # one plain line as it ends, and stdout stays one JSON document.
    done = json_tune
    assert done.exit_code in (0, 3), done.output  # 3: ok, not settled in a short box
    rows = json.loads(done.stdout)["probes"][0]["tuning"]["rows"]
    lines = [line for line in done.stderr.splitlines() if line.startswith("tune: ")]
    assert len(lines) == len(rows), done.stderr
    assert lines[0].startswith("tune: baseline measured 1.00x (1 of up to ")
    assert all(f"({i} of up to " in line for i, line in enumerate(lines, 1))
