"""Ranking: constraints give reasons, costs follow the formulas, order is samples per dollar."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from advisor.profile import WorkloadProfile
from advisor.ranking import CostAssumptions, cost_of, filter_offers, memory_rejection, rank
from advisor.spec import parse_workload_spec
from advisor.throughput import Basis, ThroughputEstimate
from pricing import Cloud, InstanceOffer, Market, shipped_catalog

ACCELERATORS = shipped_catalog().accelerators
GIB = 2**30


def offer(itype: str = "g5.xlarge", *, accel: str = "A10G", count: int = 1,
          price: float = 1.0, market: Market = Market.ON_DEMAND, region: str = "us-east-1",
          cloud: Cloud = Cloud.AWS, memory: float = 22.35, flagged: str = "") -> InstanceOffer:
    return InstanceOffer(cloud=cloud, region=region, zone=None, instance_type=itype,
                         accelerator=accel, accelerator_count=count, vcpus=8, memory_gib=32,
                         accelerator_memory_gib=memory, market=market, price_usd_per_hour=price,
                         source="test", observed_at=date(2025, 3, 1), flagged=flagged)


def spec(**constraints: object):  # type: ignore[no-untyped-def]
    return parse_workload_spec({
        "name": "t", "model": {"builtin": "mlp"}, "batch_size": 64,
        "data": {"total_samples": 3_600_000}, "constraints": constraints,
    })


@pytest.mark.parametrize(
    ("constraints", "candidate", "reason"),
    [
        ({"clouds": ["gcp"]}, offer(), "cloud aws not in constraints.clouds"),
        ({"regions": ["us-west-2"]}, offer(), "region us-east-1 not in constraints.regions"),
        ({"accelerators": {"include": ["H100"]}}, offer(), "A10G not in constraints.accelerators.include"),
        ({"accelerators": {"exclude": ["a10g"]}}, offer(), "A10G in constraints.accelerators.exclude"),
        ({"spot": "never"}, offer(market=Market.SPOT), "spot not allowed"),
        ({"spot": "only"}, offer(), "on-demand left out"),
        ({"max_accelerators": 4}, offer(count=8), "8 accelerators > constraints.max_accelerators 4"),
        ({}, offer(accel="Inferentia2"), "inference accelerator"),
        ({}, offer(count=128), "batch_size 64 < 128 accelerators"),
        ({}, offer(flagged="odd price"), "price flagged: odd price"),
    ],
)
def test_static_constraints_reject_with_a_reason(constraints, candidate, reason) -> None:  # type: ignore[no-untyped-def]
    kept, rejected = filter_offers(spec(**constraints), [candidate], ACCELERATORS)
    assert kept == []
    assert reason in rejected[0].reason


def test_offers_that_meet_constraints_are_kept() -> None:
    kept, rejected = filter_offers(spec(clouds=["aws"], spot="allowed"), [offer()], ACCELERATORS)
    assert kept == [offer()] and rejected == []


def test_memory_rejection_names_need_and_capacity() -> None:
    profile = WorkloadProfile(flops_per_sample=1e9, params=10, weight_bytes=4 * GIB,
                              gradient_bytes=4 * GIB, optimizer_bytes=8 * GIB,
                              activation_bytes_per_sample=GIB // 4, method="test")
    needed, reason = memory_rejection(spec(), profile, offer(), CostAssumptions())
    assert needed == pytest.approx(16 + 64 / 4 + 1)
    assert reason == "needs 33.0 GiB per device at batch 64, A10G has 22.4 GiB"
    # split over 8 devices, each holds 8 samples: 16 + 2 + 1 GiB fits in 22.35
    assert memory_rejection(spec(), profile, offer(count=8), CostAssumptions())[1] is None


def test_cost_formulas() -> None:
    tput = ThroughputEstimate(1000.0, 800.0, 1200.0, Basis.PREDICTED)
    est = cost_of(spec(), offer(price=2.0), tput, CostAssumptions(startup_hours=0.5))
    assert est.samples_per_dollar == pytest.approx(1000 * 3600 / 2.0)
    assert est.run_hours == pytest.approx(3_600_000 / 1000 / 3600 + 0.5)
    assert est.run_cost_usd == pytest.approx(est.run_hours * 2.0)


def test_spot_adds_restart_overhead() -> None:
    tput = ThroughputEstimate(1000.0, 800.0, 1200.0, Basis.PREDICTED)
    assumptions = CostAssumptions(startup_hours=0, spot_overhead_fraction=0.1)
    est = cost_of(spec(), offer(market=Market.SPOT), tput, assumptions)
    assert est.run_hours == pytest.approx(1.1)


def test_rank_orders_by_samples_per_dollar_and_applies_budget_and_deadline() -> None:
    tput = ThroughputEstimate(1000.0, 900.0, 1100.0, Basis.PREDICTED)
    a = cost_of(spec(), offer("cheap", price=1.0), tput, CostAssumptions(startup_hours=0))
    b = cost_of(spec(), offer("dear", price=3.0), tput, CostAssumptions(startup_hours=0))
    slow = cost_of(spec(), offer("slow", price=0.1), replace(tput, samples_per_second=10,
                   samples_per_second_low=9, samples_per_second_high=11), CostAssumptions())
    ranked, rejected = rank(spec(budget_usd=2.5, deadline_hours=10), [b, slow, a])
    assert [e.offer.instance_type for e in ranked] == ["cheap"]
    reasons = {r.offer.instance_type: r.reason for r in rejected}
    assert reasons["dear"].startswith("run costs $3.00 > constraints.budget_usd 2.5")
    assert reasons["slow"].startswith("run takes 100.2 h > constraints.deadline_hours 10")
