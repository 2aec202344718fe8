"""Storage faults against the real PostgreSQL the tests start: a short outage mid-trial is
ridden out (heartbeat thread and trial alive), a refused login fails at once in one line, an
unreachable server is retried for a stated bound, then one line."""

from __future__ import annotations

import gc
import logging
import shlex
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
from click.testing import CliRunner
from optuna.trial import TrialState
from sqlalchemy.exc import IntegrityError, OperationalError
from sweep_helpers import write_sweep

import advisor.sweep.run.runner as runner_module
from advisor.errors import AdvisorError
from advisor.sweep import run_worker
from advisor.sweep.run.database import CONNECT_TIMEOUT_S, _engine_kwargs, open_rdb_storage
from advisor.sweep.run.outage import (
    OutageTolerantStorage,
    is_connection_error,
    is_refused_login,
    ride_out,
)
from advisor.sweep.spec import load_sweep_spec
from cli.main import advisor

optuna.logging.set_verbosity(optuna.logging.WARNING)

PRICE = 3600.0  # $1 per second
OUTAGE_S = 6.0  # the database is down this long, mid-trial


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def worker_storages(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[optuna.storages.RDBStorage]]:
    """The storages the worker opens; after the test, pass or fail, their pools are closed
    and what the outage dropped is collected, under this test's warning filters (psycopg 3
    warns about a connection deleted open: not in whichever later test collects it)."""
    opened: list[optuna.storages.RDBStorage] = []

    def recorded(*args: Any, **kwargs: Any) -> optuna.storages.RDBStorage:
        opened.append(open_rdb_storage(*args, **kwargs))
        return opened[-1]

    monkeypatch.setattr(runner_module, "open_rdb_storage", recorded)
    yield opened
    for storage in opened:
        storage.engine.dispose()
    gc.collect()


class _Seen(logging.Handler):
    """The sweep's log messages as they come, and a wait for one (not a guess of when)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self._changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._changed:
            self.messages.append(record.getMessage())
            self._changed.notify_all()

    def wait_for(self, text: str, *, timeout_s: float) -> bool:
        """True once a message containing ``text`` was logged, False after ``timeout_s``."""
        with self._changed:
            return self._changed.wait_for(
                lambda: any(text in m for m in self.messages), timeout=timeout_s)


class _Outage:
    """Stops the server when asked (fast: open connections dropped), keeps it down at least
    ``down_s`` and until every message of ``awaited`` was logged, then starts it again with
    its options. ``down`` is set once the server is stopped; ``errors`` keeps what failed."""

    def __init__(self, server: Any, *, down_s: float, seen: _Seen,
                 awaited: tuple[str, ...]) -> None:
        self.server, self.down_s, self.seen, self.awaited = server, down_s, seen, awaited
        self.down = threading.Event()
        self.missed: list[str] = []  # awaited messages that never came
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        opts = shlex.split(Path(self.server.data_dir, "postmaster.opts").read_text())[1:]
        i = opts.index("-D")
        options = shlex.join(opts[:i] + opts[i + 2:])
        try:
            self.server.pg_ctl("-m", "fast", "-w", "stop")
            self.down.set()
            time.sleep(self.down_s)
            self.missed = [m for m in self.awaited if not self.seen.wait_for(m, timeout_s=60)]
        except BaseException as exc:  # noqa: BLE001 - reported by the test, not this thread
            self.errors.append(exc)
        finally:
            self.server.pg_ctl("-o", options, "-w", "start")


class _StepClock:
    """The worker's clock (seconds), moved on by the objective: one step of trial 0 is 1 s."""

    def __init__(self) -> None:
        self.now_s = 1_000_000.0

    def __call__(self) -> float:
        return self.now_s


REPORT_WAITED = "storage: reporting a trial's step failed"
HEARTBEAT_MISSED = "storage: heartbeat not recorded"


@pytest.mark.postgres
# psycopg 3 warns, as it is collected, about a connection the server dropped in the outage
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_short_outage_mid_trial_is_ridden_out(
        tmp_path: Path, postgres_server: Any, caplog: pytest.LogCaptureFixture,
        worker_storages: list[optuna.storages.RDBStorage]) -> None:
    study = f"outage-{uuid.uuid4().hex[:8]}"
    spec = load_sweep_spec(write_sweep(
        tmp_path, study=study, storage=postgres_server.url, price_usd_per_hour=PRICE,
        heartbeat_s=1, budget={"max_trials": 2}))
    seen, clock = _Seen(), _StepClock()
    # down while trial 0 reports its steps, until that and its heartbeat were seen waiting
    outage = _Outage(postgres_server, down_s=OUTAGE_S, seen=seen,
                     awaited=(REPORT_WAITED, HEARTBEAT_MISSED))

    def objective(trial: optuna.Trial) -> float:
        for step in range(12 if trial.number == 0 else 4):
            trial.report(float(step), step)  # step 1 of trial 0: the server is down
            clock.now_s += 1.0 if trial.number == 0 else 0.1
            if trial.number == 0 and step == 0:
                outage.thread.start()
                assert outage.down.wait(timeout=120), "the server did not stop"
        return 1.0

    logging.getLogger("advisor.sweep").addHandler(seen)
    try:
        with caplog.at_level(logging.WARNING, logger="advisor.sweep"):
            result = run_worker(spec, objective=objective, clock=clock)
    finally:
        logging.getLogger("advisor.sweep").removeHandler(seen)
        if outage.thread.ident is not None:  # started by trial 0
            outage.thread.join(timeout=180)
    assert outage.down.is_set() and not outage.thread.is_alive(), outage.errors
    assert outage.errors == []
    assert all(isinstance(s, OutageTolerantStorage) for s in worker_storages)
    assert outage.missed == []  # the step and the heartbeat both waited for the server
    assert result.trials_run == 2 and "max_trials" in result.stop_reason
    trials = optuna.load_study(study_name=study, storage=postgres_server.url).trials
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.COMPLETE]
    assert len(trials[0].intermediate_values) == 12  # every step reported, none lost
    # charged what it ran by the worker's clock (12 s), not what a trial failed by heartbeat
    # costs (from its start to when it was found dead, by the wall clock)
    assert trials[0].user_attrs["advisor:wall_s"] == pytest.approx(12.0)
    assert trials[0].user_attrs["advisor:cost_usd"] == pytest.approx(12.0)
    warnings = [r.getMessage() for r in caplog.records]
    # one per kind of call that waited (the step, the heartbeat, maybe the next budget check
    # on a connection the outage dropped), no flood
    assert [sum(w.startswith(m) for w in warnings) for m in outage.awaited] == [1, 1], warnings
    assert len(warnings) <= 6, warnings
    assert all("\n" not in w for w in warnings)
    optuna.delete_study(study_name=study, storage=postgres_server.url)


@pytest.mark.postgres
def test_a_refused_login_fails_at_once_in_one_line(tmp_path: Path,
                                                   postgres_server: Any) -> None:
    url = (f"postgresql://nobody:Pw-{uuid.uuid4().hex[:6]}@127.0.0.1:{postgres_server.port}"
           "/advisor_test")  # no such role: the server refuses whoever asks
    path = write_sweep(tmp_path, storage=url)
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()  # not retried: no wait, no "failed for 15 s"
    assert "refused the login" in line and 'role "nobody" does not exist' in line
    assert url.split(":")[2].split("@")[0] not in line  # the password


@pytest.mark.parametrize(("message", "refused"), [
    ('FATAL:  password authentication failed for user "advisor"', True),  # wrong password
    ("fe_sendauth: no password supplied", True),  # the server asks for one: give it
    ('FATAL:  no pg_hba.conf entry for host "10.0.0.9", user "u"', True),
    ('FATAL:  database "nope" does not exist', True),
    ("server closed the connection unexpectedly", False),  # a restart: worth waiting for
    ('connection to server at "db" (10.0.0.5), port 5432 failed: Connection refused', False),
])
def test_which_connection_errors_are_worth_waiting_for(message: str, refused: bool) -> None:
    error = OperationalError("connect", {}, Exception(message))
    assert is_refused_login(error) is refused
    assert is_connection_error(error) is not refused


def test_a_refused_login_is_not_retried_and_other_errors_pass_through() -> None:
    sleeps: list[float] = []

    def refused() -> None:
        raise OperationalError("connect", {}, Exception(
            'FATAL:  password authentication failed for user "u"'))

    with pytest.raises(OperationalError):
        ride_out("reporting a step", refused, sleep=sleeps.append)
    with pytest.raises(IntegrityError):
        ride_out("reporting a step", lambda: (_ for _ in ()).throw(
            IntegrityError("insert", {}, Exception("duplicate key"))), sleep=sleeps.append)
    assert sleeps == []


def test_an_outage_longer_than_the_bound_is_one_line() -> None:
    def lost() -> None:
        raise OperationalError("SELECT 1", {}, Exception("server closed the connection\nmore"))

    with pytest.raises(AdvisorError) as info:
        ride_out("reporting a trial's step", lost, outage_s=0.5, sleep=lambda s: time.sleep(0.01))
    assert str(info.value) == ("storage: reporting a trial's step failed: the database was "
                               "unreachable for 0 s (server closed the connection)")


def test_an_unreachable_server_is_retried_for_the_bound_then_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner_module, "OPEN_RETRY_S", 2.0)  # 15 s in use
    url = f"postgresql://advisor:S3cret-pw@127.0.0.1:{_closed_port()}/db"
    path = write_sweep(tmp_path, storage=url)
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: storage: opening the study failed for 2 s: ")
    assert len(lines) <= 2  # at most the one warning that it waits, then the error
    assert "S3cret-pw" not in result.output


def test_each_postgresql_connection_attempt_is_bounded_and_in_utc() -> None:
    args = _engine_kwargs("postgresql://u@db.example.com/x")["connect_args"]
    assert args == {"options": "-c timezone=UTC", "connect_timeout": CONNECT_TIMEOUT_S}
    given = _engine_kwargs("postgresql://u@h/x?connect_timeout=30&options=-c%20work_mem%3D4MB")
    assert given["connect_args"] == {"options": "-c work_mem=4MB -c timezone=UTC"}
    assert "connect_args" not in _engine_kwargs("sqlite:////tmp/x.db")


@pytest.mark.postgres
def test_the_storage_still_opens_after_a_restart(postgres_server: Any) -> None:
    storage = open_rdb_storage(postgres_server.url, origin="--storage", heartbeat_s=1)
    try:
        storage.get_all_studies()
        postgres_server.restart()
        assert isinstance(storage.get_all_studies(), list)
    finally:
        storage.engine.dispose()
