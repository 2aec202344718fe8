"""One environment per launcher for the contract suite: the launcher, an offer it can run, and
the "instance side" (write the result, crash) that moto and the fakes cannot run themselves."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws
from probe_gcp_fakes import FakeInstances, FakeStorage, FakeTpu
from probe_helpers import FakeClock, make_request, ok_result

from probes.launchers import Launcher, LaunchHandle
from probes.launchers.aws import AwsLauncher
from probes.launchers.fake import FakeBehaviour, FakeLauncher, FakeOutcome
from probes.launchers.gcp import GcpLauncher
from probes.launchers.gcp_tpu import GcpTpuLauncher
from probes.launchers.local import LocalLauncher
from probes.launchers.runtimes import AWS_RUNTIMES, ImageLookup
from probes.types import ProbeRequest
from probes.vocabulary import DeviceKind

BUCKET = "advisor-test-probes"
AWS_OFFER = "aws:g5.xlarge:us-east-1"
# moto reserves /aws/service/...: each public SSM parameter of the runtime table gets a test name
AWS_TEST_IMAGES = {image: "/advisor-test" + image.removeprefix("/aws/service")
                   for image in AWS_RUNTIMES.images() if image.startswith("/aws/service/")}
AMI_PARAMETER = AWS_TEST_IMAGES[AWS_RUNTIMES.for_instance("g5.xlarge").image]  # NVIDIA DLAMI
AWS_TEST_RUNTIMES = AWS_RUNTIMES.with_images(AWS_TEST_IMAGES, owner="self")
# the AMI id each SSM parameter holds under moto, by the device of its runtime
SSM_AMI_IDS = {DeviceKind.CUDA: "ami-12c6146b", DeviceKind.NEURON: "ami-0a1b2c3d4e5f60718"}


def seed_aws_images(region: str = "us-east-1") -> dict[DeviceKind, str]:
    """Put every image of AWS_TEST_RUNTIMES into moto (SSM parameters; a registered AMI for a
    name lookup) and return the AMI id each device kind boots."""
    ssm, ec2 = boto3.client("ssm", region_name=region), boto3.client("ec2", region_name=region)
    ids: dict[DeviceKind, str] = {}
    for runtime in AWS_TEST_RUNTIMES.by_family.values():
        if runtime.lookup is ImageLookup.AMI_NAME:
            name = runtime.image.replace("*", "1.0")
            ids[runtime.device] = ec2.register_image(Name=name, RootDeviceName="/dev/sda1")["ImageId"]
        else:
            ids[runtime.device] = SSM_AMI_IDS[runtime.device]
            ssm.put_parameter(Name=runtime.image, Value=ids[runtime.device], Type="String",
                              Overwrite=True)
    return ids


class Env:
    """A launcher under test and how to act as the machine it started."""

    offer_key = "local"
    launcher: Launcher
    clock: FakeClock | None = None

    def request(self, probe_id: str, **kw: Any) -> ProbeRequest:
        return make_request(probe_id, self.offer_key, **kw)

    def finish(self, handle: LaunchHandle, request: ProbeRequest) -> None:
        """The instance writes an ok result."""

    def crash(self, handle: LaunchHandle) -> None:
        """The instance ends without writing a result."""
        raise NotImplementedError


class LocalEnv(Env):
    def __init__(self, tmp: Path) -> None:
        self.launcher = LocalLauncher(tmp / "local-probes", poll_interval_s=0.05,
                                      env={"OMP_NUM_THREADS": "1"})

    def request(self, probe_id: str, **kw: Any) -> ProbeRequest:
        kw.setdefault("time_box_s", 0.5)
        kw.setdefault("input_check", False)
        return make_request(probe_id, self.offer_key, **kw)

    def crash(self, handle: LaunchHandle) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(handle.resource_id), signal.SIGKILL)


class FakeEnv(Env):
    offer_key = "fake:x:y"

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.launcher = FakeLauncher(self._behaviour, clock=self.clock, sleep=self.clock.sleep)

    def _behaviour(self, request: ProbeRequest) -> FakeBehaviour:
        return FakeBehaviour(FakeOutcome.HANG)

    def finish(self, handle: LaunchHandle, request: ProbeRequest) -> None:
        assert isinstance(self.launcher, FakeLauncher)
        self.launcher.complete(request.probe_id, ok_result(request))

    def crash(self, handle: LaunchHandle) -> None:
        self.launcher.terminate(handle)


class AwsEnv(Env):
    offer_key = AWS_OFFER

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.ec2 = boto3.client("ec2", region_name="us-east-1")
        self.s3 = boto3.client("s3", region_name="us-east-1")
        self.ami_ids = seed_aws_images()
        self.s3.create_bucket(Bucket=BUCKET)
        self.launcher = AwsLauncher(bucket=BUCKET, runtimes=AWS_TEST_RUNTIMES, clock=self.clock,
                                    sleep=self.clock.sleep, poll_interval_s=10.0)

    def finish(self, handle: LaunchHandle, request: ProbeRequest) -> None:
        body = self.s3.get_object(Bucket=BUCKET, Key=f"advisor-probes/{request.probe_id}/request.json")
        remote = ProbeRequest.from_json(body["Body"].read())
        self.s3.put_object(Bucket=BUCKET, Key=f"advisor-probes/{request.probe_id}/result.json",
                           Body=ok_result(remote).to_json().encode())

    def crash(self, handle: LaunchHandle) -> None:
        self.ec2.terminate_instances(InstanceIds=[handle.resource_id])

    def running(self) -> list[str]:
        reply = self.ec2.describe_instances(Filters=[
            {"Name": "tag-key", "Values": ["advisor-probe-id"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]}])
        return [i["InstanceId"] for r in reply["Reservations"] for i in r["Instances"]]


class GcpEnv(Env):
    offer_key = "gcp:n1-standard-8+1xT4:us-central1"

    def __init__(self, no_capacity: set[str] | None = None) -> None:
        self.clock = FakeClock()
        self.compute = FakeInstances(no_capacity)
        self.storage = FakeStorage()
        self.launcher = GcpLauncher(project="proj", bucket=BUCKET, instances_client=self.compute,
                                    storage_client_factory=lambda: self.storage,
                                    clock=self.clock, sleep=self.clock.sleep, poll_interval_s=10.0)

    def finish(self, handle: LaunchHandle, request: ProbeRequest) -> None:
        self.storage.bucket(BUCKET).blob(f"advisor-probes/{request.probe_id}/result.json") \
            .upload_from_string(ok_result(request).to_json())

    def crash(self, handle: LaunchHandle) -> None:
        self.compute.stop(handle.location, handle.resource_id)


class GcpTpuEnv(GcpEnv):
    offer_key = "gcp:tpu-v5litepod-8:us-west4"

    def __init__(self) -> None:
        self.clock = FakeClock()
        self.tpu = FakeTpu()
        self.storage = FakeStorage()
        self.launcher = GcpTpuLauncher(project="proj", bucket=BUCKET, tpu_client=self.tpu,
                                       storage_client_factory=lambda: self.storage,
                                       clock=self.clock, sleep=self.clock.sleep,
                                       poll_interval_s=10.0)

    def crash(self, handle: LaunchHandle) -> None:
        self.tpu.delete_node(name=f"projects/proj/locations/{handle.location}/nodes/"
                                  f"{handle.resource_id}")


@contextlib.contextmanager
def aws_mocked() -> Iterator[None]:
    """moto with fake credentials, without loading its thousands of default AMIs (slow)."""
    saved = {k: os.environ.get(k) for k in ("MOTO_EC2_LOAD_DEFAULT_AMIS", "AWS_ACCESS_KEY_ID",
                                            "AWS_SECRET_ACCESS_KEY")}
    os.environ.update({"MOTO_EC2_LOAD_DEFAULT_AMIS": "false", "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing"})
    try:
        with mock_aws():
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def environment(kind: str, tmp: Path) -> Iterator[Env]:
    """The environment of one launcher kind (moto active for aws)."""
    if kind == "aws":
        with aws_mocked():
            yield AwsEnv()
        return
    envs = {"local": lambda: LocalEnv(tmp), "fake": FakeEnv, "gcp": GcpEnv, "gcp-tpu": GcpTpuEnv}
    yield envs[kind]()
