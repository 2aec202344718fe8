"""Issue 33: failures that were tracebacks (or click's "Aborted!") are one line on stderr."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cli.probe
import pricing.snapshots
from cli.main import advisor

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.yaml"


def _one_line(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    # besides the line a piped first run prints while it profiles the model (not a failure)
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith("profiling mlp-mnist with torch (first run")]
    assert len(lines) == 1, lines[:8]
    return lines[0]


def test_a_profile_time_limit_too_short_to_arm_is_one_line(tmp_path: Path) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(MLP.read_text() + "profile: {timeout_s: 1e-9}\n")
    line = _one_line(CliRunner().invoke(advisor, ["recommend", str(spec)]), 2)
    assert "profiling the model took more than 1e-09 s" in line, line


def test_a_csv_name_too_long_for_the_file_system_is_one_line(tmp_path: Path) -> None:
    name = str(tmp_path / ("a" * 300 + ".csv"))
    line = _one_line(CliRunner().invoke(advisor, ["recommend", str(MLP), "--csv", name]), 2)
    assert line.startswith("error: --csv: ") and "File name too long" in line, line


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("args", [
    # probe --tune ended with click's "Aborted!" and exit 1
    ["probe", str(MLP), "--on", "local", "--tune"],
    # any command
    ["pricing", "list"],
])
def test_ctrl_c_is_one_line_and_exit_130(monkeypatch: pytest.MonkeyPatch,
                                         args: list[str]) -> None:
    monkeypatch.setattr(cli.probe, "_run_with_progress", _interrupt)
    monkeypatch.setattr(pricing.snapshots, "current_catalog", _interrupt)
    line = _one_line(CliRunner().invoke(advisor, args), 130)
    assert line.startswith("interrupted (Ctrl-C)"), line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", [["pricing", "list"], ["pricing", "list", "--json"]])
def test_stdout_on_a_full_device_is_one_line(args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "cli", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr == ("error: cannot write the output: No space left on device\n"), \
        done.stderr
