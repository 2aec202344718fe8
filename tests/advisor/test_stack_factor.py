"""The anchor's own stack factor carries a published ratio to the harness (issue 27)."""

from __future__ import annotations

import math

import pytest

from advisor.throughput._published_anchor import PublishedAnchor, published_figures
from advisor.throughput._stack_factor import StackFactors
from advisor.throughput.published import PublishedRow, Stack, ThroughputUnit

MLPERF = Stack.MLPERF_TUNED
# harness predictions (samples/s) of the user's step on the parts with reference rows
HARNESS = {"V100": 100.0, "A100": 200.0, "H100": 400.0}


def _harness(name: str, precision: str) -> float | None:
    return math.log(HARNESS[name]) if name in HARNESS and precision == "mixed" else None


def _row(accelerator: str, workload: str, precision: str, per_chip: float,
         suite: str = "mlperf_training_v1.0") -> PublishedRow:
    return PublishedRow(line=2, accelerator=accelerator, chips=1, workload=workload,
                        precision=precision, batch_per_chip=None, framework="f", stack=MLPERF,
                        suite=suite, value=per_chip, unit=ThroughputUnit.IMAGES_PER_SECOND,
                        samples_per_second_per_chip=per_chip, source="s", captured="2024",
                        notes="")


ROWS = [
    _row("V100", "resnet50", "fp16", 150.0),  # factor 1.5
    _row("A100", "resnet50", "fp16", 600.0),  # factor 3
    _row("H100", "resnet50", "fp16", 1200.0),  # factor 3
    _row("A100", "bert_large_mlperf", "fp16", 600.0),  # factor 3 at half width
    _row("H100", "bert_large_mlperf", "fp8", 1800.0),  # factor 4.5 at fp8: fp8 buys 1.5x
    _row("TPU", "gpt3_175b_mlperf", "bf16", 100.0, "mlperf_training_v4.0"),
    _row("TPU", "gpt3_175b_mlperf", "int8", 110.0, "mlperf_training_v4.1"),  # int8 buys 1.1x
]
FACTORS = StackFactors(published_figures(ROWS), frozenset(HARNESS))


def _anchor(anchor: str, workload: str, groups: tuple[tuple[str, str], ...]) -> PublishedAnchor:
    return PublishedAnchor("P", anchor, workload, MLPERF, "mixed", 0.0, ("s",), ("f",), True,
                           groups)


def test_an_anchor_s_factor_is_set_against_the_typical_part_s() -> None:
    # V100 1.5 against the geometric mean of 1.5, 3 and 3
    typical = (1.5 * 3 * 3) ** (1 / 3)
    assert math.exp(FACTORS.relative("V100", "resnet50", MLPERF, "mixed", _harness)) == (
        pytest.approx(1.5 / typical))


def test_a_part_with_no_harness_prediction_has_no_factor() -> None:
    assert FACTORS.relative("TPU", "gpt3_175b_mlperf", MLPERF, "int8", _harness) == 0.0


def test_a_ratio_to_a_slow_stack_part_is_lowered_for_another_vendor() -> None:
    offset = FACTORS.offset(_anchor("V100", "resnet50", (("mixed", "mixed"),)), _harness,
                            sibling=False)
    assert offset < 0


def test_a_sibling_of_the_anchor_keeps_the_published_ratio() -> None:
    assert FACTORS.offset(_anchor("V100", "resnet50", (("mixed", "mixed"),)), _harness,
                          sibling=True) == 0.0


@pytest.mark.parametrize(("group", "gain"), [
    ("fp8", 1.5),  # the H100's fp8 factor over the A100's fp16 one on BERT
    ("int8", 1.1),  # the TPU's own int8 figure over its bf16 one on GPT-3
    ("mixed", 1.0),
])
def test_a_precision_s_gain_is_measured_where_the_stack_published_both(group: str,
                                                                      gain: float) -> None:
    assert math.exp(FACTORS.gain(MLPERF, group, _harness)) == pytest.approx(gain)


def test_an_int8_part_beside_an_fp8_anchor_is_carried_by_the_gains_gap() -> None:
    anchor = _anchor("H100", "gpt3_175b_mlperf", (("int8", "fp8"),))
    assert math.exp(FACTORS.offset(anchor, _harness, sibling=False)) == pytest.approx(1.5 / 1.1)


def test_the_factor_rises_with_the_harness_speed_inside_a_group() -> None:
    # resnet50: V100 1.5 at 100, A100 and H100 3 at 200 and 400 samples/s
    assert FACTORS.slope(_harness) > 0


def _cousin_harness(prior: float):  # noqa: ANN202
    def harness(name: str, precision: str) -> float | None:
        return math.log(prior) if name == "P" else _harness(name, precision)
    return harness


@pytest.mark.parametrize(("prior", "kept"), [
    (60.0, 60.0),  # between the sibling's 40 and the trend's 86 (b = 0.5): the prior
    (30.0, 40.0),  # below the sibling's ratio: the sibling's
    (1000.0, None),  # above the trend's: the trend's
])
def test_a_cousin_s_prior_is_kept_between_the_sibling_and_the_trend(prior: float,
                                                                     kept: float | None) -> None:
    anchor = PublishedAnchor("P", "H100", "resnet50", MLPERF, "mixed", math.log(0.1), ("s",),
                             ("f",), True, (("mixed", "mixed"),))
    harness = _cousin_harness(prior)
    carried = math.log(0.1) + FACTORS.offset(anchor, harness, sibling=False, cousin="P")
    b = FACTORS.slope(harness)
    trend = 400.0 * 0.1 ** (1 / (1 + b))
    assert math.exp(carried) * 400.0 == pytest.approx(trend if kept is None else kept)
