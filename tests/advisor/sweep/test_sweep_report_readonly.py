"""``advisor report sweep`` reads the study and writes nothing to its database, even when a
dead worker left a trial running: the report shows it failed and charged, in memory."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from sweep_helpers import dead_worker_trial, write_sweep

from advisor.sweep import sweep_report_data
from advisor.sweep.run.service import open_stored_study
from advisor.sweep.spec import load_sweep_spec
from cli.main import advisor

pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")

PRICE = 3600.0  # $1 per second


def _digest(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_report_sweep_leaves_the_database_byte_identical(tmp_path: Path) -> None:
    spec = load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain",
                                       price_usd_per_hour=PRICE, heartbeat_s=5))
    dead_worker_trial(spec, ran_s=30, silent_s=600)  # grace period: 10 s
    db = tmp_path / "sweep.db"
    before = _digest(db)
    result = CliRunner().invoke(advisor, ["report", "sweep", "t", "--out", str(tmp_path / "r"),
                                          "--storage", f"sqlite:///{db}"])
    assert result.exit_code == 0, result.output
    assert _digest(db) == before
    stored = optuna.load_study(study_name="t", storage=f"sqlite:///{db}").trials
    assert [t.state.name for t in stored] == ["RUNNING"]  # nothing was failed in the database


def test_the_report_shows_a_dead_workers_trial_failed_and_charged(tmp_path: Path) -> None:
    spec = load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain",
                                       price_usd_per_hour=PRICE, heartbeat_s=5))
    now_s = time.time()  # the report is read at this moment, however loaded the machine
    dead_worker_trial(spec, ran_s=30, silent_s=600, now_s=now_s)
    study = open_stored_study("t", storage_url=f"sqlite:///{tmp_path / 'sweep.db'}")
    data = sweep_report_data(study, now_s=now_s)  # what load_sweep_report_data reads, at now_s
    (trial,) = data.trials
    assert trial.state == "fail"
    # as `advisor sweep status` would record it: found dead now, 630 s after its start
    assert trial.cost_usd == pytest.approx(630.0, abs=0.01)
    assert data.spent_usd == pytest.approx(trial.cost_usd)
