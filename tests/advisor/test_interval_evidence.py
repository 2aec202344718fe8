"""Intervals rest on their evidence: a probe's own interval where measured, N devices adding
only the scaling efficiency's spread and never beating N times one device, and evidence
never widening an offer's interval (issue 29)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.spec import Precision
from advisor.throughput.estimate import Basis, Measurement, WorkloadFeatures
from advisor.throughput.model_cache import cached_transfer_model
from pricing import load_accelerators

SPECS = load_accelerators()
RESNET = WorkloadFeatures(precision=Precision.BF16, flops_per_sample=3 * 8.18e9, name="r50",
                          conv_flops_fraction=0.99, params=25_557_032)
TRAINING = sorted(name for name, spec in SPECS.items() if spec.training)


@pytest.fixture(scope="module")
def model():  # type: ignore[no-untyped-def]
    return cached_transfer_model(SPECS)


def _width(estimate) -> float:  # type: ignore[no-untyped-def]
    return estimate.samples_per_second_high / estimate.samples_per_second_low


def test_a_measured_device_has_the_probes_own_interval(model) -> None:  # type: ignore[no-untyped-def]
    probe = Measurement("H200", 2423.0, rel_halfwidth=0.001)
    one = model.estimate(RESNET, SPECS["H200"], measurements=[probe])
    assert one.basis is Basis.MEASURED
    assert one.samples_per_second_high <= 2423.0 * 1.001 + 1e-9
    assert one.samples_per_second_low >= 2423.0 / 1.001 - 1e-9


@pytest.mark.parametrize("count", [2, 4, 8])
def test_n_devices_never_beat_n_times_the_measured_one(model, count: int) -> None:  # type: ignore[no-untyped-def]
    probe = Measurement("H200", 2423.0, rel_halfwidth=0.001)
    many = model.estimate(RESNET, SPECS["H200"], count=count, measurements=[probe])
    assert many.basis is Basis.MEASURED
    assert many.samples_per_second_high <= count * 2423.0 * 1.01
    # narrower than the same count predicted from another accelerator's probe
    other = model.estimate(RESNET, SPECS["H100-SXM"], count=count, measurements=[probe])
    assert other.basis is Basis.PREDICTED and _width(many) < _width(other)


def test_a_probe_without_its_own_spread_keeps_the_usual_one(model) -> None:  # type: ignore[no-untyped-def]
    one = model.estimate(RESNET, SPECS["A10G"], measurements=[Measurement("A10G", 500.0)])
    assert math.log(one.samples_per_second_high / 500.0) == pytest.approx(0.03)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(TRAINING), count=st.sampled_from([1, 2, 4, 8, 16]),
       measured=st.floats(min_value=50.0, max_value=20_000.0),
       halfwidth=st.one_of(st.none(), st.floats(min_value=0.0, max_value=0.2)))
def test_evidence_for_an_offer_never_widens_its_interval(model, target: str, count: int,  # type: ignore[no-untyped-def]
                                                        measured: float,
                                                        halfwidth: float | None) -> None:
    spec = SPECS[target]
    before = model.estimate(RESNET, spec, count=count)
    after = model.estimate(RESNET, spec, count=count,
                           measurements=[Measurement(target, measured, rel_halfwidth=halfwidth)])
    assert _width(after) <= _width(before) * (1 + 1e-9)


def test_no_probe_roofline_predictions_carry_their_own_held_out_bounds(model) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from advisor.profiling import reference_op_mixes
    from advisor.throughput._no_probe import roofline_case

    case = roofline_case("roofline", SPECS["H100-SXM"])
    assert case == "roofline@tc-bf16"
    low, high = model.residual_quantiles_[case]  # Ampere and newer: their own bounds
    assert low == -high  # symmetric: held-out models say nothing of a new one's sign
    # no comparison with the FLOPs prior's bounds: those are held out over the three models
    # with a FLOPs figure, these over the eight with an operator mix (GNMT, NCF and
    # Transformer-XL held out miss by up to a factor of two), so either may be the wider
    with_ops = replace(RESNET, op_mix=reference_op_mixes()["resnet50/mixed"],
                       batch_size_per_device=256)
    est = model.estimate(with_ops, SPECS["H100-SXM"])
    assert est.basis is Basis.PREDICTED
    # judged by its kind's held-out misses (ResNet-like: SSD's and ResNet-50's), within the
    # class's pooled bounds (test_calibration_kind.py)
    kind_low, kind_high = model.no_probe_interval(with_ops, case,
                                                  quantiles=model.residual_quantiles_,
                                                  foreign_widening=model.foreign_widening)
    assert kind_high - kind_low <= high - low
    # a user's step runs in a stack of its own: at least the stack-to-stack spread either way
    floor = model.stack_half_width_
    assert 0 < floor < 1
    assert math.log(_width(est)) == pytest.approx(max(kind_high, floor) - min(kind_low, -floor))
    # the reference row's own workload runs in the reference stack: its kind's bounds alone
    reference = model.estimate(replace(with_ops, reference_stack=True), SPECS["H100-SXM"])
    assert math.log(_width(reference)) == pytest.approx(kind_high - kind_low)


# the same workload with its batch: the scaling efficiency knows its communication load
RESNET_BATCHED = WorkloadFeatures(precision=Precision.BF16, flops_per_sample=3 * 8.18e9,
                                  name="r50", conv_flops_fraction=0.99, params=25_557_032,
                                  batch_size_per_device=256)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=st.sampled_from(TRAINING), count=st.sampled_from([2, 4, 8, 16]),
       measured=st.floats(min_value=50.0, max_value=20_000.0),
       halfwidth=st.one_of(st.none(), st.floats(min_value=0.0, max_value=0.2)))
def test_evidence_never_widens_an_interval_whose_load_is_known(model, target: str, count: int,  # type: ignore[no-untyped-def]
                                                              measured: float,
                                                              halfwidth: float | None) -> None:
    spec = SPECS[target]
    before = model.estimate(RESNET_BATCHED, spec, count=count)
    after = model.estimate(RESNET_BATCHED, spec, count=count,
                           measurements=[Measurement(target, measured, rel_halfwidth=halfwidth)])
    assert _width(after) <= _width(before) * (1 + 1e-9)
    most = count * measured * (1 + halfwidth if halfwidth is not None else math.exp(0.03))
    assert after.samples_per_second_high <= most * (1 + 1e-9)  # never above N x the probe


def test_a_heavier_communication_load_keeps_less_of_n_devices(model) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    probe = Measurement("RTX-A6000", 500.0, rel_halfwidth=0.01)  # pcie: loads matter most
    light = model.estimate(RESNET_BATCHED, SPECS["RTX-A6000"], count=8, measurements=[probe])
    heavy = model.estimate(replace(RESNET_BATCHED, params=340_000_000), SPECS["RTX-A6000"],
                           count=8, measurements=[probe])
    assert heavy.samples_per_second < light.samples_per_second
    assert max(light.samples_per_second_high, heavy.samples_per_second_high) <= 8 * 500.0 * 1.01


def test_a_part_with_no_reference_rows_takes_the_held_out_bounds_of_its_class(model) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from advisor.profiling import reference_op_mixes

    with_ops = replace(RESNET, op_mix=reference_op_mixes()["resnet50/mixed"],
                       batch_size_per_device=256)
    est = model.estimate(with_ops, SPECS["GH200"])  # no reference rows, nothing published
    assert est.basis is Basis.PRIOR
    low, high = model.no_probe_interval(with_ops, "roofline_unseen@tc-bf16",
                                        quantiles=model.residual_quantiles_,
                                        foreign_widening=model.foreign_widening)
    floor = model.stack_half_width_  # its kind's unseen bounds, at least the stack spread
    assert math.log(_width(est)) == pytest.approx(max(high, floor) - min(low, -floor))
    seen_low, seen_high = model.no_probe_interval(with_ops, "roofline@tc-bf16",
                                                  quantiles=model.residual_quantiles_,
                                                  foreign_widening=model.foreign_widening)
    assert high - low >= seen_high - seen_low  # never narrower than a part with rows


def test_every_reference_model_with_an_operator_mix_is_predicted_with_no_probe(model) -> None:  # type: ignore[no-untyped-def]
    # the held-out benchmark (bench_ranges.py) judges the no-probe intervals on all of them,
    # not only the three with a FLOPs figure: the operator roofline needs the mix alone
    from advisor.profiling import reference_op_mixes
    from advisor.throughput.reference import REFERENCE_FLOPS_PER_SAMPLE, load_reference

    mixed = {group.partition("/")[0] for group in reference_op_mixes()}
    assert mixed - set(REFERENCE_FLOPS_PER_SAMPLE)  # some have a mix and no FLOPs figure
    rows = {r.model: r for r in load_reference()
            if r.model in mixed and r.accelerator_count == 1 and r.accelerator in SPECS}
    assert set(rows) == mixed
    predicted = model.predict(list(rows.values()))
    assert all(math.isfinite(p) and p > 0 for p in predicted)
