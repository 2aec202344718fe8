"""Interval terms of issue 29 that rest on groups, not rows: the software-stack spread (how far
one workload moves when only its stack changes) and the N-device scaling bounds, conformal
over reference workloads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.throughput._calibration import (
    grouped_conformal_half_width,
    stack_half_width,
    stack_shifts,
)
from advisor.throughput.published import PublishedRow, Stack, ThroughputUnit
from advisor.throughput.reference import ReferenceRow


def _row(generation: str, model: str, precision: str, accelerator: str, count: int,
         sps: float) -> ReferenceRow:
    return ReferenceRow(generation, model, precision, accelerator, count, 32, sps, "sample")


def _published(accelerator: str, chips: int, precision: str, per_chip: float, *,
               stack: Stack = Stack.VENDOR_TUNED, suite: str = "vendor_readme") -> PublishedRow:
    return PublishedRow(line=2, accelerator=accelerator, chips=chips, workload="resnet50",
                        precision=precision, batch_per_chip=256, framework="PyTorch",
                        stack=stack, suite=suite, value=per_chip * chips,
                        unit=ThroughputUnit.IMAGES_PER_SECOND,
                        samples_per_second_per_chip=per_chip, source="test",
                        captured="2026-11-26", notes="")


REFERENCE = [
    _row("v0", "resnet50", "mixed", "A100", 1, 1000.0),
    _row("v1", "resnet50", "mixed", "A100", 1, 1100.0),
    _row("v0", "resnet50", "mixed", "V100", 1, 500.0),
    _row("v1", "resnet50", "mixed", "V100", 1, 600.0),
    _row("v0", "resnet50", "mixed", "A100", 8, 7200.0),  # only one generation: no pair
]


def test_generations_of_the_reference_are_two_stacks() -> None:
    shifts = stack_shifts(REFERENCE)
    # one group per pair of stacks, model and precision: the median over its cells
    assert shifts == {"v0>v1/resnet50/mixed": pytest.approx(
        float(np.median([math.log(1.1), math.log(1.2)])))}


@pytest.mark.parametrize(("precision", "chips", "group", "ratio"), [
    ("bf16", 1, "v0>vendor_readme/resnet50/mixed", 1.5),  # bf16 is the table's mixed
    ("tf32", 8, None, None),  # the table has no fp32 row on 8 devices: nothing to pair
])
def test_a_published_suite_is_paired_with_each_generation_on_the_same_cell(
        precision: str, chips: int, group: str | None, ratio: float | None) -> None:
    shifts = stack_shifts(REFERENCE, [_published("A100", chips, precision, 1500.0)])
    published = {g: v for g, v in shifts.items() if "vendor_readme" in g}
    if group is None:
        assert not published
    else:
        assert published[group] == pytest.approx(math.log(ratio))


def test_mlperf_submissions_are_not_a_users_stack() -> None:
    mlperf = _published("A100", 1, "fp16", 3000.0, stack=Stack.MLPERF_TUNED, suite="v1.0")
    assert stack_shifts(REFERENCE, [mlperf]) == stack_shifts(REFERENCE)


def test_the_stack_half_width_is_the_conformal_quantile_of_the_shifts_size() -> None:
    shifts = {f"g{i}": (-1) ** i * 0.01 * i for i in range(1, 21)}  # sizes 0.01 .. 0.20
    # rank ceil(21 x 0.9) = 19 of 20: the sign does not matter
    assert stack_half_width(shifts, 0.9) == pytest.approx(0.19)
    assert stack_half_width({}, 0.9) == 0.0


def test_grouped_half_width_counts_groups_not_rows() -> None:
    # ten workloads' scores, one of them fifty rows far out: one group of ten, past the
    # 90% level with the finite-sample correction (0.9 x 11 / 10 = 0.99), so the far group
    rng = np.random.default_rng(2)
    groups = {f"w{i}": list(np.abs(rng.normal(0, 0.02, 10))) for i in range(9)}
    groups["bad"] = [0.5] * 50
    assert grouped_conformal_half_width(groups, 0.9) == pytest.approx(0.5)
    assert grouped_conformal_half_width(groups | {"bad": [0.5]}, 0.9) == pytest.approx(0.5)


def test_one_score_pays_the_finite_sample_correction_once() -> None:
    # forty groups of one residual each: a bound per tail sits at rank ceil(0.95 x 41) = 39 of
    # 40 on its side (the 97.4th percentile), the |residual| score's half-width at rank
    # ceil(0.9 x 41) = 37 of the scores (the 92.3rd)
    rng = np.random.default_rng(3)
    residuals = rng.normal(0, 0.1, 40)
    groups = {f"w{i}": [abs(float(r))] for i, r in enumerate(residuals)}
    half = grouped_conformal_half_width(groups, 0.9)
    assert half == sorted(abs(residuals))[math.ceil(0.9 * 41) - 1]
    rank = math.ceil(0.95 * 41)
    per_tail = max(sorted(residuals)[rank - 1], -sorted(residuals)[40 - rank])
    assert half < per_tail


def test_grouped_half_width_needs_a_score() -> None:
    with pytest.raises(ValueError, match="at least one score"):
        grouped_conformal_half_width({"w": []}, 0.9)
