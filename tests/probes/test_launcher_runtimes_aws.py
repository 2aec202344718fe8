"""AWS (moto): each instance family boots its own image with its interpreter and device in the
user-data; an unknown family starts nothing."""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from typing import Any

import pytest
from probe_envs import AMI_PARAMETER, AWS_TEST_RUNTIMES, BUCKET, AwsEnv, aws_mocked
from probe_helpers import make_request

from probes.launchers import LaunchFailed
from probes.launchers.aws import AwsLauncher
from probes.launchers.runtimes import ImageLookup
from probes.vocabulary import DeviceKind


@pytest.fixture
def env() -> Iterator[AwsEnv]:
    with aws_mocked():
        yield AwsEnv()


def _launched(env: AwsEnv, instance_type: str, launcher: AwsLauncher | None = None) -> tuple[str, str]:
    """Launch a probe on ``instance_type``; the AMI id it started with and its user-data."""
    launcher = launcher or env.launcher
    handle = launcher.launch(make_request("r1", f"aws:{instance_type}:us-east-1"))
    (reservation,) = env.ec2.describe_instances(InstanceIds=[handle.resource_id])["Reservations"]
    attribute: Any = env.ec2.describe_instance_attribute(InstanceId=handle.resource_id,
                                                         Attribute="userData")
    launcher.terminate(handle)
    return (reservation["Instances"][0]["ImageId"],
            base64.b64decode(attribute["UserData"]["Value"]).decode())


@pytest.mark.parametrize(("instance_type", "device", "python"), [
    ("trn1.2xlarge", DeviceKind.NEURON, "/opt/aws_neuronx_venv_pytorch_2_9/bin/python"),   # Trainium
    ("trn1n.32xlarge", DeviceKind.NEURON, "/opt/aws_neuronx_venv_pytorch_2_9/bin/python"),
    ("trn2.48xlarge", DeviceKind.NEURON, "/opt/aws_neuronx_venv_pytorch_2_9/bin/python"),  # Trainium2
    ("inf2.xlarge", DeviceKind.NEURON, "/opt/aws_neuronx_venv_pytorch_2_9/bin/python"),    # Inferentia2
    ("dl1.24xlarge", DeviceKind.HPU, "/usr/bin/python3.8"),                # Gaudi: Habana DLAMI by name
    ("g5.xlarge", DeviceKind.CUDA, "/opt/pytorch/bin/python"),             # A10G: PyTorch DLAMI
    ("p5.48xlarge", DeviceKind.CUDA, "/opt/pytorch/bin/python"),           # H100
    ("p3.2xlarge", DeviceKind.CUDA, "/opt/pytorch/bin/python"),            # V100 (row unverified)
])
def test_instance_family_boots_its_image_python_and_device(
        env: AwsEnv, instance_type: str, device: DeviceKind, python: str) -> None:
    image, user_data = _launched(env, instance_type)
    assert image == env.ami_ids[device]
    assert f"PY={python}\n" in user_data
    assert f"export ADVISOR_PROBE_DEVICE={device}\n" in user_data
    assert user_data.index(f"export ADVISOR_PROBE_DEVICE={device}") < user_data.index("-m probes.harness")


def test_neuron_user_data_activates_the_venv_before_the_harness(env: AwsEnv) -> None:
    _, user_data = _launched(env, "trn1.32xlarge")
    activate = "source /opt/aws_neuronx_venv_pytorch_2_9/bin/activate >> harness.log 2>&1"
    assert 0 < user_data.index(activate) < user_data.index("-m probes.harness")


def test_habana_image_is_the_newest_of_its_name(env: AwsEnv) -> None:
    pattern = AWS_TEST_RUNTIMES.for_instance("dl1.24xlarge").image
    older, newer = (env.ec2.register_image(Name=pattern.replace("*", version),
                                           RootDeviceName="/dev/sda1")["ImageId"]
                    for version in ("1.9", "2.1"))        # moto gives both the same creation time
    image, _ = _launched(env, "dl1.24xlarge")
    assert image == newer != older


def test_no_image_of_the_name_is_launch_failed_and_starts_nothing(env: AwsEnv) -> None:
    runtimes = AWS_TEST_RUNTIMES.with_images(
        {AWS_TEST_RUNTIMES.for_instance("dl1.24xlarge").image: "No Such AMI *"})
    launcher = AwsLauncher(bucket=BUCKET, runtimes=runtimes)
    with pytest.raises(LaunchFailed, match=r"no AMI of owner 'self' is named like 'No Such AMI \*'"):
        launcher.launch(make_request("r2", "aws:dl1.24xlarge:us-east-1"))
    assert env.running() == []
    assert env.s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


@pytest.mark.parametrize("instance_type", [
    "g5g.xlarge",       # Graviton (arm64) + T4G: the x86 DLAMIs cannot boot it
    "c7i.large",        # no accelerator at all
])
def test_unknown_family_is_launch_failed_and_starts_nothing(env: AwsEnv, instance_type: str) -> None:
    family = instance_type.split(".")[0]
    with pytest.raises(LaunchFailed, match=rf"^aws {instance_type}: no runtime for instance family "
                                           rf"'{family}'; known families are .*trn1"):
        env.launcher.launch(make_request("r3", f"aws:{instance_type}:us-east-1"))
    assert env.running() == []
    assert env.s3.list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0


def test_pinned_ami_parameter_and_python_win_over_the_family(env: AwsEnv) -> None:
    launcher = AwsLauncher(bucket=BUCKET, runtimes=AWS_TEST_RUNTIMES, ami_parameter=AMI_PARAMETER,
                           python="/opt/mine/bin/python")
    image, user_data = _launched(env, "trn1.2xlarge", launcher)
    assert image == env.ami_ids[DeviceKind.CUDA]             # what AMI_PARAMETER holds
    assert "PY=/opt/mine/bin/python\n" in user_data
    assert "export ADVISOR_PROBE_DEVICE=neuron\n" in user_data  # the device is still the family's
    assert launcher.runtime_for("trn1.2xlarge").lookup is ImageLookup.SSM_PARAMETER
    assert launcher.python == "/opt/mine/bin/python"


def test_python_of_a_plain_launcher_is_the_nvidia_dlami_one() -> None:
    assert AwsLauncher().python == "/opt/pytorch/bin/python"   # what sweep workers run


def test_dead_mans_switch_covers_the_batch_search(env: AwsEnv) -> None:
    request = make_request("r4", "aws:trn1.2xlarge:us-east-1", time_box_s=600.0, find_batch=True)
    handle = env.launcher.launch(request)
    attribute: Any = env.ec2.describe_instance_attribute(InstanceId=handle.resource_id,
                                                         Attribute="userData")
    env.launcher.terminate(handle)
    minutes = math.ceil((env.launcher.boot_overhead_s + 2 * 600.0 + env.launcher.grace_s) / 60)
    assert f"shutdown -h +{minutes} " in base64.b64decode(attribute["UserData"]["Value"]).decode()
