"""An ADVISOR_HOME that is a file, or cannot be created, is bad input: one line naming
ADVISOR_HOME and the fix, exit code 2, no traceback, and the file is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import advisor

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.yaml"


@pytest.mark.parametrize("args", [
    ["recommend", str(MLP)],             # the catalog's snapshots folder
    ["probes", "list"],                  # the probe store's SQLite file
    ["pricing", "list"],                 # the catalog alone
    ["pricing", "status"],               # the snapshots' listing
    ["sweep", "status"],                 # the sweeps' storage
])
@pytest.mark.parametrize("under", [
    False,  # ADVISOR_HOME is the file itself
    True,   # ADVISOR_HOME is a folder below a file: it cannot be created
])
def test_a_home_that_cannot_be_a_folder_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], under: bool) -> None:
    file = tmp_path / "a-file"
    file.write_text("keep me\n")
    home = file / "advisor" if under else file
    monkeypatch.setenv("ADVISOR_HOME", str(home))
    result = CliRunner().invoke(advisor, args)
    assert result.exit_code == 2, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, lines
    assert lines[0].startswith(f"error: ADVISOR_HOME {home} ")
    assert ("is a file, not a folder" in lines[0]) != under
    assert "set ADVISOR_HOME to a folder" in lines[0]
    assert file.read_text() == "keep me\n"  # nothing the user had is touched
