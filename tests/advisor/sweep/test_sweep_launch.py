"""``advisor sweep --launch``: workers on EC2 instances (moto), always terminated at the end."""

from __future__ import annotations

import base64
import io
import os
import tarfile
from pathlib import Path
from typing import Any

import boto3
import optuna
import pytest
from sweep_helpers import AMI_PARAMETER, BUCKET, OFFER, write_sweep

from advisor.errors import AdvisorError
from advisor.sweep.accounting.instances import resolve_instance, transition_time_s
from advisor.sweep.accounting.ledger import read_ledger
from advisor.sweep.accounting.records import COST_ATTR, WALL_ATTR, WORKER_ATTR, instances_of
from advisor.sweep.run.launch import (
    SweepAwsLauncher,
    launch_requests,
    run_launched,
    worker_boot_script,
)
from advisor.sweep.run.runner import open_study, run_worker
from advisor.sweep.spec import load_sweep_spec
from advisor.sweep.spec.outcomes import StopKind
from advisor.sweep.workers import run_sweep

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _instances(ec2: Any, states: list[str]) -> list[dict[str, Any]]:
    reply = ec2.describe_instances(Filters=[
        {"Name": "tag-key", "Values": ["advisor-probe-id"]},
        {"Name": "instance-state-name", "Values": states}])
    return [i for r in reply["Reservations"] for i in r["Instances"]]


def _launcher(path: Path, url: str) -> SweepAwsLauncher:
    return SweepAwsLauncher(load_sweep_spec(path), url, bucket=BUCKET,
                            ami_parameter=AMI_PARAMETER, poll_interval_s=0.05)


@pytest.mark.postgres
def test_launched_workers_run_the_study_and_are_terminated(
        tmp_path: Path, postgres_url: str, aws: Any) -> None:
    path = write_sweep(tmp_path, study="launch-ok", storage=postgres_url, instance=OFFER,
                       entrypoint="objectives:marked", budget={"max_trials": 4})
    seen: dict[str, Any] = {}

    def act_as_the_instances(_status: object) -> None:
        if seen:
            return
        running = _instances(aws, ["pending", "running"])
        seen["running"] = len(running)
        seen["user_data"] = base64.b64decode(aws.describe_instance_attribute(
            InstanceId=running[0]["InstanceId"], Attribute="userData")["UserData"]["Value"]
        ).decode()
        s3 = boto3.client("s3", region_name="us-east-1")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
        body = s3.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read()
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            seen["members"] = set(tar.getnames())
            member = tar.extractfile("storage.txt")
            assert member is not None
            seen["storage"] = member.read().decode()
        run_worker(load_sweep_spec(path))  # what the instances' workers do

    outcome = run_sweep(path, workers=2, launch=True, launcher=_launcher(path, postgres_url),
                        on_progress=act_as_the_instances, poll_s=0.01)
    assert seen["running"] == 2
    assert "-m advisor.sweep.workers sweep.yaml" in seen["user_data"]
    assert "shutdown -h +" in seen["user_data"]
    assert postgres_url not in seen["user_data"]  # credentials travel in the bundle only
    assert seen["storage"] == postgres_url
    assert {"advisor/sweep/workers.py", "pricing", "probes", "sweep/sweep.yaml",
            "sweep/objectives.py"} <= seen["members"]
    assert "max_trials" in outcome.stop_reason
    assert outcome.status.trials_by_state == {"complete": 4}
    assert _instances(aws, ["pending", "running"]) == []
    assert len(_instances(aws, ["shutting-down", "terminated"])) == 2
    assert "Contents" not in boto3.client("s3", region_name="us-east-1").list_objects_v2(
        Bucket=BUCKET)  # bundles deleted with the instances


@pytest.mark.postgres
def test_interrupt_terminates_every_launched_instance(
        tmp_path: Path, postgres_url: str, aws: Any) -> None:
    path = write_sweep(tmp_path, study="launch-interrupt", storage=postgres_url, instance=OFFER)

    def interrupt(_status: object) -> None:
        assert len(_instances(aws, ["pending", "running"])) == 3
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(path, workers=3, launch=True, launcher=_launcher(path, postgres_url),
                  on_progress=interrupt, poll_s=0.01)
    assert _instances(aws, ["pending", "running"]) == []


@pytest.mark.postgres
def test_failed_launch_terminates_the_ones_already_started(
        tmp_path: Path, postgres_url: str, aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_sweep(tmp_path, study="launch-fail", storage=postgres_url, instance=OFFER)
    launcher = _launcher(path, postgres_url)
    real = launcher.launch
    calls: list[int] = []

    def second_fails(request: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            from probes.launchers import LaunchFailed

            raise LaunchFailed("no capacity in any zone")
        return real(request)

    monkeypatch.setattr(launcher, "launch", second_fails)
    with pytest.raises(AdvisorError, match="could not start worker 2 of 3.*no capacity"):
        run_sweep(path, workers=3, launch=True, launcher=launcher, poll_s=0.01)
    assert _instances(aws, ["pending", "running"]) == []


@pytest.mark.parametrize(("fields", "words"), [
    ({"instance": "local"}, "instance: local"),
    ({"instance": "gcp:a2-highgpu-1g:europe-west4:on-demand"}, "AWS offers only"),
    ({"instance": OFFER, "storage": None}, "PostgreSQL"),
])
def test_launch_refuses_what_cannot_work(tmp_path: Path, fields: dict[str, Any],
                                         words: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADVISOR_AWS_BUCKET", BUCKET)
    storage = fields.pop("storage", "postgresql://advisor@db.example/sweeps")
    path = write_sweep(tmp_path, **fields)
    with pytest.raises(AdvisorError, match=words):
        run_sweep(path, workers=1, launch=True,
                  storage_url=storage or f"sqlite:///{tmp_path / 'x.db'}")


def test_launch_without_a_bucket_says_how_to_set_one(tmp_path: Path, postgres_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADVISOR_AWS_BUCKET", raising=False)
    path = write_sweep(tmp_path, instance=OFFER)
    with pytest.raises(AdvisorError, match="ADVISOR_AWS_BUCKET"):
        run_sweep(path, workers=1, launch=True, storage_url="postgresql://advisor@db.example/s")


def test_boot_script_runs_one_worker_then_powers_off() -> None:
    script = worker_boot_script(fetch=["curl -o bundle.tar.gz URL"], python="/opt/py",
                                sweep_yaml_name="s.yaml", shutdown_after_s=3601)
    lines = script.splitlines()
    assert lines[1].startswith("shutdown -h +61")
    assert lines[-1] == "shutdown -h now"
    assert any("-m advisor.sweep.workers s.yaml --storage" in ln for ln in lines)
    assert os.path.basename("/opt/advisor-sweep") in script


def test_unreachable_storage_and_local_artifacts_are_warned(
        caplog: pytest.LogCaptureFixture) -> None:
    from advisor.sweep.run.launch import check_reachable

    with caplog.at_level("WARNING", logger="advisor.sweep"):
        check_reachable("postgresql://advisor@127.0.0.1:5432/db", "./artifacts")
        check_reachable("postgresql://advisor@db.internal/db", "s3://bucket/sweeps")
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert any("loopback" in m for m in messages)
    assert any("lost at termination" in m for m in messages)


def test_launched_instances_are_recorded_and_charged_until_terminated(
        tmp_path: Path, aws: Any) -> None:
    """Each instance is recorded with EC2's LaunchTime; terminated (here after Ctrl-C) at the
    injected clock's 600 s later; its worker's trials are set against it: each worker is
    charged its 600 billed seconds, not the few its trials ran."""
    path = write_sweep(tmp_path, study="billed", instance=OFFER, entrypoint="objectives:plain",
                       budget={"max_trials": 2})
    spec = load_sweep_spec(path)
    price = resolve_instance(spec).price_usd_per_hour  # the catalog's, as run_sweep uses
    study = open_study(spec, price_usd_per_hour=price)
    requests = launch_requests(spec, 2, price)
    clock = {"now": 0.0}

    def as_the_instances_then_ctrl_c() -> None:
        launched = [i["LaunchTime"].timestamp() for i in _instances(aws, ["running"])]
        clock["now"] = max(launched) + 600.0
        run_worker(spec, worker_id=requests[0].probe_id)  # what the first instance does
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_launched(_launcher(path, spec.storage or ""), requests, study,
                     stopped=lambda: False, on_poll=as_the_instances_then_ctrl_c,
                     clock=lambda: clock["now"])
    running = {i["InstanceId"]: i["LaunchTime"].timestamp()
               for i in _instances(aws, ["shutting-down", "terminated"])}
    records = instances_of(study.user_attrs)
    assert {r.instance_id: r.launched_at_s for r in records} == running
    assert {r.ended_at_s for r in records} == {clock["now"]}
    assert all(t.user_attrs[WORKER_ATTR] == requests[0].probe_id for t in study.trials)
    trials_s = sum(t.user_attrs[WALL_ATTR] for t in study.trials)
    trials_usd = sum(t.user_attrs[COST_ATTR] for t in study.trials)
    assert trials_s < 5.0
    assert [r.billed_s(clock["now"]) >= 600.0 for r in records] == [True, True]
    billed_usd = sum(r.billed_usd(clock["now"]) for r in records)
    ledger = read_ledger(study, price_usd_per_hour=price, now_s=clock["now"] + 60)
    assert ledger.spent_usd == pytest.approx(billed_usd)
    assert ledger.instance_overhead_usd == pytest.approx(billed_usd - trials_usd)


def test_an_instance_that_powered_itself_off_ends_at_ec2s_transition_time(
        tmp_path: Path, aws: Any) -> None:
    path = write_sweep(tmp_path, study="self-off", instance=OFFER)
    spec = load_sweep_spec(path)
    study = open_study(spec, price_usd_per_hour=1.0)
    launcher = _launcher(path, spec.storage or "")

    def power_off() -> None:  # the worker's 'shutdown -h now' (the instance terminates)
        aws.terminate_instances(InstanceIds=[i["InstanceId"]
                                             for i in _instances(aws, ["running"])])

    reason = run_launched(launcher, launch_requests(spec, 1, 1.0), study,
                          stopped=lambda: False, on_poll=power_off, sleep=lambda _s: None,
                          clock=lambda: 4e9)  # "now" far later: never used for the end
    assert reason.kind is StopKind.WORKERS_FINISHED
    (record,) = instances_of(study.user_attrs)
    (gone,) = _instances(aws, ["terminated"])
    # the sweep's clean-up terminates it again on the way out, and moto (unlike EC2) stamps
    # the reason anew, which may fall in the next second
    assert record.ended_at_s is not None and record.ended_at_s < 4e9
    assert record.ended_at_s == pytest.approx(transition_time_s(gone["StateTransitionReason"]),
                                              abs=1.0)
    assert "--worker-id sweep-" in base64.b64decode(aws.describe_instance_attribute(
        InstanceId=gone["InstanceId"], Attribute="userData")["UserData"]["Value"]).decode()


@pytest.mark.usefixtures("no_aws_credentials")
def test_launch_without_aws_credentials_stops_before_the_study(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # it went on to create the study and launch, each worker's launch failing on
    # NoCredentialsError; the URL's host is never reached here (the tests refuse the network)
    monkeypatch.setenv("ADVISOR_AWS_BUCKET", BUCKET)
    path = write_sweep(tmp_path, study="no-creds", storage="postgresql://u@db.example/sweeps",
                       instance=OFFER, artifacts="s3://bucket/sweeps", budget={"max_trials": 4})
    with pytest.raises(AdvisorError) as info:
        run_sweep(path, workers=2, launch=True)
    assert str(info.value).startswith(
        "--launch: sweep workers on aws need AWS credentials and none were found: set "
        "AWS_ACCESS_KEY_ID")
