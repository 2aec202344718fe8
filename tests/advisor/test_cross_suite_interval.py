"""Cross-suite anchored parts carry the cross-suite rule's measured error (issue 27)."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import pytest
from builtin_features import BERT, RESNET, anchored_model

from advisor.throughput import TransferModel, WorkloadFeatures
from advisor.throughput._cross_suite_check import cross_suite_errors
from advisor.throughput.published import Stack, load_published
from pricing import load_accelerators

SPECS = load_accelerators()
ROWS = load_published()


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> TransferModel:
    return anchored_model(tmp_path_factory)


def _log_bounds(model: TransferModel, workload: WorkloadFeatures, name: str
                ) -> tuple[float, float]:
    estimate = model.estimate(workload, SPECS[name])
    return (math.log(estimate.samples_per_second_low / estimate.samples_per_second),
            math.log(estimate.samples_per_second_high / estimate.samples_per_second))


# -- the measured errors ---------------------------------------------------------------------

_FIGURES = {("w", Stack.VENDOR_TUNED, "mixed"): {
    "A": {"s1": 1.0}, "B": {"s2": 2.0}, "C": {"s3": 3.0},
    "X": {"sx": 2.5},  # a part with same-suite anchors elsewhere, alone in its suite here
    "Y": {"s1": 9.0},  # shares its only suite with A: nothing cross-suite to judge
}}
_HARNESS = {"A": 1.0, "B": 1.5, "C": 2.0}  # log factors 0, 0.5, 1.0


def _harness(part: str, precision: str) -> float | None:
    return _HARNESS.get(part) if precision == "mixed" else None


def test_each_reference_part_is_judged_against_the_others_mean_factor() -> None:
    errors = cross_suite_errors(_FIGURES, {"A", "B", "C"}, _harness,
                                lambda *_: None, precision="mixed")
    assert errors == {"w/vendor_tuned/mixed": pytest.approx([-0.75, 0.0, 0.75])}


def test_a_part_with_same_suite_anchors_is_judged_against_them() -> None:
    # X's figure over the mean factor (0.5): 2.0; its same-suite anchors say 1.8
    def same_suite(part: str, workload: str, precision: str, _: object) -> float | None:
        return 1.8 if (part, workload, precision) == ("X", "w", "mixed") else None

    errors = cross_suite_errors(_FIGURES, {"A", "B", "C"}, _harness, same_suite,
                                precision="mixed")
    assert errors["X"] == pytest.approx([0.2])
    assert "Y" not in errors


def test_nothing_is_judged_at_a_precision_the_step_does_not_run() -> None:
    assert cross_suite_errors(_FIGURES, {"A", "B", "C"}, _harness, lambda *_: None,
                              precision="fp32") == {}


# -- the intervals ---------------------------------------------------------------------------

@pytest.mark.parametrize("workload", [RESNET, BERT])
def test_a_cross_suite_only_part_is_at_least_as_wide_as_the_rule_s_measured_error(
        model: TransferModel, workload: WorkloadFeatures) -> None:
    half = model.cross_suite_half_width(workload, "mixed")
    assert half is not None and half > model.published_spread_
    low, high = _log_bounds(model, workload, "Trainium1")
    assert -low >= half and high >= half


def test_the_cross_suite_error_is_measured_on_gaudi_and_the_reference_parts(
        model: TransferModel) -> None:
    errors = model.cross_suite_check(RESNET, "mixed")
    assert "Gaudi" in errors  # its Habana table judged against its MLPerf ratios
    assert sum(len(v) for v in errors.values()) >= 10


def test_a_half_trusted_anchor_leaves_half_of_the_prior_s_width(model: TransferModel) -> None:
    # Trainium1's only anchors are BERT runs: for a ResNet step they are trusted at the
    # cross-kind weight, so the interval lies between the anchored one and the prior's
    anchor = (-0.3, 0.3)
    wide = model.published_bounds(RESNET, SPECS["Trainium1"], anchor, lambda _: (-3.0, 3.0))
    full = model.published_bounds(BERT, SPECS["Trainium1"], anchor, lambda _: (-3.0, 3.0))
    weight = model.published_cross_kind_weight
    assert wide[1] > 3.0 * (1 - weight)
    assert full[1] < 1.0  # fully trusted: no share of the prior


@pytest.mark.parametrize("name", ["Gaudi2", "L40S", "TPU-v4"])
def test_a_same_suite_anchored_part_keeps_the_ratio_s_spread(model: TransferModel,
                                                             name: str) -> None:
    anchor = (-0.3, 0.4)
    bounds = model.published_bounds(RESNET, SPECS[name], anchor, lambda _: (-3.0, 3.0))
    spread = model.published_spread_
    assert bounds == pytest.approx((-math.hypot(0.3, spread), math.hypot(0.4, spread)))


def test_a_cross_suite_part_unchecked_on_the_step_keeps_the_prior_s_width(
        model: TransferModel) -> None:
    unchecked = copy.copy(model)
    unchecked.cross_suite_figures_ = {}
    bounds = unchecked.published_bounds(BERT, SPECS["Trainium1"], (-0.3, 0.3),
                                        lambda _: (-2.0, 2.0))
    assert bounds == pytest.approx((-2.0, 2.0))


@pytest.mark.parametrize("workload", [RESNET, BERT])
def test_adding_a_same_suite_figure_never_widens_the_interval(model: TransferModel,
                                                              workload: WorkloadFeatures
                                                              ) -> None:
    trainium = next(r for r in ROWS if r.accelerator == "Trainium1" and r.chips == 16)
    a100 = next(r for r in ROWS if r.accelerator == "A100-80GB-SXM"
                and r.workload == trainium.workload and r.stack is trainium.stack
                and r.precision in ("fp16", "bf16"))
    suite = "one_suite_for_both"
    anchored = copy.copy(model).anchor_to(
        [*ROWS, replace(trainium, suite=suite), replace(a100, suite=suite)])
    assert not any(a.cross_suite for a in anchored.anchors_["Trainium1"])
    before, after = _log_bounds(model, workload, "Trainium1"), _log_bounds(anchored, workload,
                                                                           "Trainium1")
    assert after[1] - after[0] <= before[1] - before[0] + 1e-9
