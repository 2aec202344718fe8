"""Rejections carry their rule and figures; readers group by kind, never by parsing text."""

from __future__ import annotations

from advisor.ranking.offers import CostAssumptions, RejectionKind, cost_of, rank
from advisor.ranking.rejections import KIND_TEXT, Rejection
from advisor.ranking.serialize import rejection_row
from advisor.throughput.estimate import Basis, ThroughputEstimate
from pricing import Market
from tests.advisor.test_ranking import offer, spec


def test_every_kind_has_a_text_and_what_it_says_about_the_offers() -> None:
    assert set(KIND_TEXT) == set(RejectionKind)
    assert all(text.template and text.what for text in KIND_TEXT.values())


def test_deadline_and_budget_keep_the_figures_they_compared() -> None:
    slow = cost_of(spec(deadline_hours=1), offer(), ThroughputEstimate(100, 90, 110,
                                                                       Basis.PREDICTED),
                   CostAssumptions())
    _, rejected = rank(spec(deadline_hours=1), [slow])
    assert rejected[0].kind is RejectionKind.DEADLINE
    assert rejected[0].figures == {"run_hours": slow.run_hours, "deadline_hours": 1, "spot": ""}
    assert rejected[0].reason == f"run takes {slow.run_hours:,.1f} h > constraints.deadline_hours 1"
    _, over = rank(spec(budget_usd=0.5), [slow])
    assert over[0].kind is RejectionKind.BUDGET and over[0].figures["budget_usd"] == 0.5


def test_json_row_names_the_kind_and_figures() -> None:
    row = rejection_row(Rejection(offer(count=16), RejectionKind.TOO_MANY_ACCELERATORS,
                                  {"max_accelerators": 8}))
    assert row["reason_kind"] == "too-many-accelerators" and row["figures"] == {"max_accelerators": 8}
    assert row["reason"] == "16 accelerators > constraints.max_accelerators 8"


def test_a_spot_offer_over_the_deadline_names_its_interruption_band() -> None:
    spot = cost_of(spec(deadline_hours=1), offer("p4d.24xlarge", market=Market.SPOT),
                   ThroughputEstimate(100, 90, 110, Basis.PREDICTED), CostAssumptions())
    _, rejected = rank(spec(deadline_hours=1), [spot])
    assert "h (spot, interruption band 5-10%/month published) > constraints.deadline_hours 1" \
        in rejected[0].reason


# One realistic set of figures per kind: what the code that rejects for it passes.
FIGURES: dict[RejectionKind, dict[str, float | int | str]] = {
    RejectionKind.CLOUD: {}, RejectionKind.REGION: {},
    RejectionKind.ACCELERATOR_NOT_INCLUDED: {}, RejectionKind.ACCELERATOR_EXCLUDED: {},
    RejectionKind.SPOT_NOT_ALLOWED: {}, RejectionKind.ON_DEMAND_LEFT_OUT: {},
    RejectionKind.INFERENCE_ONLY: {},
    RejectionKind.TOO_MANY_ACCELERATORS: {"max_accelerators": 8},
    RejectionKind.BATCH_TOO_SMALL: {"batch_size": 4},
    RejectionKind.PRICE_FLAGGED: {"flag": "below-list-cluster: 0.44x the median"},
    RejectionKind.MEMORY: {"needed_gib": 30.0, "batch": 64, "basis": "traced step",
                           "step_gib": 29.0, "overhead_gib": 1.0, "runtime": "CUDA runtime",
                           "memory_gib": 24.0, "short_gib": 6.0},
    RejectionKind.MEMORY_PROBE_OOM: {"memory_gib": 24.0, "batch": 64, "probe_id": "p1",
                                     "failed_batch": 48},
    RejectionKind.DEADLINE: {"run_hours": 80.0, "deadline_hours": 72, "spot": ""},
    RejectionKind.BUDGET: {"run_cost_usd": 3100.0, "budget_usd": 3000, "spot": ""},
    RejectionKind.PORTABILITY: {"backend": "xla", "runtime_package": "torch_xla",
                                "operators": "grid_sampler_2d, grid_sampler_2d_backward"},
}


def test_each_kind_renders_without_placeholders() -> None:
    assert set(FIGURES) == set(RejectionKind)
    for kind, figures in FIGURES.items():
        reason = Rejection(offer(), kind, figures).reason
        assert "{" not in reason and "}" not in reason, kind
        assert reason and reason == reason.strip(), kind


def test_memory_figures_have_thousands_separators_as_every_other_figure() -> None:
    # 'needs 6713.1 GiB per device' beside the advice's 'lower it to 1,312'
    figures = {"needed_gib": 6713.14, "batch": 8192, "basis": "traced step", "step_gib": 6712.1,
               "overhead_gib": 1.0, "runtime": "runtime", "memory_gib": 1024.0,
               "short_gib": 5689.1}
    reason = Rejection(offer(), RejectionKind.MEMORY, figures).reason
    assert reason.startswith("needs 6,713.1 GiB per device at batch 8,192 (traced step "
                             "6,712.1 GiB + 1.0 GiB runtime)")
    assert "has 1,024.0 GiB: 5,689.1 GiB short" in reason
    oom = Rejection(offer(), RejectionKind.MEMORY_PROBE_OOM, {
        "memory_gib": 1024.0, "batch": 16384, "probe_id": "p1", "failed_batch": 32768}).reason
    assert oom.startswith("needs more than 1,024.0 GiB per device at batch 16,384")
    assert "at batch 32,768" in oom
