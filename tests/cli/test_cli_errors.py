"""Bad input at the command line: one line naming the field, exit code 2, no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import advisor

GOOD = {"name": "m", "model": {"builtin": "mlp"}, "batch_size": 8, "data": {"total_samples": 100}}


def test_bad_field_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "batch_size": -1}))
    result = CliRunner().invoke(advisor, ["recommend", str(path)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: {path}: batch_size: must be greater than 0, got -1"]


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(advisor, ["recommend", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_any_file_content_gives_a_result_or_one_error_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fuzz.yaml"
    path.write_text(text)
    result = CliRunner().invoke(advisor, ["recommend", str(path), "--json"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code != 0:
        assert result.exit_code == 2
        assert len(result.stderr.strip().splitlines()) == 1


def test_help_imports_no_torch_pandas_or_cloud_sdk() -> None:
    code = ("import sys; from cli.main import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in ('torch', 'pandas', 'sklearn', 'boto3', 'google.cloud', 'optuna')"
            " if m in sys.modules]\nprint(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
