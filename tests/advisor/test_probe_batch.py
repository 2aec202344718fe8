"""What advisor probe will run: requests per offer, their cost, the cap check."""

from __future__ import annotations

import pytest

from advisor.errors import AdvisorError
from advisor.ranking.probe_plan import ProbeOptions, prepare_probes, probe_target
from advisor.spec import parse_workload_spec
from pricing import OfferKeyError
from probes.launchers import launcher_class
from probes.launchers.cost_check import OverProbeBudget

SPEC = parse_workload_spec({"name": "t", "model": {"builtin": "mlp"}, "batch_size": 100,
                            "data": {"samples": 1000}})


def test_batch_is_split_over_the_offers_devices_and_costed_as_billed() -> None:
    eight = probe_target("aws:p4d.24xlarge:us-east-1")
    batch = prepare_probes(SPEC, [eight, probe_target("local")], ProbeOptions(time_box_s=30))
    remote, local = batch.requests
    assert remote.recipe.batch_size == 13 and local.recipe.batch_size == 100  # ceil(100 / 8)
    assert batch.launchers == {remote.probe_id: "aws", local.probe_id: "local"}
    billed_s = remote.max_run_s + launcher_class("aws").boot_overhead_s
    assert batch.estimate_usd == pytest.approx(billed_s / 3600 * eight.price_usd_per_hour)


def test_cap_refuses_with_amounts_told_apart() -> None:
    batch = prepare_probes(SPEC, [probe_target("aws:p4d.24xlarge:us-east-1")],
                           ProbeOptions(time_box_s=30))
    batch.check_cap(None)
    batch.check_cap(batch.estimate_usd)
    with pytest.raises(OverProbeBudget, match=r"over --max-usd \$"):  # probes.launchers' check
        batch.check_cap(batch.estimate_usd * 0.999)


def test_unknown_offers_and_clouds_without_a_launcher_are_named() -> None:
    with pytest.raises(OfferKeyError, match="--on: no offer 'aws:p9.huge:us-east-1:on-demand' "
                                            "in the price catalog"):
        probe_target("aws:p9.huge:us-east-1")
    with pytest.raises(AdvisorError, match="probes run on aws or gcp, not azure"):
        probe_target("azure:Standard_NC24ads_A100_v4:eastus")
