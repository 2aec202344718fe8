"""ThroughputEstimate: the step-time cap that keeps small models' figures physical."""

from __future__ import annotations

import pytest

from advisor.throughput.estimate import MIN_STEP_SECONDS, Basis, ThroughputEstimate


def test_a_flops_figure_beyond_one_step_per_min_step_time_is_capped() -> None:
    # 4.4M samples/s at batch 256 would be 17,000 steps a second.
    estimate = ThroughputEstimate(4.4e6, 2.2e6, 6e6, Basis.PRIOR).step_capped(256)
    cap = 256 / MIN_STEP_SECONDS
    assert (estimate.samples_per_second, estimate.samples_per_second_high) == (cap, cap)
    # The interval keeps its lower width: the step may be slower than the floor.
    assert estimate.samples_per_second_low == pytest.approx(cap / 2)
    assert estimate.basis is Basis.PRIOR


def test_only_the_part_of_the_interval_above_the_cap_moves() -> None:
    cap = 256 / MIN_STEP_SECONDS
    estimate = ThroughputEstimate(0.8 * cap, 0.5 * cap, 1.5 * cap, Basis.PREDICTED)
    capped = estimate.step_capped(256)
    assert (capped.samples_per_second, capped.samples_per_second_low,
            capped.samples_per_second_high) == (0.8 * cap, 0.5 * cap, cap)


@pytest.mark.parametrize("estimate", [
    ThroughputEstimate(1e4, 9e3, 1.1e4, Basis.PREDICTED),   # far below the cap
    ThroughputEstimate(4.4e6, 4.3e6, 4.5e6, Basis.MEASURED),  # a probe measured it
])
def test_figures_below_the_cap_and_measured_ones_are_kept(estimate: ThroughputEstimate) -> None:
    assert estimate.step_capped(256) is estimate


def test_recommend_caps_a_tiny_model_at_one_step_per_min_step_time() -> None:
    from datetime import date

    from advisor.profiling.profile import WorkloadProfile
    from advisor.ranking.recommend import recommend
    from advisor.spec import parse_workload_spec
    from pricing import shipped_catalog

    # A 784-64-64-10 MLP: ~0.3 MFLOPs per training sample; FLOPs alone say millions/s.
    tiny = WorkloadProfile(flops_per_sample=3.2e5, params=55_000, weight_bytes=220_000,
                           gradient_bytes=220_000, optimizer_bytes=440_000,
                           activation_bytes_per_sample=4096, method="test")
    spec = parse_workload_spec({"name": "tiny-mlp", "model": {"builtin": "mlp"},
                                "batch_size": 256, "data": {"samples": 60_000, "epochs": 10}})
    rec = recommend(spec, catalog=shipped_catalog(), profile=tiny, today=date(2026, 1, 1))
    cap = 256 / MIN_STEP_SECONDS
    assert rec.ranked and all(e.throughput.samples_per_second_high <= cap * (1 + 1e-9)
                              for e in rec.ranked if e.throughput.basis is not Basis.MEASURED)
    assert any(e.throughput.samples_per_second == pytest.approx(cap) for e in rec.ranked)
    assert any("1 ms" in line for line in rec.assumptions)
