"""``--launch`` ships no secret: every object uploaded to (moto) S3 and every start-up script
is scanned for the storage password and for a ``credentials.json`` lying beside sweep.yaml."""

from __future__ import annotations

import base64
import io
import tarfile
from pathlib import Path
from typing import Any

import boto3
import pytest
from sweep_helpers import AMI_PARAMETER, BUCKET, OFFER, write_sweep

from advisor.errors import AdvisorError
from advisor.sweep.run.bundle import bundle_files, make_worker_bundle, url_without_password
from advisor.sweep.run.launch import (
    SweepAwsLauncher,
    launch_requests,
    make_sweep_launcher,
    worker_boot_script,
    worker_packages,
)
from advisor.sweep.spec import load_sweep_spec
from probes.errors import ProbeError

PASSWORD = "s3cr3t-Pw_42"
URL = f"postgresql://advisor:{PASSWORD}@db.example.com:5432/sweeps"
CREDENTIALS = '{"api_key": "AKIA-CREDENTIALS-BESIDE-SWEEP-YAML"}'


def _sweep(tmp_path: Path) -> Path:
    path = write_sweep(tmp_path, study="secrets", storage=URL, instance=OFFER,
                       entrypoint="objectives:quadratic")
    (tmp_path / "credentials.json").write_text(CREDENTIALS)
    (tmp_path / "notes.txt").write_text("not needed by the workers")
    (tmp_path / "objectives_data").mkdir()
    return path


def _launcher(path: Path) -> SweepAwsLauncher:
    return SweepAwsLauncher(load_sweep_spec(path), URL, bucket=BUCKET, ami_parameter=AMI_PARAMETER,
                            instance_profile="advisor-worker", poll_interval_s=0.05)


def _uploaded() -> dict[str, bytes]:
    """Every object in the bucket, tarballs unpacked member by member."""
    s3 = boto3.client("s3", region_name="us-east-1")
    found: dict[str, bytes] = {}
    for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        body = s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
        found[item["Key"]] = body
        if item["Key"].endswith(".tar.gz"):
            with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                for member in tar.getmembers():
                    data = tar.extractfile(member) if member.isfile() else None
                    found[f"{item['Key']}!{member.name}"] = data.read() if data else b""
    return found


def _user_data(ec2: Any) -> list[str]:
    reply = ec2.describe_instances()
    ids = [i["InstanceId"] for r in reply["Reservations"] for i in r["Instances"]]
    return [base64.b64decode(ec2.describe_instance_attribute(
        InstanceId=i, Attribute="userData")["UserData"]["Value"]).decode() for i in ids]


def test_no_password_or_credentials_file_leaves_in_bundle_or_start_up_script(
        tmp_path: Path, aws: Any) -> None:
    path = _sweep(tmp_path)
    launcher = _launcher(path)
    request = launch_requests(load_sweep_spec(path), 1, 1.0)[0]
    handle = launcher.launch(request)
    uploaded, scripts = _uploaded(), _user_data(aws)
    assert uploaded and scripts
    for name, body in [*uploaded.items(), *(("user-data", s.encode()) for s in scripts)]:
        assert PASSWORD.encode() not in body, name
        assert b"AKIA-CREDENTIALS" not in body, name
    assert not any(k.endswith("credentials.json") or k.endswith("notes.txt") for k in uploaded)
    storage = next(v for k, v in uploaded.items() if k.endswith("!storage.txt")).decode()
    assert storage == "postgresql://advisor@db.example.com:5432/sweeps"
    # the password waits in an SSM SecureString the boot script reads into PGPASSWORD
    parameter = launcher.password_parameter(request.probe_id)
    ssm = boto3.client("ssm", region_name="us-east-1")
    stored = ssm.get_parameter(Name=parameter, WithDecryption=True)["Parameter"]
    assert (stored["Value"], stored["Type"]) == (PASSWORD, "SecureString")
    assert parameter in scripts[0] and "export PGPASSWORD" in scripts[0]
    launcher.terminate(handle)
    assert _uploaded() == {}
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=parameter)


def test_bundle_and_password_are_deleted_when_terminating_fails(
        tmp_path: Path, aws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    del aws
    path = _sweep(tmp_path)
    launcher = _launcher(path)
    request = launch_requests(load_sweep_spec(path), 1, 1.0)[0]
    handle = launcher.launch(request)

    def refuse(region: str, ids: list[str]) -> None:
        raise ProbeError(f"aws: could not terminate {ids} in {region}")

    monkeypatch.setattr(launcher, "_terminate_ids", refuse)
    with pytest.raises(ProbeError, match="could not terminate"):
        launcher.terminate(handle)
    assert _uploaded() == {}
    ssm = boto3.client("ssm", region_name="us-east-1")
    assert ssm.describe_parameters()["Parameters"] == [
        p for p in ssm.describe_parameters()["Parameters"] if p["Name"] == AMI_PARAMETER]


def test_bundle_is_an_explicit_list_with_an_ignore_file(tmp_path: Path) -> None:
    path = _sweep(tmp_path)
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text("")
    (package / "big.npy").write_text("data")
    (package / "service-account.pem").write_text("key")
    (tmp_path / ".advisorignore").write_text("# data is downloaded on the instance\n*.npy\n")
    spec = load_sweep_spec(path)
    assert bundle_files(spec) == ["objectives.py", "sweep.yaml"]
    from dataclasses import replace

    assert bundle_files(replace(spec, entrypoint="mypkg.model:objective")) == [
        "mypkg/__init__.py", "mypkg/model.py", "sweep.yaml"]


def test_a_password_needs_an_instance_profile_to_read_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADVISOR_AWS_INSTANCE_PROFILE", raising=False)
    spec = load_sweep_spec(_sweep(tmp_path))
    with pytest.raises(AdvisorError, match="ADVISOR_AWS_INSTANCE_PROFILE") as info:
        make_sweep_launcher(spec, URL, sweep_yaml_name="sweep.yaml", bucket=BUCKET)
    assert PASSWORD not in str(info.value)
    monkeypatch.setenv("ADVISOR_AWS_INSTANCE_PROFILE", "advisor-worker")
    launcher = make_sweep_launcher(spec, URL, sweep_yaml_name="sweep.yaml", bucket=BUCKET)
    assert getattr(launcher, "instance_profile", None) == "advisor-worker"


def test_boot_script_pins_the_client_versions() -> None:
    from importlib.metadata import version

    pins = worker_packages()
    assert f"optuna=={version('optuna')}" in pins
    assert f"sqlalchemy=={version('sqlalchemy')}" in pins
    assert any(p.startswith(("psycopg2-binary==", "psycopg[binary]==")) for p in pins)
    script = worker_boot_script(fetch=["curl -o bundle.tar.gz URL"], python="/opt/py",
                                sweep_yaml_name="sweep.yaml", shutdown_after_s=60)
    assert f"optuna=={version('optuna')}" in script


@pytest.mark.parametrize(("url", "expected"), [
    (URL, "postgresql://advisor@db.example.com:5432/sweeps"),             # password removed
    ("postgresql+psycopg://a:p%40ss@h/db", "postgresql+psycopg://a@h/db"),  # quoted '@'
    ("postgresql://advisor@h/db", "postgresql://advisor@h/db"),           # none to remove
])
def test_url_without_password(url: str, expected: str) -> None:
    assert url_without_password(url) == expected


def test_a_shipped_file_holding_the_password_is_refused(tmp_path: Path) -> None:
    path = _sweep(tmp_path)
    (tmp_path / "objectives.py").write_text(f"PASSWORD = {PASSWORD!r}\n")
    with pytest.raises(AdvisorError, match="objectives.py holds the storage password") as info:
        make_worker_bundle(load_sweep_spec(path), URL)
    assert PASSWORD not in str(info.value)
