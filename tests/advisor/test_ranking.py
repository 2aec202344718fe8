"""Ranking: constraints give reasons, costs follow the formulas, order is samples per dollar."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

import pytest

from advisor.profiling.profile import MemoryBasis, WorkloadProfile
from advisor.ranking.offers import (
    CostAssumptions,
    MeasuredMemory,
    RejectionKind,
    cost_of,
    filter_offers,
    memory_need,
    memory_rejection,
    rank,
    samples_that_fit,
)
from advisor.spec import parse_workload_spec
from advisor.throughput.estimate import Basis, ThroughputEstimate
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


SUM = WorkloadProfile(flops_per_sample=1e9, params=10, weight_bytes=4 * GIB, gradient_bytes=4 * GIB,
                      optimizer_bytes=8 * GIB, activation_bytes_per_sample=GIB // 4, method="test")
# A traced step: 2 GiB at rest, 0.5 GiB per sample (one line), 34 GiB at batch 64.
TRACED = replace(SUM, memory_lines=((2.0 * GIB, 0.5 * GIB),), memory_basis=MemoryBasis.TRACED)
FLAT = CostAssumptions(runtime_memory_overhead_gib=1.0)


def test_memory_rejection_says_need_basis_and_shortfall() -> None:
    needed, rejection = memory_rejection(spec(), SUM, offer(), FLAT)
    assert needed == pytest.approx(16 + 64 / 4 + 1)
    assert rejection is not None and rejection.kind is RejectionKind.MEMORY
    assert rejection.figures["needed_gib"] == needed and rejection.figures["memory_gib"] == 22.35
    assert rejection.reason == ("needs 33.0 GiB per device at batch 64 (estimated sum 32.0 GiB + 1.0 GiB "
                      "runtime overhead), A10G has 22.4 GiB: 10.6 GiB short")
    # split over 8 devices, each holds 8 samples: 16 + 2 + 1 GiB fits in 22.35
    assert memory_rejection(spec(), SUM, offer(count=8), FLAT)[1] is None


@pytest.mark.parametrize(("profile", "basis"), [
    (TRACED, "traced step 34.0 GiB"),                                          # traced lines
    (replace(SUM, memory_basis=MemoryBasis.USER), "profile.memory_gib in model.yaml 32.0 GiB"),
])
def test_memory_rejection_names_its_basis(profile: WorkloadProfile, basis: str) -> None:
    rejection = memory_rejection(spec(), profile, offer(), FLAT)[1]
    assert rejection is not None
    assert rejection.reason.startswith("needs ") and f"({basis} + 1.0 GiB" in rejection.reason


def test_runtime_overhead_is_the_vendors() -> None:
    # NVIDIA: 0.5 GiB context + 0.0625 GiB cuBLAS workspaces + 3% of the step's 34 GiB
    cuda = memory_need(spec(), TRACED, offer(memory=80.0), CostAssumptions())
    assert cuda.overhead_gib == pytest.approx(0.5625 + 0.03 * 34)
    assert cuda.gib == pytest.approx(34 + 0.5625 + 0.03 * 34) and cuda.rejection is None
    tpu = memory_need(spec(), TRACED, offer(accel="TPU-v5e", memory=16.0), CostAssumptions())
    assert tpu.overhead_gib == pytest.approx(1.0)
    assert tpu.rejection is not None
    assert "GiB TPU runtime), TPU-v5e has 16.0 GiB" in tpu.rejection.reason
    short = memory_need(spec(), TRACED, offer(memory=24.0), CostAssumptions())
    assert short.rejection is not None
    assert "GiB CUDA runtime), A10G has 24.0 GiB" in short.rejection.reason


def test_probe_measurement_is_the_basis_where_it_measured() -> None:
    probed = MeasuredMemory("A10G", fits_batch=96, fits_peak_gib=20.0, probe_id="p1")
    need = memory_need(spec(), TRACED, offer(), FLAT, probed)
    # 20 GiB at batch 96, down the traced line to 64: 20 - 32 * 0.5 = 4 GiB, but never below
    # proportional scaling (20 * 64 / 96)
    assert need.step_gib == pytest.approx(20.0 * 64 / 96) and need.rejection is None
    assert need.basis == "measured by probe p1: 20.0 GiB at batch 96, moved to batch 64"
    elsewhere = memory_need(spec(), TRACED, offer(accel="L4"), FLAT, probed)
    assert elsewhere.basis == "traced step"


def test_probe_peak_moves_up_the_traced_line_above_the_measured_batch() -> None:
    probed = MeasuredMemory("A10G", fits_batch=32, fits_peak_gib=12.0, probe_id="p2")
    need = memory_need(spec(), TRACED, offer(), FLAT, probed)
    # 12 GiB at 32, plus 32 more samples at 0.5 GiB: 28 GiB + 1 > 22.35
    assert need.step_gib == pytest.approx(28.0)
    assert need.rejection is not None
    assert need.rejection.reason == (
        "needs 29.0 GiB per device at batch 64 (measured by probe p2: 12.0 GiB at batch 32, "
        "moved to batch 64 28.0 GiB + 1.0 GiB runtime overhead), A10G has 22.4 GiB: 6.6 GiB short")


@pytest.mark.parametrize(("memory", "samples"), [
    (22.35, 38),   # (22.35 - 1 - 2) / 0.5 = 38.7 samples
    (80.0, 154),   # (80 - 3) / 0.5
    (2.5, 0),      # not even one sample: 2 + 0.5 + 1 > 2.5
])
def test_samples_that_fit_follow_the_traced_line(memory: float, samples: int) -> None:
    assert samples_that_fit(TRACED, offer(memory=memory), FLAT) == samples


def test_cost_formulas() -> None:
    tput = ThroughputEstimate(1000.0, 800.0, 1200.0, Basis.PREDICTED)
    est = cost_of(spec(), offer(price=2.0), tput, CostAssumptions(startup_hours=0.5))
    assert est.samples_per_dollar == pytest.approx(1000 * 3600 / 2.0)
    assert est.run_hours == pytest.approx(3_600_000 / 1000 / 3600 + 0.5)
    assert est.run_cost_usd == pytest.approx(est.run_hours * 2.0)


def test_spot_adds_the_interruption_overhead_of_its_band() -> None:
    tput = ThroughputEstimate(1000.0, 800.0, 1200.0, Basis.PREDICTED)
    assumptions = CostAssumptions(startup_hours=0.25)
    on_demand = cost_of(spec(), offer("p4d.24xlarge"), tput, assumptions)
    est = cost_of(spec(), offer("p4d.24xlarge", market=Market.SPOT), tput, assumptions)
    assert on_demand.spot is None and est.spot is not None
    assert est.spot.bucket_label == "5-10%/month" and est.spot.checkpoint_minutes == 30
    assert est.run_hours == pytest.approx(on_demand.run_hours + est.spot.overhead_hours)
    assert est.spot.overhead_hours == pytest.approx(1.0 * est.spot.overhead_fraction)
    # an unlisted type is assumed in the top band: a larger overhead, said in its text
    unlisted = cost_of(spec(), offer("g5.xlarge", market=Market.SPOT), tput, assumptions)
    assert unlisted.spot is not None and unlisted.spot.overhead_fraction > est.spot.overhead_fraction
    assert "no published interruption frequency" in unlisted.spot.describe()


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
