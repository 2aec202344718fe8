"""No-probe roofline bounds judged by the workload's novelty: held-out residuals weighted by
how alike their reference's distance to the nearest other model's operator mix is to the
workload's distance to the nearest reference (weighted split-conformal, issue 29)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.profiling import OpClass, OpCost, OpMix, reference_op_mixes
from advisor.throughput._calibration import conformal_bounds, weighted_conformal_half_width
from advisor.throughput._no_probe import (
    NoProbePrior,
    mix_distance,
    novelty_weights,
)

MIXES = reference_op_mixes()
# residual spread (log) per reference model, as its held-out misses: ResNet-like and BERT-like
# models are predicted well, the LSTM, the recommender and Transformer-XL poorly
SPREAD = {"resnet50": 0.08, "ssd": 0.10, "bert_base_squad": 0.12, "bert_large_squad": 0.14,
          "gnmt": 0.70, "ncf": 0.60, "transformerxlbase": 0.45, "transformerxllarge": 0.45}
# a workload that is all embedding lookups and reductions: like no reference model
UNUSUAL = OpMix(per_sample=(OpCost(OpClass.EMBEDDING, "float32", 1e6, 1e9),
                            OpCost(OpClass.REDUCTION, "float32", 1e8, 1e6)), per_step=())


def _residuals(spread: dict[str, float]) -> tuple[tuple[str, float], ...]:
    rng = np.random.default_rng(0)
    return tuple((group, float(rng.uniform(-1, 1) * spread[group.partition("/")[0]]))
                 for group in sorted(MIXES) for _ in range(15))


def _prior(spread: dict[str, float] = SPREAD) -> NoProbePrior:
    prior = NoProbePrior()
    prior.interval_coverage = 0.9
    prior.roofline_residuals_ = {"roofline": _residuals(spread)}
    return prior


def _pooled(prior: NoProbePrior) -> float:
    low, high = conformal_bounds([r for _, r in prior.roofline_residuals_["roofline"]], 0.9)
    return max(-low, high)


def test_equal_weights_give_the_plain_conformal_rank() -> None:
    scores = list(np.linspace(0.01, 1.0, 19))
    # (n + 1) * 0.9 = 18: the 18th smallest
    assert weighted_conformal_half_width(scores, [1.0] * 19, 0.9) == pytest.approx(scores[17])


def test_too_little_weight_alike_gives_no_finite_bound() -> None:
    assert math.isinf(weighted_conformal_half_width([0.1] * 30, [0.001] * 30, 0.9))


def test_a_score_without_weight_does_not_count() -> None:
    scores, weights = [0.1] * 20 + [5.0] * 20, [1.0] * 20 + [0.0] * 20
    assert weighted_conformal_half_width(scores, weights, 0.9) == pytest.approx(0.1)


@pytest.mark.parametrize(("weights", "coverage"), [
    ([1.0, -1.0], 0.9),  # a negative weight
    ([1.0], 0.9),  # one weight for two scores
    ([1.0, 1.0], 1.0),  # coverage not below one
])
def test_bad_weights_or_coverage_are_refused(weights: list[float], coverage: float) -> None:
    with pytest.raises(ValueError, match="weight|coverage"):
        weighted_conformal_half_width([0.1, 0.2], weights, coverage)


def test_a_mix_is_its_own_kind_and_unlike_another_kind() -> None:
    resnet = MIXES["resnet50/mixed"]
    # another convolutional network is nearer than a transformer
    assert mix_distance(resnet, MIXES["ssd/mixed"]) < mix_distance(resnet, MIXES["bert_base_squad/mixed"])
    assert mix_distance(MIXES["resnet50/mixed"], MIXES["resnet50/mixed"]) == 0.0
    assert 0.0 <= mix_distance(UNUSUAL, MIXES["ncf/mixed"]) <= 1.0


def test_a_workload_as_near_a_reference_as_the_references_are_to_each_other_takes_their_misses(
) -> None:
    # ResNet-50's own mix sits on a reference (novelty 0): the residuals that count are those
    # of references with a sibling as near (ResNet/SSD, the two BERTs, the Transformer-XLs),
    # not the pooled misses of every model
    prior = _prior()
    half = prior.mix_half_width(MIXES["resnet50/mixed"], "roofline", pooled=_pooled(prior))
    assert half is not None
    assert half < 0.75 * _pooled(prior)


def test_novelty_weights_favour_references_as_far_from_the_rest_as_the_workload() -> None:
    weights = novelty_weights(MIXES["resnet50/mixed"], MIXES)
    nearest = {g: min(mix_distance(MIXES[g], MIXES[o]) for o in MIXES
                      if o.partition("/")[0] != g.partition("/")[0]) for g in MIXES}
    # weights fall as a reference's novelty moves away from the workload's (0 here)
    ordered = sorted(MIXES, key=nearest.__getitem__)
    assert [weights[g] for g in ordered] == sorted(weights.values(), reverse=True)
    assert novelty_weights(UNUSUAL, {}) == {}


@pytest.mark.parametrize("group", ["bert_large_squad/fp32", "bert_base_squad/mixed"])
def test_an_encoder_takes_its_kinds_spread_and_some_of_its_neighbours(group: str) -> None:
    # A transformer encoder's mix is near the recommender's and Transformer-XL's (about 14% of
    # the weight it sees, past the 10% tail): its bound reaches into their misses, never to the
    # pooled bounds, and never below its own kind's
    prior = _prior()
    half = prior.mix_half_width(MIXES[group], "roofline", pooled=_pooled(prior))
    assert half is not None
    assert max(SPREAD["bert_base_squad"], SPREAD["bert_large_squad"]) * 0.7 <= half
    assert half < 0.75 * _pooled(prior)


def test_a_workload_unlike_all_gets_at_least_the_pooled_bounds() -> None:
    prior = _prior()
    half = prior.mix_half_width(UNUSUAL, "roofline", pooled=_pooled(prior))
    assert half is not None and half >= _pooled(prior)


def test_a_class_with_too_few_residuals_takes_the_cases() -> None:
    prior = _prior()
    prior.roofline_residuals_["roofline@simt"] = (("gnmt/fp32", 0.01),) * 5
    mix = MIXES["resnet50/mixed"]
    assert prior.mix_half_width(mix, "roofline@simt", pooled=1.0) == prior.mix_half_width(
        mix, "roofline", pooled=1.0)


def test_no_kept_residuals_leave_the_pooled_bounds() -> None:
    prior = NoProbePrior()
    prior.interval_coverage = 0.9
    assert prior.mix_half_width(MIXES["resnet50/mixed"], "roofline", pooled=0.5) is None


def test_the_unseen_case_is_never_narrower_than_the_seen_one() -> None:
    prior = _prior()
    prior.roofline_residuals_["roofline_unseen"] = _residuals(
        {m: s / 2 for m, s in SPREAD.items()})
    mix = MIXES["resnet50/mixed"]
    seen = prior.mix_half_width(mix, "roofline", pooled=_pooled(prior))
    unseen = prior.mix_half_width(mix, "roofline_unseen", pooled=_pooled(prior))
    assert seen is not None and unseen is not None and unseen >= seen


def test_a_roofline_case_of_a_workload_with_a_mix_takes_its_kinds_bounds() -> None:
    from advisor.throughput.estimate import WorkloadFeatures

    prior = _prior()
    quantiles = {"roofline": (-0.6, 0.6), "seen1": (-0.2, 0.25)}
    mix = MIXES["resnet50/mixed"]
    low, high = prior.no_probe_interval(WorkloadFeatures(None, op_mix=mix), "roofline",
                                        quantiles=quantiles, foreign_widening=2.0)
    assert high == -low == prior.mix_half_width(mix, "roofline", pooled=0.6)
    # no mix, or a case other than the roofline's: the case's bounds
    assert prior.no_probe_interval(WorkloadFeatures(None), "roofline", quantiles=quantiles,
                                   foreign_widening=2.0) == (-0.6, 0.6)
    assert prior.no_probe_interval(WorkloadFeatures(None, op_mix=mix), "seen1",
                                   quantiles=quantiles, foreign_widening=2.0) == (-0.2, 0.25)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    from advisor.throughput.model_cache import cached_transfer_model
    from pricing import load_accelerators

    return cached_transfer_model(load_accelerators())


@pytest.mark.parametrize(("target", "probed"), [
    ("H100-SXM", "A100-80GB-SXM"),  # a probe of the same architecture class
    ("H100-SXM", "V100-16GB-SXM2"),  # a probe of an older class (the transfer extrapolates)
    ("L4", "A10G"),  # a part with no reference rows
])
def test_a_probe_elsewhere_never_widens_a_workload_with_a_mix(model, target: str,  # type: ignore[no-untyped-def]
                                                             probed: str) -> None:
    from advisor.spec import Precision
    from advisor.throughput.estimate import Measurement, WorkloadFeatures
    from pricing import load_accelerators

    specs = load_accelerators()
    workload = WorkloadFeatures(Precision.BF16, flops_per_sample=3 * 8.18e9,
                                op_mix=MIXES["resnet50/mixed"], batch_size_per_device=256)
    before = model.estimate(workload, specs[target])
    after = model.estimate(workload, specs[target], measurements=[Measurement(probed, 900.0)])
    width = before.samples_per_second_high / before.samples_per_second_low
    assert after.samples_per_second_high / after.samples_per_second_low <= width * (1 + 1e-9)
