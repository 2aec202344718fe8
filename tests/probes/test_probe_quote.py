"""One probe quote: boot time per family, the cloud's billing minimum and the time box."""

from __future__ import annotations

import pytest

from probes.launchers import launcher_class
from probes.launchers.choice import launcher_for_offer
from probes.launchers.quote import quote_probe, quote_text

TPU = "gcp:tpu-v5litepod-1:us-central1:spot"


@pytest.mark.parametrize(("key", "launcher", "boot_s"), [
    (TPU, "gcp-tpu", 420.0),                          # a TPU VM installs torch_xla on boot
    ("gcp:a2-highgpu-1g:us-central1:on-demand", "gcp", 180.0),
    ("aws:trn1.2xlarge:us-east-2:spot", "aws", 240.0),
])
def test_quote_is_boot_plus_time_box_at_the_price(key: str, launcher: str, boot_s: float) -> None:
    quote = quote_probe(key, price_usd_per_hour=0.36, time_box_s=30.0)
    assert (quote.launcher, quote.boot_s) == (launcher, boot_s)
    assert quote.usd == pytest.approx((boot_s + 30.0) / 3600 * 0.36)
    doubled = quote_probe(key, price_usd_per_hour=0.36, time_box_s=30.0, find_batch=True)
    assert doubled.run_s == 60.0


def test_billing_minimum_bills_a_short_probe_a_minute() -> None:
    cls = launcher_class("aws")
    quote = cls.quote("aws:g5.xlarge:us-east-1", price_usd_per_hour=3.6, run_s=1.0)
    assert quote.billing is not None and quote.billing.minimum_s == 60.0
    assert quote.billed_s == max(cls.boot_overhead_s + 1.0, 60.0)


def test_boot_time_per_family_overrides_the_launchers(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = launcher_class("aws")
    monkeypatch.setattr(cls, "boot_s_by_family", {"trn1": 600.0})
    assert cls.boot_s("aws:trn1.2xlarge:us-east-2:spot") == 600.0
    assert cls.boot_s("aws:g5.xlarge:us-east-1") == cls.boot_overhead_s


@pytest.mark.parametrize(("usd", "text"), [
    (0.0266, "$0.027"),     # the TPU probe: rounded up, never down to $0.02
    (0.0234, "$0.024"),
    (0.03, "$0.030"),       # exact stays
    (1.231, "$1.24"),       # cents from a dollar up
    (0.0, "$0"),
])
def test_quote_text_rounds_up(usd: float, text: str) -> None:
    assert quote_text(usd) == text
    if usd:
        assert float(text.lstrip("$")) >= usd


def test_offers_no_launcher_runs_have_none() -> None:
    assert launcher_for_offer("azure:Standard_NC24ads_A100_v4:eastus:on-demand") is None
    assert launcher_for_offer("local") == "local"
