"""probes.launchers decides alone: which launcher probes an offer, what it needs set, and
whether the quotes fit their dollar caps."""

from __future__ import annotations

import pytest
from probe_helpers import make_request

from pricing import OfferKeyError
from probes.errors import ProbeError
from probes.launchers import launcher_class
from probes.launchers.choice import (
    REQUIRED_SETTINGS,
    check_settings,
    launcher_for_offer,
    launcher_options,
)
from probes.launchers.cost_check import OverProbeBudget, check_cost
from probes.launchers.quote import quote_probe, quote_request
from probes.launchers.runtimes import RUNTIME_TABLES, runtime_for_offer


@pytest.mark.parametrize(("key", "launcher"), [
    ("local", "local"),                                        # this machine
    ("aws:g5.xlarge:us-east-1", "aws"),
    ("gcp:a2-highgpu-1g:us-central1:spot", "gcp"),
    ("gcp:tpu-v5litepod-1:us-central1:spot", "gcp-tpu"),       # a TPU VM type
    ("azure:Standard_NC24ads_A100_v4:eastus", None),           # no launcher on azure
])
def test_one_function_names_the_launcher(key: str, launcher: str | None) -> None:
    assert launcher_for_offer(key) == launcher


def test_a_bad_key_is_the_offer_key_error() -> None:
    with pytest.raises(OfferKeyError, match="is not an offer key"):
        launcher_for_offer("aws:g5.xlarge")


def test_every_cloud_launcher_with_a_runtime_table_is_the_one_chosen_for_its_offers() -> None:
    for key in ("aws:g5.xlarge:us-east-1", "gcp:a2-highgpu-1g:us-central1",
                "gcp:tpu-v5litepod-1:us-central1"):
        name = launcher_for_offer(key)
        assert name in RUNTIME_TABLES and runtime_for_offer(key) is not None
        assert name in REQUIRED_SETTINGS


@pytest.mark.parametrize(("launchers", "settings", "message"), [
    (["aws"], {}, "aws probes need an S3 bucket for bundles and results: pass --aws-bucket "
                  "or set ADVISOR_AWS_BUCKET"),
    (["gcp-tpu"], {"gcp_bucket": "b"}, "gcp-tpu probes need a project: pass --gcp-project"),
    (["gcp", "aws"], {"gcp_project": "p", "gcp_bucket": "b"}, "aws probes need"),  # by name
])
def test_a_missing_setting_is_one_line(launchers: list[str], settings: dict[str, str],
                                       message: str) -> None:
    with pytest.raises(ProbeError) as info:
        check_settings(launchers, settings)
    assert str(info.value).startswith(message)


def test_settings_become_the_launchers_keywords() -> None:
    settings = {"aws_bucket": "a", "gcp_project": "p", "gcp_bucket": None}
    check_settings(["local"], {})
    assert launcher_options("local", settings) == {}
    assert launcher_options("aws", settings) == {"bucket": "a"}
    assert launcher_options("gcp-tpu", settings) == {"project": "p", "bucket": ""}


def test_check_cost_is_the_total_and_refuses_over_the_cap() -> None:
    quotes = [quote_probe("aws:g5.xlarge:us-east-1", price_usd_per_hour=3.6, time_box_s=60.0)] * 2
    total = check_cost(quotes, None)
    assert total == pytest.approx(2 * quotes[0].usd)
    assert check_cost(quotes, total) == total
    with pytest.raises(OverProbeBudget) as info:
        check_cost(quotes, total * 0.999)
    assert (info.value.estimate_usd, info.value.max_usd) == (total, total * 0.999)
    assert "these probes may cost $" in str(info.value) and "over --max-usd $" in str(info.value)


def test_a_request_over_its_own_cap_is_refused() -> None:
    request = make_request("p1", "aws:g5.xlarge:us-east-1", price_usd_per_hour=3.6,
                           time_box_s=60.0, max_usd=0.01)
    quote = quote_request(request)
    assert quote.max_usd == 0.01 and quote == launcher_class("aws").quote_request(request)
    with pytest.raises(OverProbeBudget, match=r"probe on aws:g5.xlarge:us-east-1 may cost "
                                              r"\$0.30, over its max_usd \$0.01"):
        check_cost([quote], None)
