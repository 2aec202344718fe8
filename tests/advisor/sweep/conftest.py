"""Fixtures shared by the sweep tests."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from moto import mock_aws
from sweep_helpers import AMI_PARAMETER, BUCKET


@functools.cache
def _loader() -> botocore.loaders.Loader:
    """One botocore data loader for the process; it caches what it parsed (read-only)."""
    return botocore.loaders.create_loader()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto S3, SSM, EC2 and IAM with fake credentials (no default AMIs: slow): the AMI
    parameter, the bundle bucket and a worker instance profile exist; yields an EC2 client."""
    monkeypatch.setenv("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():  # which gives boto3 a fresh default session...
        # ...that reads the service models through the one loader of this process: parsing
        # EC2's (megabytes of JSON) again for every test costs about 0.3 s of CPU each
        session = botocore.session.Session()
        session.register_component("data_loader", _loader())
        boto3.setup_default_session(botocore_session=session)
        boto3.client("ssm", region_name="us-east-1").put_parameter(
            Name=AMI_PARAMETER, Value="ami-12c6146b", Type="String")
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        boto3.client("iam", region_name="us-east-1").create_instance_profile(
            InstanceProfileName="advisor-worker")
        yield boto3.client("ec2", region_name="us-east-1")
