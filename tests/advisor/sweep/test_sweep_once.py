"""Work done once: the finished check per run, stale trials per gate check, the bundle per launch.

Each test counts the calls of a spy wrapped around the real function, so doing the work
again somewhere fails it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import optuna
import pytest
from sweep_helpers import AMI_PARAMETER, BUCKET, OFFER, write_sweep

from advisor.sweep import workers
from advisor.sweep.run import launch, runner
from advisor.sweep.run.launch import SweepAwsLauncher, launch_requests
from advisor.sweep.spec import load_sweep_spec

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[tuple[Any, ...]]:
    """Replace ``module.name`` by a wrapper that records each call's arguments."""
    calls: list[tuple[Any, ...]] = []
    real: Callable[..., Any] = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_run_sweep_checks_once_whether_the_sweep_is_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 2})
    checks = _spy(monkeypatch, workers, "finished_sweep")
    assert workers.run_sweep(path).status.trials_by_state == {"complete": 2}
    assert len(checks) == 1  # not finished: the worker ran
    assert workers.run_sweep(path).stop_reason == "max_trials reached (2 of 2)"
    assert len(checks) == 2  # finished: answered from the stored study


def test_run_sweep_does_not_check_again_what_its_caller_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 2})
    checks = _spy(monkeypatch, workers, "finished_sweep")
    outcome = workers.run_sweep(path, finished_checked=True)
    assert outcome.status.trials_by_state == {"complete": 2}
    assert checks == []


class _NearTheCap:
    """An admission lock with many workers registered: every check near the cap reads the
    totals a second time under the exclusive lock (PostgreSQL's path, without the server)."""

    active = True

    def __init__(self, _study: optuna.Study) -> None:
        self.entered: list[bool] = []

    def workers(self) -> int:
        return 10

    def enter(self, *, exclusive: bool) -> None:
        self.entered.append(exclusive)

    def leave(self) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.mark.parametrize(("admission", "reads"), [
    (None, 4),         # SQLite: one read of the totals per check
    (_NearTheCap, 7),  # near the cap: a second read under the exclusive lock, but for the
                       # last check, which stops at max_trials on its first read
])
def test_stale_trials_are_failed_once_per_gate_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, admission: type | None,
        reads: int) -> None:
    if admission is not None:
        monkeypatch.setattr(runner, "Admission", admission)
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 3})
    failing = _spy(monkeypatch, runner, "fail_stale_trials")
    reading = _spy(monkeypatch, runner, "read_ledger")
    assert runner.run_worker(load_sweep_spec(path)).trials_run == 3
    assert len(reading) == reads
    assert len(failing) == 4  # one gate check before each trial, and one after the last


def test_the_worker_bundle_is_built_once_per_launcher(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, aws: Any) -> None:
    spec = load_sweep_spec(write_sweep(tmp_path, instance=OFFER))
    builds = _spy(monkeypatch, launch, "make_worker_bundle")
    launcher = SweepAwsLauncher(spec, "postgresql://sweeper@db.example/sweeps", bucket=BUCKET,
                                ami_parameter=AMI_PARAMETER)
    for request in launch_requests(spec, 3, price_usd_per_hour=1.0):
        launcher.launch(request)
    s3 = boto3.client("s3", region_name="us-east-1")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    bodies = {s3.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in keys}
    assert len(builds) == 1
    assert len(keys) == 3 and len(bodies) == 1  # each worker gets its copy of the one bundle
    assert len(aws.describe_instances()["Reservations"]) == 3


def test_advisor_sweep_checks_once_whether_the_sweep_is_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI asks before importing Optuna and tells ``run_sweep`` so: one check a run."""
    from click.testing import CliRunner

    import advisor.sweep as finished  # the face the CLI takes finished_sweep from
    from cli.main import advisor

    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 2})
    in_cli = _spy(monkeypatch, finished, "finished_sweep")
    in_workers = _spy(monkeypatch, workers, "finished_sweep")
    result = CliRunner().invoke(advisor, ["sweep", str(path)])
    assert result.exit_code == 0, result.output
    assert len(in_cli) + len(in_workers) == 1
