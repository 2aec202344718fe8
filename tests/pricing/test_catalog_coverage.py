"""The coverage the issue asks for, in the shipped catalog as ``pricing list --json`` shows it."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from cli.main import advisor


@pytest.fixture(scope="module")
def listed() -> list[dict[str, object]]:
    result = CliRunner().invoke(advisor, ["pricing", "list", "--json"])
    assert result.exit_code == 0
    return json.loads(result.output)["offers"]  # type: ignore[no-any-return]


def _families(offers: list[dict[str, object]], cloud: str) -> set[str]:
    return {str(o["instance_type"]) for o in offers if o["cloud"] == cloud}


@pytest.mark.parametrize("family", [
    "p3", "p4d", "p4de", "p5", "p5e", "p5en", "g4dn", "g5", "g6", "g6e", "dl1", "trn1", "trn2",
])
def test_aws_family(listed: list[dict[str, object]], family: str) -> None:
    assert any(t.split(".")[0] == family for t in _families(listed, "aws"))


@pytest.mark.parametrize("pattern", [
    r"^a2-", r"^a3-", r"^g2-", r"^n1-.*\+\dxT4$", r"^n1-.*\+\dxV100$", r"^n1-.*\+\dxP100$",
    r"^tpu-v2-", r"^tpu-v3-", r"^tpu-v4-", r"^tpu-v5litepod-", r"^tpu-v5p-", r"^tpu-v6e-",
])
def test_gcp_family(listed: list[dict[str, object]], pattern: str) -> None:
    assert any(re.search(pattern, t) for t in _families(listed, "gcp"))


@pytest.mark.parametrize("pattern", [
    r"^Standard_NC\d+ads_A100_v4$",  # NC A100 v4
    r"^Standard_ND96isr_H100_v5$",  # ND H100 v5
    r"^Standard_NC\d+as_T4_v3$",  # NC T4 v3
    r"^Standard_NV\d+adm?s_A10_v5$",  # A10 v5: the data has NVads A10 v5; "NCads A10 v5" is no series
])
def test_azure_series(listed: list[dict[str, object]], pattern: str) -> None:
    assert any(re.search(pattern, t) for t in _families(listed, "azure"))


def test_every_coverage_family_has_both_markets_somewhere(listed: list[dict[str, object]]) -> None:
    markets = {(o["cloud"], o["market"]) for o in listed}
    assert markets == {(c, m) for c in ("aws", "gcp", "azure") for m in ("on-demand", "spot")}
