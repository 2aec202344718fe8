"""The probed pair's own correction: alike reference workloads' misses on both devices move a
probe's transfer, unlike ones and other generations do not, and the probed device stays the
probe."""

from __future__ import annotations

import math
from typing import Any

import pytest

from advisor.errors import AdvisorError
from advisor.profiling.op_profile import OpMix, reference_op_mixes
from advisor.spec import Precision
from advisor.throughput._pair_shift import PairShift
from advisor.throughput.estimate import Measurement, WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.roofline import RooflinePrior
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
MIXES = reference_op_mixes()
BERT = MIXES["bert_base_squad/mixed"]
RESNET = MIXES["resnet50/mixed"]


def _shift(residuals: dict[str, dict[tuple[str, str], float]], mix: OpMix, *,
           precision_key: str = "mixed", prior: float = 0.0, **kwargs: Any) -> float:
    return PairShift(residuals, MIXES, **kwargs).shift(mix, precision_key, target="A",
                                                        probed="B", prior_shift=prior)


def test_an_alike_group_moves_the_shift_by_its_pair_difference() -> None:
    """BERT-large's mix is BERT-base's, nearly: its A/B miss (0.3 - 0.1) counts with weight
    about one against the prior's pseudo-count of one."""
    residuals = {"A": {("bert_large_squad/mixed", "g"): 0.3},
                 "B": {("bert_large_squad/mixed", "g"): 0.1}}
    weight = PairShift(residuals, MIXES).weights(BERT, "mixed", "A", "B")[
        ("bert_large_squad/mixed", "g")]
    assert 0.9 < weight <= 1.0
    assert _shift(residuals, BERT, prior=-0.1) == pytest.approx(
        (weight * 0.2 + 1.0 * -0.1) / (weight + 1.0))


def test_an_unlike_group_leaves_the_prior_shift() -> None:
    """ResNet-50's convolutions are nothing like BERT's matmuls: its pair difference does not
    count."""
    residuals = {"A": {("resnet50/mixed", "g"): 0.5}, "B": {("resnet50/mixed", "g"): 0.0}}
    assert _shift(residuals, BERT, prior=0.05) == pytest.approx(0.05, abs=1e-6)


@pytest.mark.parametrize(("on_a", "on_b"), [
    ({("bert_large_squad/mixed", "v1"): 0.4}, {("bert_large_squad/mixed", "v0"): 0.0}),
    # measured on A in one generation and on B in the other: no difference within one
    ({("bert_large_squad/mixed", "v1"): 0.4}, {}),   # not measured on B at all
])
def test_a_group_not_measured_on_both_in_one_generation_does_not_count(
        on_a: dict[tuple[str, str], float], on_b: dict[tuple[str, str], float]) -> None:
    assert _shift({"A": on_a, "B": on_b}, BERT, prior=0.02) == pytest.approx(0.02)


def test_a_group_of_the_other_precision_weighs_less() -> None:
    residuals = {"A": {("bert_base_squad/mixed", "g"): 0.2},
                 "B": {("bert_base_squad/mixed", "g"): 0.0}}
    same = _shift(residuals, BERT, precision_key="mixed")
    other = _shift(residuals, BERT, precision_key="fp32", precision_weight=0.3)
    assert same == pytest.approx(0.1)          # weight 1 (its own mix), pseudo-count 1
    assert other == pytest.approx(0.3 * 0.2 / 1.3)


@pytest.mark.parametrize("kwargs", [
    {"precision_weight": 1.5}, {"pseudo_count": 0.0}, {"width": -0.1},
])
def test_bad_settings_are_rejected_by_name(kwargs: dict[str, Any]) -> None:
    with pytest.raises(AdvisorError, match=next(iter(kwargs))):
        PairShift({}, MIXES, **kwargs)


def test_residuals_are_measured_per_generation() -> None:
    """The same model on one part in two generations, 10% apart: two residuals, log 1.1
    apart; a part only in the reference rows' second generation has only that one."""
    spec = SPECS["A100-80GB-SXM"]
    prior = RooflinePrior()
    roofline = prior.samples_per_second(RESNET, spec, batch_size=64, tf32=True)
    rows = [ReferenceRow("v0", "resnet50", "mixed", spec.name, 1, 64, roofline, "sample"),
            ReferenceRow("v1", "resnet50", "mixed", spec.name, 1, 64, 1.1 * roofline, "sample")]
    found = PairShift.from_reference(rows, SPECS, MIXES, prior).residuals[spec.name]
    assert found[("resnet50/mixed", "v0")] == pytest.approx(0.0, abs=1e-9)
    assert found[("resnet50/mixed", "v1")] == pytest.approx(math.log(1.1))


@pytest.fixture(scope="module")
def fitted() -> dict[str, object]:
    """A synthetic reference whose truth is the prior roofline at 80% on five parts, except
    that on the A10 BERT-base and -large run 25% faster than that and the other models
    without convolutions 20% slower (a pair interaction the per-device anchor cannot see
    when it weighs every reference model alike, ``kind_width`` wide: it then averages the
    two); fitted without BERT-large."""
    truth = RooflinePrior()
    parts = ["RTX-3090", "A10", "A40", "RTX-A6000", "A100-80GB-SXM"]
    rows = []
    for key, mix in sorted(MIXES.items()):
        model, _, precision = key.partition("/")
        for name in parts:
            boost = 1.0 if name != "A10" or model.startswith(("resnet50", "ssd")) else (
                1.25 if model.startswith("bert") else 0.8)
            sps = 0.8 * boost * truth.samples_per_second(mix, SPECS[name], batch_size=64,
                                                        tf32=True)
            rows.append(ReferenceRow("g", model, precision, name, 1, 64, sps, "sample"))
    train = [r for r in rows if r.model != "bert_large_squad"]
    truths = {r.accelerator: r.samples_per_second for r in rows
              if (r.model, r.precision) == ("bert_large_squad", "mixed")}
    models = {on: TransferModel(calibrate=False, kind_width=10.0, pair_shift=on).fit(
        train, accelerators=SPECS) for on in (True, False)}
    return {"truth": truths, "models": models}


def _features() -> WorkloadFeatures:
    return WorkloadFeatures(precision=Precision.FP16, name="bert_large_squad/mixed",
                            op_mix=MIXES["bert_large_squad/mixed"], batch_size_per_device=64)


def test_a_probe_moves_the_target_the_way_alike_models_pair_ratios_say(
        fitted: dict[str, object]) -> None:
    """A probe on the RTX-A6000 carried to the A10: BERT-base's A10/A6000 ratio, 25% above
    the roofline's, moves BERT-large's prediction toward its truth, about half the way from
    where the anchors alone leave it (one alike group against the pseudo-count of one)."""
    truth: dict[str, float] = fitted["truth"]  # type: ignore[assignment]
    models: dict[bool, TransferModel] = fitted["models"]  # type: ignore[assignment]
    shot = [Measurement("RTX-A6000", truth["RTX-A6000"], batch_size=64)]
    on, off = (models[flag].estimate(_features(), SPECS["A10"], measurements=shot)
               .samples_per_second for flag in (True, False))
    assert off < on < truth["A10"] * 1.01
    assert abs(math.log(on / truth["A10"])) < 0.6 * abs(math.log(off / truth["A10"]))


@pytest.mark.parametrize("flag", [True, False])
def test_the_probed_device_keeps_its_measurement(fitted: dict[str, object],
                                                 flag: bool) -> None:
    truth: dict[str, float] = fitted["truth"]  # type: ignore[assignment]
    models: dict[bool, TransferModel] = fitted["models"]  # type: ignore[assignment]
    shot = [Measurement("RTX-A6000", truth["RTX-A6000"], batch_size=64)]
    assert models[flag].estimate(_features(), SPECS["RTX-A6000"],
                                 measurements=shot).samples_per_second == truth["RTX-A6000"]


@pytest.mark.parametrize(("peers", "expected"), [
    (("RTX-3090", "A40", "RTX-A6000"), 0.2),   # three parts of its class ran the group
    (("RTX-3090", "A40"), 0.0),                # two: too few to regress, the prior shift
])
def test_a_part_with_no_rows_borrows_its_class_peers_residuals(
        peers: tuple[str, ...], expected: float) -> None:
    """The A10 has no residuals: with three Ampere parts that ran BERT-large 0.3 above the
    roofline (the probed V100, of another class, 0.1), it borrows 0.3, and the pair moves by
    0.2 with weight one against the prior's pseudo-count of one."""
    key = ("bert_large_squad/mixed", "g")
    residuals = {name: {key: 0.3} for name in peers} | {"V100-32GB-SXM2": {key: 0.1}}
    specs = {name: SPECS[name] for name in (*peers, "V100-32GB-SXM2")}
    shift = PairShift(residuals, MIXES, specs=specs).shift(
        MIXES["bert_large_squad/mixed"], "mixed", target="A10", probed="V100-32GB-SXM2",
        prior_shift=0.0, borrow={"A10": SPECS["A10"]})
    assert shift == pytest.approx(expected / 2, abs=1e-9)


def test_a_part_with_published_anchors_borrows_nothing() -> None:
    """The H200 has no reference rows but published figures, which speak for it: the probe's
    transfer there is the same with the pair shift on (its probe shrinkage set aside, see
    tests/advisor/test_probe_shrink.py) or off."""
    from advisor.throughput.published import load_published
    from advisor.throughput.reference import load_reference

    published = [r for r in load_published() if r.accelerator in SPECS]
    shot = [Measurement("H100-SXM", 2000.0)]
    features = WorkloadFeatures(precision=Precision.BF16, name="bert",
                                op_mix=MIXES["bert_base_squad/mixed"], batch_size_per_device=64)
    figures = []
    for on in (True, False):
        model = TransferModel(calibrate=False, pair_shift=on).fit(
            load_reference(), accelerators=SPECS, published=published).plain()
        roofline = model.roofline()
        shift = model._pair_shift(roofline) if roofline is not None else None
        if shift is not None:
            shift.shrinkage = None
        figures.append(model.estimate(features, SPECS["H200"],
                                      measurements=shot).samples_per_second)
    assert figures[0] == pytest.approx(figures[1], rel=1e-12)
