"""Issue 33: a read-only or full ADVISOR_HOME costs only the profile cache: one warning line,
the same answer."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import advisor

MLP = Path(__file__).resolve().parents[2] / "examples" / "mlp.yaml"
pytestmark = pytest.mark.usefixtures("no_shipped_artifacts")  # a first run that profiles


def _recommend_warns_once(advisor_home: Path) -> None:
    result = CliRunner().invoke(advisor, ["recommend", str(MLP), "--json"])
    assert result.exit_code == 0, (result.output, result.exception)
    lines = result.stderr.strip().splitlines()
    progress = [line for line in lines if line.startswith("profiling mlp-mnist with torch")]
    assert len(progress) == 1  # stderr is piped: the first run says what it does
    lines.remove(progress[0])
    assert len(lines) == 1 and lines[0].startswith("warning: cannot cache "), lines
    assert '"ranked"' in result.stdout


def test_recommend_with_an_uncreatable_cache_folder_warns_and_answers(advisor_home: Path) -> None:
    advisor_home.mkdir(parents=True, exist_ok=True)
    (advisor_home / "profiles").write_text("not a folder")  # mkdir fails as on a read-only home
    _recommend_warns_once(advisor_home)


def test_recommend_on_a_full_disk_warns_and_leaves_no_partial_file(
        advisor_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    _recommend_warns_once(advisor_home)
    assert not [p for p in (advisor_home / "profiles").iterdir() if p.name.endswith(".tmp")]
