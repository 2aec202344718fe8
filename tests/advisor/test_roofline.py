"""RooflinePrior: precision paths, bandwidth and peak scaling, bounded efficiencies; and the
TransferModel keeps its old no-probe path when the workload has no operator mix."""

from __future__ import annotations

import copy
import math
import pickle
from dataclasses import replace

import pytest

from advisor.profiling.op_profile import OpClass, OpCost, OpMix, reference_op_mixes
from advisor.spec import Precision
from advisor.throughput.estimate import WorkloadFeatures
from advisor.throughput.kernel_efficiency import KernelPriors, shipped_kernel_priors
from advisor.throughput.reference import load_reference
from advisor.throughput.roofline import (
    AnchoredRoofline,
    RooflinePrior,
    RooflineSample,
    compute_path,
    reference_samples,
)
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
COMPUTE = OpMix(per_sample=(OpCost(OpClass.MATMUL, "float32", 1e12, 1e6),), per_step=())
MEMORY = OpMix(per_sample=(OpCost(OpClass.ELEMENTWISE, "float32", 0.0, 1e10),), per_step=())
PRIOR = RooflinePrior(kernel_overhead_s=0.0)


def _seconds(mix: OpMix, accelerator: str, *, tf32: bool = False, **changes: float) -> float:
    spec = replace(SPECS[accelerator], **changes)
    return PRIOR.seconds_per_sample(mix, spec, batch_size=8, tf32=tf32)


@pytest.mark.parametrize("accelerator", ["A100-80GB-SXM", "H100-SXM"])  # Ampere, Hopper
def test_strict_fp32_is_slower_than_tf32_on_tensor_core_tf32_parts(accelerator: str) -> None:
    assert _seconds(COMPUTE, accelerator) > 2 * _seconds(COMPUTE, accelerator, tf32=True)


@pytest.mark.parametrize("accelerator", ["V100-16GB-SXM2", "T4", "GTX-1080Ti"])  # pre-Ampere
def test_tf32_changes_nothing_before_ampere(accelerator: str) -> None:
    assert _seconds(COMPUTE, accelerator) == _seconds(COMPUTE, accelerator, tf32=True)


@pytest.mark.parametrize(("dtype", "tf32", "path"), [
    ("bfloat16", False, "tensor"),
    ("float32", True, "tf32"),
    ("float32", False, "simt"),
])
def test_compute_path_on_h100(dtype: str, tf32: bool, path: str) -> None:
    assert compute_path(dtype, SPECS["H100-SXM"], tf32=tf32)[0] == path


def test_bf16_on_a_part_without_bf16_runs_at_fp32_rate() -> None:
    assert compute_path("bfloat16", SPECS["V100-16GB-SXM2"], tf32=False) == ("simt", 15.7e12)


def test_memory_bound_mix_scales_with_bandwidth() -> None:
    base = _seconds(MEMORY, "A100-80GB-SXM")
    assert _seconds(MEMORY, "A100-80GB-SXM", memory_bandwidth_gbs=2 * 2039) == pytest.approx(
        base / 2)
    assert _seconds(MEMORY, "A100-80GB-SXM", fp32_tflops=2 * 19.5) == pytest.approx(base)


def test_compute_bound_mix_scales_with_peak_flops() -> None:
    base = _seconds(COMPUTE, "A100-80GB-SXM")
    assert _seconds(COMPUTE, "A100-80GB-SXM", fp32_tflops=2 * 19.5) == pytest.approx(base / 2)
    assert _seconds(COMPUTE, "A100-80GB-SXM", memory_bandwidth_gbs=2 * 2039) == pytest.approx(
        base)


@pytest.fixture(scope="module")
def fitted() -> RooflinePrior:
    samples = reference_samples(load_reference(), SPECS, reference_op_mixes())
    return RooflinePrior().fit(samples)


def test_fitted_efficiencies_stay_in_unit_interval(fitted: RooflinePrior) -> None:
    values = [*fitted.flops_efficiency_.values(), *fitted.bytes_efficiency_.values()]
    assert all(0 < v <= 1 for v in values)
    assert fitted.log_rmse_ < 0.4


def test_rejects_bad_hyper_parameters() -> None:
    with pytest.raises(Exception, match="prior_efficiency"):
        RooflinePrior(prior_efficiency=1.5)


@pytest.fixture(scope="module")
def transfer() -> TransferModel:
    return TransferModel(calibrate=False).fit(load_reference(), accelerators=SPECS)


R50 = WorkloadFeatures(precision=Precision.BF16, flops_per_sample=3 * 8.18e9,
                       conv_flops_fraction=0.99, name="r50")


@pytest.mark.parametrize("accelerator", ["H100-SXM", "T4", "L4", "TPU-v5e"])
def test_no_op_mix_keeps_the_flops_prior_exactly(transfer: TransferModel,
                                                 accelerator: str) -> None:
    old = TransferModel(calibrate=False, roofline_weight=0.0).fit(load_reference(), accelerators=SPECS)
    assert (transfer.estimate(R50, SPECS[accelerator]).samples_per_second
            == old.estimate(R50, SPECS[accelerator]).samples_per_second)


def test_op_mix_switches_to_the_roofline(transfer: TransferModel) -> None:
    mix = reference_op_mixes()["resnet50/mixed"]
    with_mix = replace(R50, op_mix=mix, batch_size_per_device=256)
    new = transfer.estimate(with_mix, SPECS["H100-SXM"]).samples_per_second
    old = transfer.estimate(R50, SPECS["H100-SXM"]).samples_per_second
    assert new != old
    assert 0.5 < new / old < 2.0


# Parts of one class (NVIDIA, tensor cores, bf16) with the roofline's time slowed by a factor
# that grows with memory bandwidth: the correction an unseen part of the class should borrow.
_CLASS = ["A10", "A40", "RTX-A6000", "A100-40GB-PCIe", "A100-80GB-SXM", "H100-PCIe", "L4"]
_MIX = reference_op_mixes()["resnet50/mixed"]


def _truth(name: str) -> float:
    return -0.4 * math.log(SPECS[name].memory_bandwidth_gbs / 1000)


def _anchored(names: list[str]) -> AnchoredRoofline:
    samples = [RooflineSample(_MIX, 256, SPECS[n], False, math.exp(_truth(n)) / PRIOR
                              .seconds_per_sample(_MIX, SPECS[n], batch_size=256, tf32=False),
                              group="resnet50/mixed") for n in names]
    return AnchoredRoofline(conv_fractions={"resnet50": 0.99},
                            roofline=RooflinePrior(kernel_overhead_s=0.0)).fit(samples)


def _log_error(model: AnchoredRoofline, name: str, *, borrow: bool = True) -> float:
    spec = SPECS[name]
    predicted = (model.predict_log(_MIX, spec, batch_size=256, tf32=False,
                                   precision_key="mixed") if borrow else
                 math.log(model.roofline_.samples_per_second(_MIX, spec, batch_size=256,
                                                             tf32=False)))
    measured = _truth(name) - math.log(PRIOR.seconds_per_sample(_MIX, spec, batch_size=256,
                                                                tf32=False))
    return abs(predicted - measured)


@pytest.mark.parametrize("unseen", ["H100-SXM", "RTX-3090"])
def test_an_unseen_part_borrows_the_correction_its_class_shows(unseen: str) -> None:
    model = _anchored(_CLASS)
    assert unseen not in model.residuals_
    assert _log_error(model, unseen) < 0.5 * _log_error(model, unseen, borrow=False)


def test_no_correction_is_borrowed_across_classes_or_from_too_few_parts() -> None:
    model = _anchored(_CLASS)
    assert _log_error(model, "P100") == _log_error(model, "P100", borrow=False)  # no tensor cores
    few = _anchored(_CLASS[:2])
    assert _log_error(few, "H100-SXM") == _log_error(few, "H100-SXM", borrow=False)


def test_a_part_with_its_own_reference_rows_keeps_its_own_correction() -> None:
    model = _anchored(_CLASS)
    assert _log_error(model, "A40") < 0.05  # its own residual, not the regression's


def test_a_remembered_prediction_is_the_fit_s_own_and_no_copy_or_refit_keeps_it() -> None:
    model = _anchored(_CLASS)
    h100 = SPECS["H100-SXM"]
    first = model.predict_log(_MIX, h100, batch_size=256, tf32=False, precision_key="mixed")
    assert model.predict_log(_MIX, h100, batch_size=256, tf32=False,
                             precision_key="mixed") == first
    # another batch, part or precision is its own question
    assert model.predict_log(_MIX, h100, batch_size=32, tf32=False,
                             precision_key="mixed") != first
    # a copy with another setting answers afresh (the answers are not copied or pickled)
    wider = copy.copy(model)
    wider.anchor_ridge = 100.0
    assert wider.predict_log(_MIX, h100, batch_size=256, tf32=False,
                             precision_key="mixed") != first
    assert "answers_" not in pickle.loads(pickle.dumps(model)).__dict__
    # a refit on other rows forgets them
    model.fit([RooflineSample(_MIX, 256, SPECS[n], False, 1000.0, group="resnet50/mixed")
               for n in _CLASS])
    assert model.predict_log(_MIX, h100, batch_size=256, tf32=False,
                             precision_key="mixed") != first


def test_class_priors_set_where_each_efficiency_starts() -> None:
    """An unfitted prior prices each class at its own starting efficiency: element-wise
    bytes at 0.8 take 0.5 / 0.8 of the uniform prior's time."""
    priors = KernelPriors({OpClass.ELEMENTWISE: 0.8}, {(OpClass.MATMUL, "simt"): 0.25})
    ours = RooflinePrior(kernel_overhead_s=0.0, class_priors=priors)
    spec = SPECS["A100-80GB-SXM"]
    for mix, ratio in ((MEMORY, 0.5 / 0.8), (COMPUTE, 0.5 / 0.25)):
        assert (ours.seconds_per_sample(mix, spec, batch_size=8, tf32=False)
                == pytest.approx(ratio * PRIOR.seconds_per_sample(mix, spec, batch_size=8,
                                                                  tf32=False)))


def test_a_heavy_class_prior_weight_holds_the_measured_efficiency() -> None:
    """Samples that want element-wise bytes at 0.3: a plain fit follows them, a fit with a
    heavy weight on the kernel prior (0.8) stays near it."""
    spec = SPECS["A100-80GB-SXM"]
    slow = 0.5 / 0.3 * PRIOR.seconds_per_sample(MEMORY, spec, batch_size=8, tf32=False)
    samples = [RooflineSample(MEMORY, 8, spec, False, 1 / slow, group="m")] * 3
    priors = KernelPriors({OpClass.ELEMENTWISE: 0.8}, {})
    free = RooflinePrior(kernel_overhead_s=0.0, class_priors=priors).fit(samples)
    held = RooflinePrior(kernel_overhead_s=0.0, class_priors=priors,
                         class_prior_weight=1e4).fit(samples)
    assert free.bytes_efficiency_[OpClass.ELEMENTWISE] == pytest.approx(0.3, abs=0.03)
    assert held.bytes_efficiency_[OpClass.ELEMENTWISE] == pytest.approx(0.8, abs=0.03)


def test_the_anchored_roofline_starts_from_the_kernel_measurements() -> None:
    samples = reference_samples(load_reference(), SPECS, reference_op_mixes())
    model = AnchoredRoofline(conv_fractions={}).fit(samples)
    assert model.roofline_.class_priors == shipped_kernel_priors()
