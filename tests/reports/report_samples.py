"""Small, deterministic recommendation and sweep values built by hand for the report tests."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from advisor.ranking.offers import CostEstimate, Recommendation, Rejection, RejectionKind
from advisor.sweep import SweepStatus as SweepReportData
from advisor.sweep import TrialCost
from advisor.throughput.estimate import Basis, ThroughputEstimate
from pricing import Cloud, InstanceOffer, Market

TOTAL_SAMPLES = 100_000_000
STARTUP_HOURS = 0.25
GENERATED_AT = datetime(2025, 3, 2, 12, 0, tzinfo=UTC)


def offer(cloud: Cloud, instance_type: str, region: str, market: Market, accelerator: str,
          count: int, price: float, memory_gib: float = 40.0) -> InstanceOffer:
    """An offer observed on 2025-03-01 from the shipped catalog file."""
    return InstanceOffer(cloud=cloud, region=region, zone=None, instance_type=instance_type,
                         accelerator=accelerator, accelerator_count=count, vcpus=8,
                         memory_gib=64.0, accelerator_memory_gib=memory_gib, market=market,
                         price_usd_per_hour=price, source="catalog:offers.csv",
                         observed_at=date(2025, 3, 1))


def estimate(o: InstanceOffer, sps: float, low: float, high: float, basis: Basis,
             memory: float | None = 21.5) -> CostEstimate:
    """A cost estimate computed the way ranking does, for TOTAL_SAMPLES samples."""
    def hours(at: float) -> float:
        return TOTAL_SAMPLES / at / 3600 * (1.1 if o.market is Market.SPOT else 1.0) + STARTUP_HOURS

    return CostEstimate(offer=o, throughput=ThroughputEstimate(sps, low, high, basis),
                        samples_per_dollar=sps * 3600 / o.price_usd_per_hour, run_hours=hours(sps),
                        run_cost_usd=hours(sps) * o.price_usd_per_hour,
                        memory_needed_gib_per_device=memory,
                        run_cost_usd_low=hours(high) * o.price_usd_per_hour,
                        run_cost_usd_high=hours(low) * o.price_usd_per_hour)


P4D_OD = offer(Cloud.AWS, "p4d.24xlarge", "us-east-1", Market.ON_DEMAND, "A100-40GB-SXM", 8, 32.77)
P4D_SPOT = offer(Cloud.AWS, "p4d.24xlarge", "us-east-1", Market.SPOT, "A100-40GB-SXM", 8, 12.5)
P4D_WEST = offer(Cloud.AWS, "p4d.24xlarge", "us-west-2", Market.ON_DEMAND, "A100-40GB-SXM", 8,
                 33.5)
A2 = offer(Cloud.GCP, "a2-highgpu-1g", "us-central1", Market.ON_DEMAND, "A100-40GB-SXM", 1, 3.67)
G5 = offer(Cloud.AWS, "g5.xlarge", "us-east-1", Market.SPOT, "A10G", 1, 0.45, 24.0)
G4 = offer(Cloud.AWS, "g4dn.xlarge", "us-east-1", Market.ON_DEMAND, "T4", 1, 0.526, 16.0)
NC = offer(Cloud.AZURE, "Standard_NC24ads_A100_v4", "eastus", Market.ON_DEMAND,
           "A100-80GB-PCIe", 1, 3.67, 80.0)
EURO = offer(Cloud.GCP, "a2-highgpu-8g", "europe-west4", Market.ON_DEMAND, "A100-40GB-SXM", 8,
             29.39)


def sample_recommendation() -> Recommendation:
    """Five ranked offers (measured, predicted, prior) and three rejected ones."""
    ranked = (
        estimate(G5, 520.0, 380.0, 700.0, Basis.PRIOR),
        estimate(A2, 2400.0, 2300.0, 2500.0, Basis.MEASURED),
        estimate(P4D_SPOT, 17500.0, 14000.0, 21000.0, Basis.PREDICTED),
        estimate(P4D_OD, 17500.0, 14000.0, 21000.0, Basis.PREDICTED),
        estimate(P4D_WEST, 17500.0, 14000.0, 21000.0, Basis.PREDICTED),
    )
    ranked = tuple(sorted(ranked, key=lambda e: (-e.samples_per_dollar, e.offer.key)))
    rejected = (
        Rejection(G4, RejectionKind.MEMORY, {
            "needed_gib": 21.5, "batch": 256, "basis": "traced step", "step_gib": 20.4,
            "overhead_gib": 1.1, "runtime": "CUDA runtime", "memory_gib": 16.0, "short_gib": 5.5}),
        Rejection(NC, RejectionKind.CLOUD),
        Rejection(EURO, RejectionKind.REGION),
    )
    return Recommendation(
        workload="resnet50-imagenet", prices_captured_at=date(2025, 3, 1), ranked=ranked,
        rejected=rejected,
        assumptions=("start-up (provisioning, image, data staging): 0.25 h per run",
                     "spot: +10% run time for interruptions and restarts from checkpoints"),
        advice=("the top pick (A10G) has basis 'prior': probe it ('advisor probe MODEL --on "
                "aws:g5.xlarge:us-east-1:spot')",),
        warnings=("prices captured 2025-03-01 are 120 days old",),
    )


def _trial(number: int, state: str, value: float | None, cost: float, start_min: float,
           minutes: float, steps: int, params: dict[str, object],
           intermediate: bool = False) -> TrialCost:
    origin = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    started = origin + timedelta(minutes=start_min)
    finished = None if state == "running" else started + timedelta(minutes=minutes)
    return TrialCost(number=number, state=state, value=value, cost_usd=cost,
                     started_at=started, finished_at=finished, wall_s=minutes * 60,
                     price_usd_per_hour=1.006, steps_reported=steps,
                     value_is_intermediate=intermediate, params=params)


def sample_sweep() -> SweepReportData:
    """Seven trials: completed, pruned, failed and one running; budget $5."""
    trials = (
        _trial(0, "complete", 0.412, 0.503, 0, 30, 10, {"lr": 0.01, "batch_size": 128}),
        _trial(1, "complete", 0.388, 0.503, 0, 30, 10, {"lr": 0.003, "batch_size": 256}),
        _trial(2, "pruned", 0.95, 0.1006, 30, 6, 2, {"lr": 0.2, "batch_size": 128}, True),
        _trial(3, "fail", None, 0.0168, 30, 1, 0, {"lr": 0.05, "batch_size": 512}),
        _trial(4, "complete", 0.371, 0.4527, 36, 27, 10, {"lr": 0.002, "batch_size": 256}),
        _trial(5, "pruned", 0.71, 0.1509, 40, 9, 3, {"lr": 0.0001, "batch_size": 512}, True),
        _trial(6, "running", None, 0.0503, 70, 3, 1, {"lr": 0.004, "batch_size": 256}),
    )
    return SweepReportData(
        study="resnet50-lr", direction="minimize", instance="aws:g5.xlarge:us-east-1:on-demand",
        price_usd_per_hour=1.006, trials=trials, budget_usd=5.0, saved_by_pruning_usd=1.2072,
        bytes_cleaned=3 * 98_000_000, stop_reason="", prices_captured_at=date(2025, 3, 1))


def mlp_ranking(**constraints: object) -> Recommendation:
    """The real ranking of a small MLP on the shipped catalog (a fixed profile, no torch):
    spot rows with published and assumed interruption bands, rejections of several kinds."""
    from advisor.profiling.profile import WorkloadProfile
    from advisor.ranking.recommend import recommend
    from advisor.spec import parse_workload_spec
    from pricing import shipped_catalog

    mlp = WorkloadProfile(flops_per_sample=6.6e6, params=1_100_000, weight_bytes=4_400_000,
                          gradient_bytes=4_400_000, optimizer_bytes=8_800_000,
                          activation_bytes_per_sample=20_000, method="test")
    spec = parse_workload_spec({"name": "m", "model": {"builtin": "mlp"}, "batch_size": 256,
                                "data": {"samples": 60000, "epochs": 20},
                                "constraints": constraints})
    return recommend(spec, catalog=shipped_catalog(), profile=mlp, today=date(2026, 1, 1))
