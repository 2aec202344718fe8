"""TransferModel: probes win, transfer from similar workloads, honest intervals, caching."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.spec import Precision
from advisor.throughput._calibration import interval, residual_case
from advisor.throughput._plain import _split_precision
from advisor.throughput._table import split_precision
from advisor.throughput.estimate import Basis, Measurement, WorkloadFeatures
from advisor.throughput.model_cache import cached_transfer_model
from advisor.throughput.reference import ReferenceRow, load_reference
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
RESNET = WorkloadFeatures(precision=Precision.BF16, flops_per_sample=3 * 8.18e9, name="r50")


@pytest.fixture(scope="module")
def model() -> TransferModel:
    return TransferModel().fit(load_reference(), accelerators=SPECS)


def _row(model_name: str, accelerator: str, sps: float) -> ReferenceRow:
    return ReferenceRow("g", model_name, "mixed", accelerator, 1, 1, sps, "sample")


def test_fit_returns_self_and_learns_residual_quantiles(model: TransferModel) -> None:
    assert {"seen1", "seen3", "unseen3", "prior"} <= set(model.residual_quantiles_)
    low, high = model.residual_quantiles_["seen3"]
    assert low < 0 < high


def test_targets_unlike_every_probe_are_calibrated_apart_and_wider(model: TransferModel) -> None:
    """A target whose architecture class (tensor cores, bf16) none of the probes has is
    extrapolated; its held-out residuals are a case of their own, and wider."""
    q = model.residual_quantiles_
    assert {"seen3_unlike", "unseen3_unlike"} <= set(q)
    for case in ("seen3", "unseen3"):
        assert q[f"{case}_unlike"][1] - q[f"{case}_unlike"][0] > q[case][1] - q[case][0]
    ampere = [Measurement("A100-80GB-SXM", 1500), Measurement("RTX-A6000", 800),
              Measurement("RTX-3090", 700)]
    width = lambda e: e.samples_per_second_high / e.samples_per_second_low  # noqa: E731
    volta = model.estimate(RESNET, SPECS["V100-32GB-SXM2"], measurements=ampere)
    alike = model.estimate(RESNET, SPECS["A100-40GB-SXM"], measurements=ampere)
    assert volta.basis is alike.basis is Basis.PREDICTED
    assert width(volta) > width(alike)


@pytest.mark.parametrize(("case", "expected"), [
    ("seen3_unlike", (-0.3, 0.3)),   # its own bounds
    ("seen2_unlike", (-0.2, 0.2)),   # fewer probes: none (more would be wrong): alike, 2 probes
    ("unseen2_unlike", (-0.25, 0.25)),  # no unlike bounds at 2 or fewer probes: alike, 2 probes
    ("unseen3_unlike", (-0.25, 0.25)),
    ("foreign", (-0.5, 0.5)),        # the unseen-unlike bounds (here: unseen2's) widened 2x
])
def test_unlike_cases_fall_back_to_fewer_probes_then_to_alike(
        case: str, expected: tuple[float, float]) -> None:
    quantiles = {"seen3_unlike": (-0.3, 0.3), "seen2": (-0.2, 0.2), "seen1": (-0.4, 0.4),
                 "unseen2": (-0.25, 0.25)}
    assert interval(quantiles, case, foreign_widening=2.0) == pytest.approx(expected)


def test_residual_case_names() -> None:
    assert residual_case(False, 5, unlike=False) == "seen3"
    assert residual_case(True, 1, unlike=True) == "unseen1_unlike"


def test_probe_wins_on_its_own_accelerator(model: TransferModel) -> None:
    est = model.estimate(RESNET, SPECS["A10G"], measurements=[Measurement("A10G", 321.0)])
    assert est.basis is Basis.MEASURED
    assert est.samples_per_second == pytest.approx(321.0)


def test_more_probes_narrow_the_interval(model: TransferModel) -> None:
    one = model.estimate(RESNET, SPECS["H100-SXM"], measurements=[Measurement("A100-80GB-SXM", 1500)])
    three = model.estimate(RESNET, SPECS["H100-SXM"], measurements=[
        Measurement("A100-80GB-SXM", 1500), Measurement("RTX-A6000", 800),
        Measurement("V100-32GB-SXM2", 900)])
    assert one.basis is Basis.PREDICTED
    width = lambda e: e.samples_per_second_high / e.samples_per_second_low  # noqa: E731
    assert width(three) < width(one)


def test_unprobed_foreign_vendor_is_a_prior_with_wider_interval(model: TransferModel) -> None:
    nvidia = model.estimate(RESNET, SPECS["A100-40GB-SXM"])
    tpu = model.estimate(RESNET, SPECS["TPU-v5e"])
    assert tpu.basis is Basis.PRIOR
    ratio = lambda e: e.samples_per_second_high / e.samples_per_second_low  # noqa: E731
    assert ratio(tpu) > ratio(nvidia)


def test_no_flops_and_no_probe_is_a_clear_error(model: TransferModel) -> None:
    with pytest.raises(AdvisorError, match="FLOPs per sample"):
        model.estimate(WorkloadFeatures(precision=Precision.BF16), SPECS["T4"])


def test_transfer_follows_the_similar_reference_workload() -> None:
    # Two reference workloads with opposite A/B/C profiles; the probes match "fast_b".
    rows = [_row("fast_b", "A10", 100), _row("fast_b", "L4", 200), _row("fast_b", "T4", 400),
            _row("fast_b", "A10G", 800),
            _row("slow_b", "A10", 100), _row("slow_b", "L4", 50), _row("slow_b", "T4", 25),
            _row("slow_b", "A10G", 12.5)]
    # The transfer alone (factor_weight 0): two opposite rows are no basis for a factorization.
    model = TransferModel(calibrate=False, min_neighbours=1, factor_weight=0.0).fit(rows, accelerators=SPECS)
    shots = [Measurement("A10", 10), Measurement("L4", 20), Measurement("T4", 40)]
    est = model.estimate(WorkloadFeatures(precision=None), SPECS["A10G"], measurements=shots)
    assert est.samples_per_second == pytest.approx(80, rel=0.01)


def test_multi_device_prediction_scales_sublinearly(model: TransferModel) -> None:
    one = model.estimate(RESNET, SPECS["A100-40GB-SXM"]).samples_per_second
    eight = model.estimate(RESNET, SPECS["A100-40GB-SXM"], count=8).samples_per_second
    assert 6 * one < eight <= 8 * one


@pytest.mark.usefixtures("no_shipped_artifacts")
def test_cached_model_is_reused(tmp_path: Path) -> None:
    first = cached_transfer_model(SPECS, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("throughput-*.pkl"))) == 1
    second = cached_transfer_model(SPECS, cache_dir=tmp_path)
    assert second is not first
    assert second.residual_quantiles_ == first.residual_quantiles_


@pytest.mark.parametrize("kwargs", [{"tau": 0}, {"interval_coverage": 1.0},
                                    {"precision_mismatch_weight": 0}])
def test_bad_hyper_parameters_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(AdvisorError):
        TransferModel(**kwargs)  # type: ignore[arg-type]


def test_no_probe_resnet50_stays_near_the_reference_measurement(model: TransferModel) -> None:
    # resnet50's profile (24.3 GFLOPs/sample, 99% convolution) predicted without a probe on
    # A100-40GB-SXM must stay within 25% of Lambda's resnet50 mixed-precision measurement.
    features = WorkloadFeatures(precision=Precision.BF16, flops_per_sample=24.3e9,
                                conv_flops_fraction=0.99, name="resnet50")
    measured = [r.samples_per_second for r in load_reference()
                if r.model == "resnet50" and r.precision == "mixed"
                and r.accelerator == "A100-40GB-SXM" and r.accelerator_count == 1]
    assert measured
    predicted = model.estimate(features, SPECS["A100-40GB-SXM"]).samples_per_second
    assert predicted == pytest.approx(sum(measured) / len(measured), rel=0.25)


def test_factor_blend_stays_close_to_exact_ratios() -> None:
    # Multiplicative data: transfer and factorization both recover the target exactly.
    speeds = {"A10": 1.0, "L4": 0.8, "T4": 0.4, "A10G": 1.1, "RTX-3090": 1.5}
    rows = [_row(m, a, size * s) for m, size in {"a": 100.0, "b": 30.0, "c": 7.0}.items()
            for a, s in speeds.items()]
    model = TransferModel(calibrate=False, factor_weight=1.0, min_neighbours=1).fit(rows, accelerators=SPECS)
    shots = [Measurement(a, 50.0 * speeds[a]) for a in ("A10", "L4", "T4")]
    est = model.estimate(WorkloadFeatures(precision=None), SPECS["A10G"], measurements=shots)
    assert est.samples_per_second == pytest.approx(55.0, rel=0.02)


@pytest.mark.parametrize("kwargs", [{"factor_weight": 1.5}, {"factor_weight_unseen": -0.1},
                                    {"factor_rank": 0}])
def test_bad_factor_hyper_parameters_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(AdvisorError):
        TransferModel(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("name", "expected"), [
    ("resnet50/mixed", ("resnet50", "mixed")), ("bench/bert/fp32/unknown", ("bench/bert", "fp32")),
    ("lambda_v1/gnmt/fp16", ("lambda_v1/gnmt", "mixed")), ("my-model", None)])
def test_precision_token_is_split_from_workload_names(
        name: str, expected: tuple[str, str] | None) -> None:
    assert split_precision(name) == expected


@pytest.mark.parametrize(("name", "precision", "expected"), [
    ("resnet50/mixed", Precision.FP32, ("resnet50", "mixed")),  # the name's token wins
    ("my-model", Precision.BF16, ("my-model", "mixed")),
    ("my-model", Precision.TF32, ("my-model", "fp32")),
    ("my-model", None, None), ("", Precision.FP16, None)])
def test_workload_precision_comes_from_its_name_then_its_precision(
        name: str, precision: Precision | None, expected: tuple[str, str] | None) -> None:
    assert _split_precision(WorkloadFeatures(precision=precision, name=name)) == expected


def _twin_rows() -> list[ReferenceRow]:
    # log y = level + accelerator speed + slope * accelerator factor (+ a mixed-precision
    # shift per accelerator); model "d" has a slope unlike a, b, c.
    speed = {"A10": 0.0, "L4": -0.3, "T4": -0.9, "A10G": 0.1, "RTX-3090": 0.4, "A40": 0.3}
    factor = {"A10": 0.0, "L4": 1.0, "T4": -1.0, "A10G": 0.5, "RTX-3090": -0.5, "A40": 1.5}
    shift = {"A10": 0.5, "L4": 0.2, "T4": 0.9, "A10G": 0.4, "RTX-3090": 0.6, "A40": 0.3}
    slopes = {"a": 0.1, "b": -0.2, "c": 0.0, "d": 0.8}
    rows = []
    for m, slope in slopes.items():
        for precision in ("fp32", "mixed"):
            for a in speed:
                log_y = 4 + speed[a] + slope * factor[a] + (shift[a] if precision == "mixed"
                                                            else 0.0)
                rows.append(ReferenceRow("bench", f"{m}/{precision}", "unknown", a, 1, 1,
                                         math.exp(log_y), "sample"))
    return rows


def test_precision_twin_prior_carries_the_twins_profile() -> None:
    rows = _twin_rows()
    truth = {r.accelerator: r.samples_per_second for r in rows if r.model == "d/mixed"}
    reference = [r for r in rows if r.model != "d/mixed"]
    shots = [Measurement("A10", truth["A10"])]
    features = WorkloadFeatures(precision=None, name="d/mixed")
    errors = {}
    for twin in (0.0, 0.3):
        fitted = TransferModel(calibrate=False, factor_weight=1.0, min_neighbours=1,
                               factor_alpha=0.01,
                               twin_shrinkage=twin).fit(reference, accelerators=SPECS)
        est = fitted.estimate(features, SPECS["A40"], measurements=shots)
        errors[twin] = abs(math.log(est.samples_per_second / truth["A40"]))
    assert errors[0.3] < 0.05
    assert errors[0.3] < errors[0.0] / 2


def test_negative_twin_shrinkage_is_rejected() -> None:
    with pytest.raises(AdvisorError, match="twin_shrinkage"):
        TransferModel(twin_shrinkage=-1.0)
