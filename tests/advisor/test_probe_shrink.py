"""The probe's shrinkage: how much of one probe's no-probe miss carries to another part, from
how the reference models' held-out misses on two parts move together; the transfer gives
the rest back, and the probed part keeps its measurement."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from advisor.errors import AdvisorError
from advisor.profiling.op_profile import reference_op_mixes
from advisor.spec import Precision
from advisor.throughput._op_transfer import OpTransfer
from advisor.throughput._pair_shift import PairShift
from advisor.throughput._probe_shrink import (
    MIN_PAIRS,
    ProbeShrinkage,
    held_out_misses,
    spec_distance,
    stack_variance,
)
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.roofline import AnchoredRoofline, RooflinePrior, RooflineSample
from pricing import load_accelerators

SPECS = load_accelerators()
MIXES = reference_op_mixes()
AMPERE = ("A100-80GB-SXM", "A40", "RTX-A6000", "A10", "RTX-3090")
VOLTA = ("V100-32GB-SXM2", "V100-16GB-SXM2", "Quadro-RTX-8000", "RTX-2080Ti")


def _misses(parts: tuple[str, ...], per_group: dict[str, dict[str, float]],
            ) -> dict[tuple[str, str, str], float]:
    return {(group, "g", name): found[name] for group, found in per_group.items()
            for name in parts}


def _groups(rule: dict[str, float], n: int = 12) -> dict[str, dict[str, float]]:
    """``n`` groups whose miss on a part is the rule's value times +-1 (by group)."""
    return {f"m{i}/mixed": {name: (1 if i % 2 else -1) * value for name, value in rule.items()}
            for i in range(n)}


@pytest.mark.parametrize(("on_first", "on_second", "beta"), [
    (0.2, 0.2, 1.0),   # the misses move one for one: carry the whole miss
    (0.1, 0.2, 0.5),   # A misses half of what B misses: carry half
    (-0.2, 0.2, 0.0),  # opposite misses: clipped at zero, carry nothing
    (0.4, 0.2, 1.0),   # more than one for one: clipped at one
])
def test_beta_is_the_least_squares_share_of_the_probed_miss(
        on_first: float, on_second: float, beta: float) -> None:
    """An Ampere part's misses regressed on a Volta part's (through zero)."""
    first, second = AMPERE[0], VOLTA[0]
    shrinkage = ProbeShrinkage(_misses((first, second), _groups(
        {first: on_first, second: on_second}, n=2 * MIN_PAIRS)), SPECS)
    assert shrinkage.beta(SPECS[first], SPECS[second]) == pytest.approx(beta)


def test_a_class_pair_with_too_little_evidence_takes_the_vendors_pooled_beta() -> None:
    """Plenty of Ampere pairs (misses one for one) and a single Volta part (no Volta-Volta
    pair): Volta <- Volta takes the NVIDIA line pooled over every pair, at its distance."""
    rule = {name: 0.2 for name in AMPERE} | {VOLTA[0]: 0.0}
    shrinkage = ProbeShrinkage(_misses((*AMPERE, VOLTA[0]), _groups(rule)), SPECS)
    level, slope = shrinkage.lines[("NVIDIA", None, None)]
    pooled = level + slope * (spec_distance(SPECS[VOLTA[1]], SPECS[VOLTA[2]]) or 0.0)
    assert ("NVIDIA", (True, False), (True, False)) not in shrinkage.levels
    assert shrinkage.beta(SPECS[AMPERE[0]], SPECS[AMPERE[1]]) == pytest.approx(1.0)
    assert shrinkage.beta(SPECS[VOLTA[1]], SPECS[VOLTA[2]]) == pytest.approx(pooled)
    assert 0.0 < pooled < 1.0


def test_no_evidence_keeps_the_whole_miss_and_the_probed_part_is_itself() -> None:
    shrinkage = ProbeShrinkage(_misses(AMPERE[:2], _groups({n: 0.1 for n in AMPERE[:2]}, n=2)),
                               SPECS)
    assert shrinkage.beta(SPECS[AMPERE[0]], SPECS[AMPERE[1]]) == 1.0   # too few pairs
    other = next(spec for spec in SPECS.values() if spec.vendor != SPECS[AMPERE[0]].vendor)
    assert shrinkage.beta(other, replace(other, name=f"{other.name}-twin")) == 1.0
    assert ProbeShrinkage({}, SPECS).beta(SPECS[AMPERE[0]], SPECS[AMPERE[0]]) == 1.0


def test_a_miss_that_is_not_a_number_is_rejected() -> None:
    with pytest.raises(AdvisorError, match="bert"):
        ProbeShrinkage({("bert/mixed", "g", AMPERE[0]): math.nan}, SPECS)


def test_held_out_misses_never_fit_on_the_model_they_judge() -> None:
    """Each model's residuals come from a refit that saw none of its samples."""
    truth = RooflinePrior()
    rows = [ReferenceRow("g", model, precision, name, 1, 32,
                         truth.samples_per_second(mix, SPECS[name], batch_size=32, tf32=True),
                         "sample")
            for key, mix in sorted(MIXES.items())
            for model, _, precision in [key.partition("/")] for name in AMPERE]
    seen: list[set[str]] = []

    def refit(samples: list[RooflineSample]) -> AnchoredRoofline:
        seen.append({s.group.partition("/")[0] for s in samples})
        return AnchoredRoofline(conv_fractions={}).fit(samples)

    misses = held_out_misses(rows, SPECS, MIXES, refit)
    models = {key.partition("/")[0] for key in MIXES}
    assert len(seen) == len(models)
    assert all(len(fit) == len(models) - 1 for fit in seen)
    assert {group.partition("/")[0] for group, _, _ in misses} == models
    assert {name for _, _, name in misses} == set(AMPERE)


PARTS = (*AMPERE, VOLTA[0])


def _transfer(on_ampere: float) -> tuple[OpTransfer, OpTransfer]:
    """(with, without) the shrinkage learned from misses of ``on_ampere`` on every Ampere
    part where the Volta part, the probed one, misses by 0.2."""
    mix = MIXES["bert_base_squad/mixed"]
    samples = [RooflineSample(mix, 32, SPECS[name], True, 100.0, group="bert_base_squad/mixed")
               for name in PARTS]
    roofline = AnchoredRoofline(conv_fractions={}).fit(samples)
    rule = {name: on_ampere for name in AMPERE} | {VOLTA[0]: 0.2}
    shrinkage = ProbeShrinkage(_misses(PARTS, _groups(rule, n=2 * MIN_PAIRS)), SPECS)
    return (OpTransfer(roofline, pair_shift=PairShift({}, MIXES, shrinkage=shrinkage)),
            OpTransfer(roofline, pair_shift=PairShift({}, MIXES)))


def _carried(transfer: OpTransfer, probe_log_sps: float, target: str = AMPERE[0]) -> float:
    return transfer.predict_log(
        MIXES["bert_base_squad/mixed"], probed=SPECS[VOLTA[0]], probed_log_sps=probe_log_sps,
        target=SPECS[target], batch_size=32, precision=Precision.FP16,
        corrections=(0.05, -0.02))


def test_beta_zero_leaves_the_no_probe_figure_whatever_the_probe() -> None:
    """Misses on A and B unrelated (opposite): the probe says nothing about A, so A's figure
    is its no-probe one (bare roofline plus its correction) for any probe."""
    shrunk, _ = _transfer(-0.2)
    assert shrunk.pair_shift is not None and shrunk.pair_shift.shrinkage is not None
    assert shrunk.pair_shift.shrinkage.beta(SPECS[AMPERE[0]], SPECS[VOLTA[0]]) == 0.0
    bare = shrunk.roofline.roofline_.samples_per_second(
        MIXES["bert_base_squad/mixed"], SPECS[AMPERE[0]], batch_size=32, tf32=False)
    for probe in (math.log(50.0), math.log(500.0)):
        assert _carried(shrunk, probe) == pytest.approx(math.log(bare) + 0.05, abs=2e-3)


def test_beta_one_is_the_whole_miss_and_half_is_halfway() -> None:
    """With beta 1 the transfer is the one before the shrinkage; with beta 1/2 halfway
    between it and the no-probe figure, in log."""
    same, whole = _transfer(0.2)
    half, _ = _transfer(0.1)
    never, _ = _transfer(-0.2)
    for probe in (math.log(50.0), math.log(500.0)):
        assert _carried(same, probe) == pytest.approx(_carried(whole, probe))
        assert _carried(half, probe) == pytest.approx(
            (_carried(whole, probe) + _carried(never, probe)) / 2)


def test_the_probed_part_keeps_its_measurement_under_shrinkage() -> None:
    shrunk, _ = _transfer(-0.2)
    assert _carried(shrunk, math.log(123.0), target=VOLTA[0]) == math.log(123.0)


def test_near_parts_carry_more_of_the_miss_than_far_ones() -> None:
    """Two A100 40 GB parts (one datasheet: distance zero) miss alike on every group, the A10
    (far from both) misses independently of them: the line through the class pair's terms
    carries the whole miss between the twins and none from the A10."""
    twins, far = ("A100-40GB-PCIe", "A100-40GB-SXM"), "A10"
    misses = {}
    for i in range(4 * MIN_PAIRS):
        shared, own = (0.2 if i % 2 else -0.2), (0.2 if (i // 2) % 2 else -0.2)
        misses |= {(f"m{i}/mixed", "g", name): shared for name in twins}
        misses[(f"m{i}/mixed", "g", far)] = own
    shrinkage = ProbeShrinkage(misses, SPECS)
    assert shrinkage.beta(SPECS[twins[0]], SPECS[twins[1]]) == pytest.approx(1.0)
    assert shrinkage.beta(SPECS[twins[0]], SPECS[far]) == pytest.approx(0.0, abs=1e-9)
    # the class pair's share whatever the distance: the twins' pairs carry all, the A10's none
    assert shrinkage.levels[("NVIDIA", (True, True), (True, True))] == pytest.approx(1 / 3)


def test_a_user_stacks_shared_miss_moves_beta_toward_one() -> None:
    """A step in a stack of its own misses by the stack's shift on every part alike: added
    to both the covariance and the probed miss's variance. Unrelated misses (beta 0) of
    variance 0.04 with a stack variance of 0.04: half the miss carries."""
    rule = {AMPERE[0]: -0.2, VOLTA[0]: 0.2}
    misses = _misses((AMPERE[0], VOLTA[0]), _groups(rule, n=2 * MIN_PAIRS))
    blind = ProbeShrinkage(misses, SPECS)
    aware = ProbeShrinkage(misses, SPECS, stack_variance=0.04)
    assert blind.beta(SPECS[AMPERE[0]], SPECS[VOLTA[0]]) == 0.0
    assert aware.beta(SPECS[AMPERE[0]], SPECS[VOLTA[0]]) == pytest.approx(0.5)
    assert stack_variance([0.1, -0.3]) == pytest.approx(0.05)
    assert stack_variance([]) == 0.0


@pytest.mark.parametrize("bad", [-0.01, math.inf, math.nan])
def test_a_bad_stack_variance_is_rejected_by_name(bad: float) -> None:
    with pytest.raises(AdvisorError, match="stack_variance"):
        ProbeShrinkage({}, SPECS, stack_variance=bad)
