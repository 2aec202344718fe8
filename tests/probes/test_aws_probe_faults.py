"""Faults on AWS (moto) that must leave nothing behind: after each, no running tagged instance,
the probe in the store with its status, and earlier results untouched."""

from __future__ import annotations

import base64
import os
import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from probe_envs import AMI_PARAMETER, AWS_OFFER, AWS_TEST_RUNTIMES, BUCKET, AwsEnv, aws_mocked
from probe_helpers import FakeClock, make_request, ok_result

from probes.launchers.aws import AwsLauncher
from probes.orchestrate import run_probes
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

EARLIER = ok_result(make_request("earlier", AWS_OFFER), 42.0)


class Cloud:
    """moto plus a launcher whose EC2 client can refuse zones and records run_instances."""

    def __init__(self, tmp: Path, refuse: dict[str, str] | None = None) -> None:
        self.env = AwsEnv()
        self.clock: FakeClock = self.env.clock  # type: ignore[assignment]
        self.refuse = refuse or {}
        self.calls: list[dict[str, Any]] = []
        self.launcher = AwsLauncher(bucket=BUCKET, runtimes=AWS_TEST_RUNTIMES,
                                    client_factory=self._client, clock=self.clock,
                                    sleep=self.clock.sleep, poll_interval_s=10.0)
        self.store = ProbeStore(f"sqlite:///{tmp / 'probes.db'}")
        self.store.record(EARLIER)

    def _client(self, service: str, region: str) -> Any:
        client = boto3.client(service, region_name=region)  # type: ignore[call-overload]
        if service == "ec2":
            client.meta.events.register("provide-client-params.ec2.RunInstances", self._hook)
        return client

    def _hook(self, params: dict[str, Any], **_: Any) -> None:
        self.calls.append(params)
        zone = params.get("Placement", {}).get("AvailabilityZone", "")
        if zone in self.refuse:
            raise ClientError({"Error": {"Code": self.refuse[zone], "Message": "no"}},
                              "RunInstances")

    def run(self, probe_id: str = "p1", **kw: Any) -> ProbeResult:
        request = make_request(probe_id, AWS_OFFER, price_usd_per_hour=1.0, **kw)
        (result,) = run_probes([request], launcher_for=lambda _r: self.launcher, store=self.store)
        return result

    def assert_clean(self, probe_id: str, status: ProbeStatus) -> None:
        assert self.env.running() == []
        assert self.store.get(probe_id).status is status
        assert self.store.get("earlier") == EARLIER


@pytest.fixture
def cloud(tmp_path: Path) -> Iterator[Cloud]:
    with aws_mocked():
        yield Cloud(tmp_path)


def _zones() -> list[str]:
    ec2 = boto3.client("ec2", region_name="us-east-1")
    return sorted(z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"])


def _write_when_running(cloud: Cloud, result_for: Any) -> None:
    """The instance side: on the first poll sleep, write what ``result_for(request)`` gives."""
    def hook() -> None:
        for obj in cloud.env.s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
            if obj["Key"].endswith("request.json"):
                body = cloud.env.s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read()
                from probes.types import ProbeRequest
                payload = result_for(ProbeRequest.from_json(body))
                if payload is not None:
                    cloud.env.s3.put_object(Bucket=BUCKET, Key=obj["Key"].replace(
                        "request.json", "result.json"), Body=payload)
    cloud.clock.on_sleep.append(hook)


def test_ok_probe_is_recorded_with_its_dollars_and_cleaned_up(cloud: Cloud) -> None:
    _write_when_running(cloud, lambda r: ok_result(r).to_json().encode())
    result = cloud.run()
    assert result.status is ProbeStatus.OK
    # $1/h, billed as EC2 bills: per second, at least 60 s (the fake clock's probe is shorter)
    assert result.cost_usd == pytest.approx(max(result.wall_time_s, 60.0) / 3600.0)
    assert result.wall_time_s > 0
    cloud.assert_clean("p1", ProbeStatus.OK)
    assert cloud.env.s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_run_instances_is_tagged_self_terminating_and_armed(cloud: Cloud) -> None:
    _write_when_running(cloud, lambda r: ok_result(r).to_json().encode())
    request = make_request("p2", AWS_OFFER + ":spot")
    run_probes([request], launcher_for=lambda _r: cloud.launcher, store=cloud.store)
    (call,) = cloud.calls
    assert call["InstanceInitiatedShutdownBehavior"] == "terminate"
    assert call["InstanceMarketOptions"]["MarketType"] == "spot"
    kinds = {spec["ResourceType"] for spec in call["TagSpecifications"]}
    assert kinds == {"instance", "volume"}
    tags = {t["Key"]: t["Value"] for t in call["TagSpecifications"][0]["Tags"]}
    assert tags["advisor-probe-id"] == "p2" and int(tags["advisor-expires-at"]) > 0
    script = base64.b64decode(call["UserData"]).decode()  # botocore encodes it before this hook
    assert "shutdown -h +" in script
    assert '"$PY" -m probes.harness request.json result.json' in script


def test_launch_failure_is_recorded(cloud: Cloud) -> None:
    boto3.client("ssm", region_name="us-east-1").delete_parameter(Name=AMI_PARAMETER)
    result = cloud.run()
    assert result.status is ProbeStatus.LAUNCH_FAILED
    assert "ParameterNotFound" in result.error
    cloud.assert_clean("p1", ProbeStatus.LAUNCH_FAILED)


def test_capacity_error_in_every_zone_is_launch_failed(cloud: Cloud) -> None:
    zones = _zones()
    cloud.refuse = {z: "InsufficientInstanceCapacity" for z in zones}
    result = cloud.run()
    assert result.status is ProbeStatus.LAUNCH_FAILED
    assert "no capacity in any zone" in result.error
    assert len(cloud.calls) == len(zones)          # tried every zone once
    cloud.assert_clean("p1", ProbeStatus.LAUNCH_FAILED)


def test_capacity_error_moves_on_to_the_next_zone(cloud: Cloud) -> None:
    zones = _zones()
    cloud.refuse = {zones[0]: "SpotMaxPriceTooLow", zones[1]: "Unsupported"}
    _write_when_running(cloud, lambda r: ok_result(r).to_json().encode())
    assert cloud.run().status is ProbeStatus.OK
    assert [c["Placement"]["AvailabilityZone"] for c in cloud.calls] == zones[:3]
    cloud.assert_clean("p1", ProbeStatus.OK)


def test_harness_crash_with_an_error_result(cloud: Cloud) -> None:
    _write_when_running(cloud, lambda r: ProbeResult.failure(
        r, ProbeStatus.ERROR, "ValueError: boom").to_json().encode())
    result = cloud.run()
    assert result.status is ProbeStatus.ERROR and "boom" in result.error
    cloud.assert_clean("p1", ProbeStatus.ERROR)


def test_instance_that_powers_off_without_a_result(cloud: Cloud) -> None:
    def die() -> None:
        for instance_id in cloud.env.running():
            cloud.env.ec2.terminate_instances(InstanceIds=[instance_id])
    cloud.clock.on_sleep.append(die)
    result = cloud.run()
    assert result.status is ProbeStatus.ERROR and "without a result" in result.error
    cloud.assert_clean("p1", ProbeStatus.ERROR)


def test_result_never_arriving_is_a_timeout(cloud: Cloud) -> None:
    result = cloud.run()
    assert result.status is ProbeStatus.TIMEOUT
    assert result.wall_time_s >= cloud.launcher.boot_overhead_s + 5.0
    cloud.assert_clean("p1", ProbeStatus.TIMEOUT)


def test_unreadable_result_is_an_error(cloud: Cloud) -> None:
    _write_when_running(cloud, lambda r: b"{garbage")
    result = cloud.run()
    assert result.status is ProbeStatus.ERROR and "not JSON" in result.error
    cloud.assert_clean("p1", ProbeStatus.ERROR)


@pytest.mark.parametrize("interrupt", ["ctrl-c", "sigterm"])
def test_interrupt_during_a_probe_terminates_and_records(cloud: Cloud, interrupt: str) -> None:
    def stop() -> None:
        if interrupt == "ctrl-c":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGTERM)
    cloud.clock.on_sleep.append(stop)
    with pytest.raises(KeyboardInterrupt):
        cloud.run()
    cloud.assert_clean("p1", ProbeStatus.ERROR)
    assert "interrupted by " + ("Ctrl-C" if interrupt == "ctrl-c" else "SIGTERM") in \
        cloud.store.get("p1").error
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(
        signal.getsignal(signal.SIGTERM))


def test_gc_terminates_expired_tagged_instances(cloud: Cloud) -> None:
    handle = cloud.launcher.launch(make_request("stray", AWS_OFFER))
    assert cloud.env.running() == [handle.resource_id]
    assert cloud.launcher.gc(handle.expires_at - timedelta(seconds=1)) == []   # not yet
    assert cloud.launcher.gc(handle.expires_at + timedelta(seconds=1)) == [handle.resource_id]
    assert cloud.env.running() == []
