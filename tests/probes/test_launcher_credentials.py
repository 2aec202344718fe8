"""Missing cloud credentials are a setting: the launchers say so before anything is launched,
billed or stored, in one line that names what to set and prints no secret (the fixtures
``no_aws_credentials`` and ``no_gcp_credentials`` are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from probe_envs import BUCKET, GcpEnv, GcpTpuEnv
from probe_helpers import make_request

from probes.launchers.aws import AwsLauncher
from probes.launchers.credentials import MissingCredentials
from probes.launchers.gcp import GcpLauncher
from probes.launchers.gcp_tpu import GcpTpuLauncher
from probes.orchestrate import run_probes
from probes.store import ProbeStore


@pytest.mark.usefixtures("no_aws_credentials")
def test_aws_without_credentials_says_what_to_set() -> None:
    with pytest.raises(MissingCredentials) as info:
        AwsLauncher(bucket=BUCKET).check_credentials()
    message = str(info.value)
    assert message.startswith("aws probes need AWS credentials and none were found")
    assert "AWS_ACCESS_KEY_ID" in message and "AWS_PROFILE" in message and "\n" not in message


@pytest.mark.usefixtures("no_aws_credentials")
def test_aws_with_a_profile_that_does_not_exist_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    with pytest.raises(MissingCredentials, match="no-such-profile.*AWS_PROFILE"):
        AwsLauncher(bucket=BUCKET).check_credentials()


@pytest.mark.usefixtures("no_aws_credentials")
def test_aws_credentials_in_the_environment_pass_and_are_never_printed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t")
    AwsLauncher(bucket=BUCKET).check_credentials()  # no error


@pytest.mark.usefixtures("no_aws_credentials")
def test_an_injected_aws_client_factory_brings_its_own_credentials() -> None:
    launcher = AwsLauncher(bucket=BUCKET, client_factory=lambda _service, _region: object())
    launcher.check_credentials()  # no error: the factory is not boto3's chain


@pytest.mark.usefixtures("no_gcp_credentials")
@pytest.mark.parametrize("cls", [GcpLauncher, GcpTpuLauncher])
def test_gcp_without_application_default_credentials_says_what_to_run(cls: type[Any]) -> None:
    with pytest.raises(MissingCredentials) as info:
        cls(project="p", bucket="b").check_credentials()
    message = str(info.value)
    assert message.startswith(
        "gcp probes need Google application default credentials and none were found")
    assert "gcloud auth application-default login" in message
    assert "GOOGLE_APPLICATION_CREDENTIALS" in message and "\n" not in message


@pytest.mark.usefixtures("no_gcp_credentials")
@pytest.mark.parametrize("env", [GcpEnv, GcpTpuEnv])
def test_injected_gcp_clients_bring_their_own_credentials(env: type[GcpEnv]) -> None:
    env().launcher.check_credentials()  # no error: every client is a fake


@pytest.mark.usefixtures("no_gcp_credentials")
def test_one_ambient_gcp_client_is_enough_to_check() -> None:
    # the storage client injected, the compute client built here from the ambient credentials
    launcher = GcpLauncher(project="p", bucket="b", storage_client_factory=object)
    with pytest.raises(MissingCredentials):
        launcher.check_credentials()


@pytest.mark.usefixtures("no_aws_credentials")
def test_run_probes_without_credentials_launches_and_stores_nothing(tmp_path: Path) -> None:
    store = ProbeStore(f"sqlite:///{tmp_path / 'probes.sqlite'}")
    launcher = AwsLauncher(bucket=BUCKET)  # boto3's chain: it would sign with what it finds
    with pytest.raises(MissingCredentials):
        run_probes([make_request("a1", offer_key="aws:g5.xlarge:us-east-1")],
                   launcher_for=lambda _r: launcher, store=store)
    assert store.list() == []
