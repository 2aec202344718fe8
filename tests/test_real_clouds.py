"""Against real clouds: deselected by default; `pytest -m cloud tests/test_real_clouds.py`.

AWS needs boto3 credentials, GCP application-default credentials and GOOGLE_CLOUD_PROJECT;
Azure's retail price API needs none. These refresh live prices and check that the new
snapshot is what `recommend` uses. Nothing here starts an instance.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import advisor
from pricing import Cloud, shipped_catalog
from pricing.snapshots import current_catalog

pytestmark = pytest.mark.cloud


@pytest.mark.parametrize(
    ("cloud", "region", "instance_type"),
    [
        ("aws", "us-east-1", "g5.xlarge"),  # a family every refresh must bring back
        ("gcp", "us-central1", "a2-highgpu-1g"),
        ("azure", "eastus", "Standard_NC24ads_A100_v4"),
    ],
)
def test_live_refresh_writes_a_snapshot_that_is_used(
    cloud: str, region: str, instance_type: str, advisor_home: Path
) -> None:
    result = CliRunner().invoke(advisor, ["pricing", "refresh", "--cloud", cloud,
                                          "--region", region])
    assert result.exit_code == 0, result.output
    catalog = current_catalog(advisor_home / "snapshots")
    assert catalog.captured_at[Cloud(cloud)] > shipped_catalog().captured_at[Cloud(cloud)]
    assert any(o.instance_type == instance_type and o.region == region
               for o in catalog.offers if o.cloud is Cloud(cloud))
