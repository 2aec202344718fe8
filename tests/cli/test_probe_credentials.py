"""``advisor probe`` and ``advisor probes gc`` without cloud credentials, or with a region that
has no offer: one line naming what to set, exit 2, and the probe store as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.storage import default_storage_url
from cli.main import advisor
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(advisor, list(args))
    return result.exit_code, result.stdout, result.stderr


def _tiny_yaml(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "tests" / "probes" / "tiny_workload.py", tmp_path / "tiny_workload.py")
    path = tmp_path / "tiny.yaml"
    path.write_text("name: tiny\nmodel:\n  entrypoint: \"tiny_workload:build\"\n"
                    "batch_size: 16\ndata: {samples: 1000}\n")
    return path


def _earlier_probe() -> ProbeResult:
    """A result the user had before: it must still be there, unchanged, afterwards."""
    result = ProbeResult(probe_id="earlier1", offer_key="local", workload_fingerprint="fp",
                         status=ProbeStatus.OK, batch_size=16, samples_per_second=50.0,
                         measured_steps=20, device="cpu")
    ProbeStore(default_storage_url()).record(result)
    return result


@pytest.mark.parametrize(("offer", "settings", "says"), [
    # was: a launch_failed result stored ("NoCredentialsError: Unable to locate credentials")
    # and exit 1
    ("aws:g5.xlarge:us-east-1", ["--aws-bucket", "b"],
     "error: aws probes need AWS credentials and none were found: set AWS_ACCESS_KEY_ID"),
    # was: a traceback (DefaultCredentialsError) and an 'error' result stored
    ("gcp:g2-standard-4:us-central1", ["--gcp-project", "p", "--gcp-bucket", "b"],
     "error: gcp probes need Google application default credentials and none were found"),
    ("gcp:tpu-v5litepod-1:us-central1", ["--gcp-project", "p", "--gcp-bucket", "b"],
     "error: gcp probes need Google application default credentials"),
])
@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.usefixtures("no_aws_credentials", "no_gcp_credentials")
def test_a_cloud_probe_without_credentials_is_a_missing_setting(
        tmp_path: Path, offer: str, settings: list[str], says: str, as_json: bool) -> None:
    earlier = _earlier_probe()
    code, out, err = _run("probe", str(_tiny_yaml(tmp_path)), "--on", offer, *settings,
                          "--max-usd", "100", *(["--json"] if as_json else []))
    assert code == 2, err
    assert err.startswith(says) and err.count("\n") == 1, err
    assert out == ""
    assert ProbeStore(default_storage_url()).list() == [earlier]   # nothing stored, nothing lost


@pytest.mark.parametrize(("args", "says"), [
    (["--aws-region", "us-east-1"], "error: aws probes need AWS credentials"),
    (["--gcp-project", "p"], "error: gcp probes need Google application default credentials"),
])
@pytest.mark.usefixtures("no_aws_credentials", "no_gcp_credentials")
def test_probes_gc_without_credentials_is_one_line(args: list[str], says: str) -> None:
    # the gcp case was a traceback
    code, _, err = _run("probes", "gc", "--dry-run", *args)
    assert code == 2 and err.startswith(says) and err.count("\n") == 1, err


@pytest.mark.parametrize(("region", "says"), [
    ("garbage", "error: --aws-region: unknown aws region 'garbage'; aws regions with offers: "),
    ("us-east1", "error: --aws-region: unknown aws region 'us-east1'; did you mean us-east-1"),
    # a GCP region is no AWS region, though the catalog has offers there
    ("us-central1", "error: --aws-region: unknown aws region 'us-central1'"),
])
@pytest.mark.usefixtures("no_aws_credentials")
def test_probes_gc_checks_its_aws_regions(region: str, says: str) -> None:
    # was: 'aws: cannot list probe instances in garbage: Unable to locate credentials' (and,
    # with credentials, a call to an endpoint that does not exist)
    code, _, err = _run("probes", "gc", "--aws-region", region)
    assert code == 2 and err.startswith(says) and err.count("\n") == 1, err


def test_probes_gc_with_credentials_asks_each_region_once() -> None:
    import boto3
    from moto import mock_aws

    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        # an image of its own: moto's default ones are off when another test in the worker
        # set MOTO_EC2_LOAD_DEFAULT_AMIS=false before this one
        image = ec2.register_image(Name="gc-test", RootDeviceName="/dev/sda1")["ImageId"]
        ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, TagSpecifications=[{
            "ResourceType": "instance", "Tags": [{"Key": "advisor-probe-id", "Value": "p1"},
                                                 {"Key": "advisor-expires-at", "Value": "1"}]}])
        code, out, err = _run("probes", "gc", "--dry-run", "--aws-region", "us-east-1",
                              "--aws-region", "us-east-1", "--json")
    assert code == 0, err
    expired = json.loads(out)["expired"]
    assert expired["local"] == [] and len(expired["aws"]) == 1  # not listed twice
