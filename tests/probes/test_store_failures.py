"""Storage failures are one line, exit 2 (1 where the work ran), and lose nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from probe_helpers import FakeClock, make_request

from cli.main import advisor
from probes.errors import ProbeError
from probes.launchers.fake import FakeBehaviour, FakeLauncher, FakeOutcome
from probes.orchestrate import ResultNotStored, run_probes
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

ROOT = Path(__file__).resolve().parents[2]
SECRET = "secretpw"
GARBAGE = b"this is not a database, and advisor must leave it alone\n"


def _one_line_error(args: list[str], url: str, monkeypatch: pytest.MonkeyPatch,
                    code: int = 2) -> str:
    monkeypatch.setenv("ADVISOR_STORAGE_URL", url)
    result = CliRunner().invoke(advisor, args)
    assert result.exit_code == code, result.output
    lines = [ln for ln in result.output.strip().splitlines()
             if not ln.startswith(("⠋", "⠙", "⠹", "⠸", "⠼", "⠴",
                                   "⠦", "⠧", "⠇", "⠏"))]  # progress spinner
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert SECRET not in result.output
    return lines[0]


@pytest.mark.parametrize(("url", "words"), [
    # a server that refuses: the password masked
    (f"postgresql://u:{SECRET}@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"),
    # a folder that does not exist
    ("sqlite:////nonexistent/dir/x.db", "folder /nonexistent/dir of the SQLite file"),
    # in memory: refused with the reason
    ("sqlite://", "in-memory SQLite database"),
])
@pytest.mark.parametrize("command", ["probes list", "recommend"])
def test_unusable_store_is_one_line(url: str, words: str, command: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    args = command.split() + ([str(ROOT / "examples" / "mlp.yaml")]
                              if command == "recommend" else [])
    line = _one_line_error(args, url, monkeypatch)
    assert words in line
    if command == "recommend":
        assert "cannot read the probe store" in line


@pytest.mark.parametrize("content", [
    GARBAGE,                         # another kind of file
    b"SQLite format",                # a SQLite file cut inside its header
])
def test_damaged_database_is_named_and_never_overwritten(
        tmp_path: Path, content: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "advisor.db"
    path.write_bytes(content)
    line = _one_line_error(["probes", "list"], f"sqlite:///{path}", monkeypatch)
    assert str(path) in line and "not a SQLite database" in line
    assert path.read_bytes() == content


def test_truncated_database_is_named_and_never_overwritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "advisor.db"
    store = ProbeStore(f"sqlite:///{path}")
    for i in range(50):
        store.record(ProbeResult.failure(make_request(f"p{i}"), ProbeStatus.ERROR, "x" * 500))
    store.close()
    cut = path.read_bytes()[:len(path.read_bytes()) // 2]
    path.write_bytes(cut)
    line = _one_line_error(["probes", "list"], f"sqlite:///{path}", monkeypatch)
    assert str(path) in line and "advisor leaves it as it is" in line
    assert path.read_bytes() == cut


def _fake(outcome: FakeOutcome = FakeOutcome.RESULT) -> FakeLauncher:
    clock = FakeClock()
    return FakeLauncher(lambda _r: FakeBehaviour(outcome, ready_after_polls=2), clock=clock,
                        sleep=clock.sleep, grace_s=60.0)


def _read_only_store(tmp_path: Path) -> ProbeStore:
    path = tmp_path / "advisor.db"
    ProbeStore(f"sqlite:///{path}").close()  # tables exist; this process may only read
    return ProbeStore(f"sqlite:///file:{path}?mode=ro&uri=true")


def test_store_refusing_a_write_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="attempt to write a readonly database") as info:
        _read_only_store(tmp_path).record(ProbeResult.failure(make_request(), ProbeStatus.ERROR,
                                                              "x"))
    assert "\n" not in str(info.value)


def test_result_the_store_refuses_is_saved_to_json(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    request = make_request("ro1", "fake:x:y", time_box_s=60.0)
    launcher = _fake()
    with pytest.raises(ResultNotStored) as info:
        run_probes([request], launcher_for=lambda _r: launcher, store=_read_only_store(tmp_path))
    saved = tmp_path / "advisor-probe-ro1.json"
    assert info.value.path == saved
    assert str(saved) in str(info.value) and "\n" not in str(info.value)
    assert ProbeResult.from_json(saved.read_text()).probe_id == "ro1"
    assert json.loads(saved.read_text())["status"] == str(info.value.result.status)


def test_probe_on_a_read_only_store_exits_1_and_says_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "advisor.db"
    ProbeStore(f"sqlite:///{path}").close()
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(
        ["probe", str(ROOT / "examples" / "mlp.yaml"), "--on", "local", "--time-box", "3"],
        f"sqlite:///file:{path}?mode=ro&uri=true", monkeypatch, code=1)
    saved = sorted(tmp_path.glob("advisor-probe-*.json"))
    assert len(saved) == 1 and str(saved[0]) in line
    assert "readonly database" in line


def test_sqlite_storage_errors_are_not_retried() -> None:
    from advisor.errors import AdvisorError
    from advisor.sweep.run.database import with_db_retry

    calls: list[int] = []

    def write() -> None:
        calls.append(1)
        from sqlalchemy.exc import OperationalError

        raise OperationalError("INSERT", {}, sqlite3.OperationalError(
            "attempt to write a readonly database"))

    with pytest.raises(AdvisorError, match="readonly database.*writable"):
        with_db_retry("creating a trial", write, retry_s=60.0)
    assert calls == [1]
