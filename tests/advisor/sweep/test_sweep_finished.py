"""A rerun of a finished sweep is answered from the stored study, without the objective."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from optuna.distributions import FloatDistribution
from sweep_helpers import write_sweep

from advisor.storage import plain_sqlite_file
from advisor.sweep.accounting.budget import BudgetGate
from advisor.sweep.accounting.finished import finished_sweep
from advisor.sweep.accounting.instances import WorkerInstance
from advisor.sweep.accounting.ledger import read_ledger
from advisor.sweep.accounting.records import COST_ATTR, STOP_REASON_ATTR, WORKER_ATTR, record_instance
from advisor.sweep.run.runner import open_study, run_worker
from advisor.sweep.spec import load_sweep_spec
from cli.main import advisor

optuna.logging.set_verbosity(optuna.logging.WARNING)

REPO = Path(__file__).resolve().parents[3]


def _ran(folder: Path, **fields: object) -> Path:
    path = write_sweep(folder, entrypoint="objectives:plain", **fields)  # type: ignore[arg-type]
    run_worker(load_sweep_spec(path))
    return path


def _url(folder: Path) -> str:
    return f"sqlite:///{folder / 'sweep.db'}"


def test_a_study_at_max_trials_is_finished(tmp_path: Path) -> None:
    spec = load_sweep_spec(_ran(tmp_path, budget={"max_trials": 2}))
    done = finished_sweep(spec, _url(tmp_path))
    assert done is not None
    assert done.summary().startswith(
        "sweep t is already finished (max_trials reached (2 of 2)): 2 trials, 0 pruned, "
        "0 failed, $0.00 spent, best ")


def test_the_summary_writes_dollars_as_sweep_status_does(tmp_path: Path) -> None:
    # it read '$0.0004 spent' where 'advisor sweep status' wrote '$0.00044' for the same trials
    from advisor.formatting import fmt_money
    from advisor.sweep import load_status

    spec = load_sweep_spec(_ran(tmp_path, budget={"max_trials": 2}, price_usd_per_hour=3.6))
    done = finished_sweep(spec, _url(tmp_path))
    spent = load_status("t", storage_url=_url(tmp_path)).spent_usd
    assert done is not None and spent > 0
    assert f", {fmt_money(spent)} spent, " in done.summary()


def test_a_study_at_its_dollar_cap_is_finished_with_the_gate_reason(tmp_path: Path) -> None:
    # $1 per trial-second, and room for the worst case (one trial + a dead trial's 3 s) once,
    # with $0.1 to spare: a dozen trials of a few ms reach the cap ($5 took over 200), and on
    # a loaded machine one slow trial reaches it just the same (the first always fits)
    path = _ran(tmp_path, budget={"max_usd": 3.1}, price_usd_per_hour=3600.0, heartbeat_s=1)
    done = finished_sweep(load_sweep_spec(path), _url(tmp_path))
    assert done is not None and done.stop_reason.startswith("dollar cap: $")
    study = optuna.load_study(study_name="t", storage=_url(tmp_path))
    assert done.stop_reason == study.user_attrs[STOP_REASON_ATTR]


def test_raising_the_cap_lets_the_sweep_go_on(tmp_path: Path) -> None:
    spec = load_sweep_spec(_ran(tmp_path, budget={"max_trials": 2}))
    more = replace(spec, budget=replace(spec.budget, max_trials=3))
    assert finished_sweep(more, _url(tmp_path)) is None


def test_unsure_answers_none(tmp_path: Path) -> None:
    spec = load_sweep_spec(_ran(tmp_path, budget={"max_trials": 2}))
    study = optuna.load_study(study_name="t", storage=_url(tmp_path))
    study.ask()  # a running trial (or one a dead worker left): let the full path handle it
    assert finished_sweep(spec, _url(tmp_path)) is None
    assert finished_sweep(replace(spec, study="other"), _url(tmp_path)) is None  # no study
    assert finished_sweep(spec, f"sqlite:///{tmp_path / 'none.db'}") is None  # no file


def test_only_plain_sqlite_files_are_read() -> None:
    assert plain_sqlite_file("sqlite:////data/x.db") == Path("/data/x.db")
    assert plain_sqlite_file("sqlite:///:memory:") is None
    assert plain_sqlite_file("sqlite:///x.db?mode=ro") is None
    assert plain_sqlite_file("postgresql://u@h/db") is None


def test_every_trial_failed_is_left_to_the_full_path(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:always_fails", budget={"max_trials": 2})
    run_worker(load_sweep_spec(path))
    assert finished_sweep(load_sweep_spec(path), _url(tmp_path)) is None


def test_the_cli_rerun_says_so_without_importing_optuna_or_the_objective(
        tmp_path: Path) -> None:
    path = _ran(tmp_path, budget={"max_trials": 2})
    code = ("import sys\nfrom cli.main import advisor\n"
            f"advisor.main(['sweep', {str(path)!r}], standalone_mode=False)\n"
            "print(sorted({'optuna', 'objectives', 'torch'} & set(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=True)
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("sweep t is already finished (max_trials reached (2 of 2))")
    assert lines[1] == ("to run more trials, raise budget.max_usd or budget.max_trials in "
                        "sweep.yaml; to see them: advisor sweep status t")
    assert lines[2] == "[]"


def test_the_json_rerun_keeps_the_status_schema(tmp_path: Path) -> None:
    path = _ran(tmp_path, budget={"max_trials": 2})
    result = CliRunner().invoke(advisor, ["sweep", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["trials_by_state"] == {"complete": 2}
    assert status["stop_reason"] == "max_trials reached (2 of 2)"


def test_worker_json_is_the_only_stdout(tmp_path: Path) -> None:
    (tmp_path / "chatty.py").write_text(
        "def objective(trial):\n    print('epoch 1 done')\n    return trial.params['x']\n")
    path = write_sweep(tmp_path, entrypoint="chatty:objective", budget={"max_trials": 2})
    result = CliRunner().invoke(advisor, ["sweep", "worker", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"study": "t", "trials_run": 2,
                                         "stop_reason": "max_trials reached (2 of 2)"}
    assert "epoch 1 done" in result.stderr


def test_a_rerun_counts_the_instance_overhead_as_the_gate_does(tmp_path: Path) -> None:
    # $1 per second; three $10 trials on worker w0, whose instance the cloud billed 60 s: $30
    # of overhead. Spent $60 + one more trial's worst case ($10 + $3 found dead late) > $50,
    # while the trials alone ($30 + $13) fit: the gate refuses a trial, so the rerun must too.
    now_s = 1_800_000_000.0
    spec = load_sweep_spec(write_sweep(tmp_path, entrypoint="objectives:plain",
                                       budget={"max_usd": 50.0}, price_usd_per_hour=3600.0))
    study = open_study(spec, price_usd_per_hour=3600.0)
    for x in (1.0, 2.0, 3.0):
        study.add_trial(optuna.trial.create_trial(
            value=x, params={"x": x}, distributions={"x": FloatDistribution(-5.0, 5.0)},
            user_attrs={COST_ATTR: 10.0, WORKER_ATTR: "w0"}))
    record_instance(study, WorkerInstance(
        worker_id="w0", instance_id="i-0", offer_key="aws:g5.xlarge:us-east-1:spot",
        price_usd_per_hour=3600.0, launched_at_s=now_s - 60.0, ended_at_s=now_s))
    ledger = read_ledger(study, price_usd_per_hour=3600.0, now_s=now_s)
    gate_says = BudgetGate.for_sweep(spec, 3600.0).stop_reason(ledger)
    done = finished_sweep(spec, _url(tmp_path), now_s=now_s)
    assert gate_says is not None and done is not None
    assert done.stop == gate_says
    assert done.spent_usd == ledger.spent_usd == pytest.approx(60.0)
