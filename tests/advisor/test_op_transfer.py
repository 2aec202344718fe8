"""Per-operator transfer: the probed step split by operator class, each class carried to the
target by what bounds it there, the probed device reproduced, and held-out behaviour on a
synthetic table whose truth is a roofline."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from advisor.errors import AdvisorError
from advisor.profiling.op_profile import OpClass, OpCost, OpMix, reference_op_mixes
from advisor.spec import Precision
from advisor.throughput._op_transfer import OpTransfer, class_seconds, split_step
from advisor.throughput.estimate import Measurement, WorkloadFeatures
from advisor.throughput.published import load_published
from advisor.throughput.reference import ReferenceRow, load_reference
from advisor.throughput.roofline import AnchoredRoofline, RooflinePrior, RooflineSample
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
A100 = SPECS["A100-80GB-SXM"]
# A100 with twice its bandwidth, and with twice its peaks (a new name: a different part)
WIDE = replace(A100, name="A100-wide", memory_bandwidth_gbs=2 * A100.memory_bandwidth_gbs)
FAST = replace(A100, name="A100-fast", fp32_tflops=2 * (A100.fp32_tflops or 0),
               bf16_tflops=2 * (A100.bf16_tflops or 0))
MATMUL = OpCost(OpClass.MATMUL, "bfloat16", 1e12, 1e6)           # compute bound
COPY = OpCost(OpClass.ELEMENTWISE, "bfloat16", 0.0, 1e10)         # bandwidth bound
TINY = OpCost(OpClass.REDUCTION, "bfloat16", 0.0, 1.0, 1e4)       # launch bound
MIXED = OpMix(per_sample=(MATMUL, COPY), per_step=())


def _transfer(kernel_overhead_s: float = 0.0) -> OpTransfer:
    samples = [RooflineSample(MIXED, 8, spec, False, 1.0) for spec in (A100, WIDE, FAST)]
    roofline = AnchoredRoofline(conv_fractions={}, roofline=RooflinePrior(
        kernel_overhead_s=kernel_overhead_s)).fit(samples)
    return OpTransfer(roofline)


def _carry(mix: OpMix, target: object, *, recorded: dict[str, float] | None = None,
           probe_sps: float = 100.0) -> float:
    """Samples/s on ``target`` from a probe on the A100, with no per-device correction."""
    assert target is not None
    log_sps = _transfer().predict_log(
        mix, probed=A100, probed_log_sps=math.log(probe_sps), target=target,  # type: ignore[arg-type]
        batch_size=8, precision=Precision.BF16, recorded=recorded, corrections=(0.0, 0.0))
    return math.exp(log_sps)


# -- the split --------------------------------------------------------------------------------

@pytest.mark.parametrize("recorded", [
    None,                                             # the roofline's split
    {"matmul": 0.3, "elementwise": 0.1},              # the probe's own, in other units
    {"matmul": 0.2, "custom_kernel": 0.05},           # an unknown class counts as other
])
def test_split_sums_to_the_measured_step(recorded: dict[str, float] | None) -> None:
    estimate = {OpClass.MATMUL: 2.0, OpClass.ELEMENTWISE: 1.0}
    parts = split_step(0.125, estimate, recorded)
    assert sum(parts.values()) == pytest.approx(0.125)


def test_split_follows_the_recorded_times_over_the_roofline() -> None:
    parts = split_step(1.0, {OpClass.MATMUL: 1.0, OpClass.ELEMENTWISE: 1.0},
                       {"matmul": 3.0, "elementwise": 1.0})
    assert parts[OpClass.MATMUL] == pytest.approx(0.75)
    assert split_step(1.0, {OpClass.MATMUL: 1.0, OpClass.ELEMENTWISE: 3.0})[
        OpClass.ELEMENTWISE] == pytest.approx(0.75)


def test_split_rejects_a_step_with_no_time() -> None:
    with pytest.raises(AdvisorError, match="measured step time"):
        split_step(0.0, {OpClass.MATMUL: 1.0})


# -- what bounds each class --------------------------------------------------------------------

def test_a_bandwidth_bound_class_scales_with_bandwidth() -> None:
    copy_only = OpMix(per_sample=(COPY,), per_step=())
    assert _carry(copy_only, WIDE) == pytest.approx(200.0)
    assert _carry(copy_only, FAST) == pytest.approx(100.0)


def test_a_compute_bound_class_scales_with_its_paths_peak() -> None:
    matmul_only = OpMix(per_sample=(MATMUL,), per_step=())
    assert _carry(matmul_only, FAST) == pytest.approx(200.0)
    assert _carry(matmul_only, WIDE) == pytest.approx(100.0)


def test_a_class_of_small_kernels_stays_at_its_launch_floor() -> None:
    tiny_only = OpMix(per_sample=(TINY,), per_step=())
    assert _carry(tiny_only, WIDE) == pytest.approx(100.0)
    assert _carry(tiny_only, FAST) == pytest.approx(100.0)


def test_recorded_times_decide_which_classes_scale() -> None:
    """All the probe's time in the matmuls: more bandwidth buys nothing; all of it in the
    copy: the step is twice as fast."""
    assert _carry(MIXED, WIDE, recorded={"matmul": 1.0}) == pytest.approx(100.0)
    assert _carry(MIXED, WIDE, recorded={"elementwise": 1.0}) == pytest.approx(200.0)


def test_class_seconds_are_per_class_and_floored() -> None:
    seconds = class_seconds(RooflinePrior(kernel_overhead_s=0.0),
                            OpMix(per_sample=(MATMUL, COPY, TINY), per_step=()), A100,
                            batch_size=8, tf32=False, launch_floor_s=4e-6)
    assert set(seconds) == {OpClass.MATMUL, OpClass.ELEMENTWISE, OpClass.REDUCTION}
    assert seconds[OpClass.REDUCTION] == pytest.approx(1e4 * 4e-6)


# -- the probed device --------------------------------------------------------------------------

def test_the_probed_device_is_reproduced() -> None:
    assert _carry(MIXED, A100, probe_sps=123.0) == pytest.approx(123.0)


@pytest.fixture(scope="module")
def world() -> dict[str, object]:
    """A synthetic reference table: the shipped reference models' operator mixes priced by a
    known roofline (the prior's efficiencies and kernel overhead) on nine NVIDIA parts of three
    generations, every part at 80% of it (what the anchors learn)."""
    truth = RooflinePrior()
    parts = ["V100-32GB-SXM2", "RTX-3090", "A10", "A40", "RTX-A6000", "A100-40GB-PCIe",
             "A100-80GB-SXM", "H100-PCIe", "H100-SXM"]
    mixes = reference_op_mixes()
    rows = []
    for key, mix in sorted(mixes.items()):
        model, _, precision = key.partition("/")
        for name in parts:
            spec = SPECS[name]
            sps = 0.8 * truth.samples_per_second(mix, spec, batch_size=64, tf32=True)
            rows.append(ReferenceRow("g", model, precision, name, 1, 64, sps, "sample"))
    return {"rows": rows, "mixes": mixes}


def _features(mixes: dict[str, OpMix], key: str) -> WorkloadFeatures:
    precision = Precision.TF32 if key.endswith("fp32") else Precision.FP16
    return WorkloadFeatures(precision=precision, name=key, op_mix=mixes[key],
                            batch_size_per_device=64, conv_flops_fraction=None)


@pytest.mark.parametrize(("model", "held", "probed"), [
    ("resnet50", "A100-80GB-SXM", "RTX-A6000"),   # convolutional, within a class
    ("bert_large_squad", "H100-SXM", "A10"),     # transformer, two generations apart
])
def test_held_out_part_and_model_are_predicted_from_one_probe(
        world: dict[str, object], model: str, held: str, probed: str) -> None:
    """Fitted without any row of the model or of the part, one probe on another part predicts
    the held-out cell close to its truth (the ratio of reference workloads misses BERT-large
    on the H100 by a quarter here), and the probed part is the probe itself."""
    rows: list[ReferenceRow] = world["rows"]  # type: ignore[assignment]
    mixes: dict[str, OpMix] = world["mixes"]  # type: ignore[assignment]
    train = [r for r in rows if r.model != model and r.accelerator != held]
    fitted = TransferModel(calibrate=False).fit(train, accelerators=SPECS)
    assert held not in fitted.seen_
    key = f"{model}/mixed"
    truth = {r.accelerator: r.samples_per_second for r in rows
             if f"{r.model}/{r.precision}" == key}
    shot = [Measurement(probed, truth[probed])]
    features = _features(mixes, key)
    predicted = fitted.estimate(features, SPECS[held], measurements=shot).samples_per_second
    # within 3.5%: the fit, pulled toward the prior's efficiencies, recovers the truth's less
    # exactly over eight models' mixes than over three (BERT-large here -2.7%, was under 2%);
    # the probe shrinkage (advisor.throughput._probe_shrink) carries 0.91 of the probe's
    # miss on the A10 (-3.3%; the no-probe H100 figure misses by -6.0%): -3.0%
    assert predicted == pytest.approx(truth[held], rel=0.035)
    assert fitted.estimate(features, SPECS[probed], measurements=shot).samples_per_second == (
        truth[probed])


def test_op_transfer_off_or_no_op_mix_keeps_the_ratio_transfer(
        world: dict[str, object]) -> None:
    rows: list[ReferenceRow] = world["rows"]  # type: ignore[assignment]
    mixes: dict[str, OpMix] = world["mixes"]  # type: ignore[assignment]
    train = [r for r in rows if r.model != "resnet50"]
    on = TransferModel(calibrate=False).fit(train, accelerators=SPECS)
    off = TransferModel(calibrate=False, op_transfer=False).fit(train, accelerators=SPECS)
    shot = [Measurement("A10", 500.0)]
    with_mix = _features(mixes, "resnet50/mixed")
    no_mix = replace(with_mix, op_mix=None, flops_per_sample=3 * 8.18e9)
    target = SPECS["H100-SXM"]

    def sps(model: TransferModel, features: WorkloadFeatures) -> float:
        return model.estimate(features, target, measurements=shot).samples_per_second

    assert sps(on, with_mix) != sps(off, with_mix)
    assert sps(on, no_mix) == sps(off, no_mix)


@pytest.mark.parametrize(("probed", "target"), [
    ("H200", "H100-SXM"),        # a probe on a part with no reference rows (published anchor)
    ("H100-SXM", "H200"),        # and the other way round
    ("RTX-A6000", "V100-32GB-SXM2"),  # across architecture classes
])
def test_with_no_recorded_times_the_probe_moves_by_the_no_probe_ratio(probed: str,
                                                                       target: str) -> None:
    """The roofline's own split: the per-operator figure is the probe times the ratio of the
    two devices' no-probe predictions (published anchors included), whatever the mix; up to
    the per-kernel launch floor, which the no-probe roofline lacks (ResNet-50's few matmul
    kernels per sample reach it on an H200: 0.13% since the bandwidth efficiencies start from
    the single-kernel measurements, 0.02% before). The pair shift is off here (the devices'
    anchors alone): with it, the A6000 -> V100 pair moves by the reference models alike to
    ResNet-50 measured on both (tests/advisor/test_pair_shift.py)."""
    published = [r for r in load_published() if r.accelerator in SPECS]
    model = TransferModel(calibrate=False, pair_shift=False).fit(
        load_reference(), accelerators=SPECS, published=published)
    features = WorkloadFeatures(precision=Precision.BF16, name="r50",
                                op_mix=reference_op_mixes()["resnet50/mixed"],
                                batch_size_per_device=256)

    def sps(name: str, shots: list[Measurement]) -> float:
        return model.estimate(features, SPECS[name], measurements=shots).samples_per_second

    carried = sps(target, [Measurement(probed, 1000.0)])
    assert carried == pytest.approx(1000.0 * sps(target, []) / sps(probed, []), rel=2e-3)
