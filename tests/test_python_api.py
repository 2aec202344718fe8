"""The Python API the README documents: its example runs as written, and ``import advisor``
stays light."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import advisor

REPO = Path(__file__).resolve().parents[1]


def test_every_public_name_resolves() -> None:
    for name in advisor.__all__:
        assert getattr(advisor, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = advisor.nope  # type: ignore[attr-defined]


def test_import_advisor_does_not_import_torch_or_the_model() -> None:
    code = ("import sys, advisor; "
            "print(sorted(m for m in ('torch', 'advisor.ranking.service', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow
def test_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Python API"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {}
    exec(compile(code.group(1), "README.md", "exec"), namespace)  # noqa: S102
    out = capsys.readouterr().out
    assert out.startswith("pick: ")
    assert namespace["kinds"]  # the rejections' kinds were read
