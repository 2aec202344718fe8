"""advisor.throughput._time_fit: the probes' two-term time fit (FLOPs / peak + bytes /
bandwidth) for a target known by its specs only, and its place in the transfer model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import nnls

from advisor.errors import AdvisorError
from advisor.spec import Precision
from advisor.throughput._table import spec_features
from advisor.throughput._time_fit import PEAK_COLUMNS, time_fit_predict
from advisor.throughput.estimate import Measurement, WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
PROBES = ["V100-16GB-SXM2", "A100-40GB-SXM", "T4", "A10G"]
TARGET = "L40S"


def _features(names: list[str]) -> np.ndarray:
    return np.array([spec_features(SPECS[a]) for a in names])


def _log_sps(name: str, flops: float, moved: float, peak: str) -> float:
    """Log samples/s of a step that takes exactly flops / peak + bytes / bandwidth."""
    figures = np.exp(spec_features(SPECS[name]))
    return -math.log(flops / figures[PEAK_COLUMNS[peak]] + moved / figures[3])


@pytest.mark.parametrize("peak", ["fp32", "mixed"])
@pytest.mark.parametrize(("flops", "moved"), [(1.0, 0.0), (0.0, 1.0), (1.0, 0.05), (3.0, 0.2)])
def test_a_step_that_follows_the_two_terms_is_predicted_exactly(
        peak: str, flops: float, moved: float) -> None:
    logs = np.array([_log_sps(a, flops, moved, peak) for a in PROBES[:3]])
    predicted = time_fit_predict(_features(PROBES[:3]), logs, spec_features(SPECS[TARGET]), peak)
    assert predicted == pytest.approx(_log_sps(TARGET, flops, moved, peak), abs=1e-9)


def test_the_peak_is_the_one_of_the_workloads_precision() -> None:
    """A compute-bound fp32 step fitted as if it ran at the tensor peak misses the target."""
    logs = np.array([_log_sps(a, 1.0, 0.0, "fp32") for a in PROBES[:3]])
    target = spec_features(SPECS[TARGET])
    truth = _log_sps(TARGET, 1.0, 0.0, "fp32")
    assert time_fit_predict(_features(PROBES[:3]), logs, target, "fp32") == pytest.approx(truth)
    wrong = time_fit_predict(_features(PROBES[:3]), logs, target, "mixed")
    assert wrong is not None and abs(wrong - truth) > 0.05


def test_the_fit_is_the_non_negative_least_squares_solution() -> None:
    """Against scipy's NNLS on the same relative system, over noisy probes where the free
    solution is often negative."""
    rng = np.random.default_rng(0)
    clipped = 0
    for _ in range(300):
        names = list(rng.choice(PROBES, size=int(rng.integers(2, 5)), replace=False))
        peak = str(rng.choice(["fp32", "mixed"]))
        logs = np.array([_log_sps(a, rng.uniform(0, 2), rng.uniform(0, 0.3), peak)
                         for a in names]) + rng.normal(0, 0.3, len(names))
        features = _features(names)
        figures = np.exp(features[:, [PEAK_COLUMNS[peak], 3]])
        design = np.exp(logs)[:, None] / figures
        x, _ = nnls(design, np.ones(len(names)))
        clipped += int((x == 0).any())
        target = np.exp(spec_features(SPECS[TARGET])[[PEAK_COLUMNS[peak], 3]])
        assert time_fit_predict(features, logs, spec_features(SPECS[TARGET]), peak) == (
            pytest.approx(-math.log(x @ (1 / target)), abs=1e-9))
    assert clipped > 30  # the one-term branch was exercised


def test_one_probe_or_missing_figures_give_no_answer() -> None:
    logs = np.array([_log_sps(a, 1.0, 0.1, "mixed") for a in PROBES[:2]])
    target = spec_features(SPECS[TARGET])
    assert time_fit_predict(_features(PROBES[:1]), logs[:1], target, "mixed") is None
    features = _features(PROBES[:2])
    features[1, 3] = np.nan
    assert time_fit_predict(features, logs, target, "mixed") is None
    assert time_fit_predict(_features(PROBES[:2]), logs, np.full(6, np.nan), "mixed") is None


def _reference() -> list[ReferenceRow]:
    """Reference workloads of mixed compute/bandwidth shares on the probe accelerators; none
    ran on the target."""
    return [ReferenceRow("bench", f"m{i}", "fp32", a, 1, 1,
                         math.exp(_log_sps(a, 1.0, 0.02 * i, "fp32")), "sample")
            for i in range(6) for a in PROBES]


def test_the_transfer_model_blends_it_in_for_a_target_known_by_its_specs_only() -> None:
    shots = [Measurement(a, math.exp(_log_sps(a, 1.0, 0.5, "fp32"))) for a in PROBES[:3]]
    truth = math.exp(_log_sps(TARGET, 1.0, 0.5, "fp32"))
    fp32 = WorkloadFeatures(precision=Precision.FP32, name="new")

    def predict(weight: float, workload: WorkloadFeatures = fp32) -> float:
        model = TransferModel(calibrate=False, time_fit_weight=weight).fit(_reference(), accelerators=SPECS)
        return model.estimate(workload, SPECS[TARGET], measurements=shots).samples_per_second

    assert predict(1.0) == pytest.approx(truth, rel=1e-6)
    without, half = predict(0.0), predict(0.5)
    assert abs(math.log(without / truth)) > 0.02
    assert math.log(half) == pytest.approx((math.log(without) + math.log(truth)) / 2, abs=1e-6)
    # the precision token of the name is enough; a name and precision that say nothing skip it
    assert predict(1.0, WorkloadFeatures(precision=None, name="new/fp32")) == (
        pytest.approx(truth, rel=1e-6))
    assert predict(1.0, WorkloadFeatures(precision=None, name="new")) == pytest.approx(without)
    # a target the reference measured does not take it
    seen = TransferModel(calibrate=False, time_fit_weight=1.0).fit(_reference(), accelerators=SPECS)
    assert seen.estimate(fp32, SPECS[PROBES[3]], measurements=shots).samples_per_second != (
        pytest.approx(math.exp(_log_sps(PROBES[3], 1.0, 0.5, "fp32")), rel=1e-6))


def test_a_seen_target_of_an_architecture_no_probe_has_takes_it() -> None:
    """V100 (tensor cores, no bf16) from Ampere and Ada probes only: the ratio transfer
    extrapolates, so the time fit joins in; with a Turing probe (T4) beside them it does not."""
    model = TransferModel(calibrate=False, time_fit_weight=1.0).fit(_reference(), accelerators=SPECS)
    fp32 = WorkloadFeatures(precision=Precision.FP32, name="new")
    truth = math.exp(_log_sps("V100-16GB-SXM2", 1.0, 0.5, "fp32"))

    def predict(probes: list[str]) -> float:
        shots = [Measurement(a, math.exp(_log_sps(a, 1.0, 0.5, "fp32"))) for a in probes]
        return model.estimate(fp32, SPECS["V100-16GB-SXM2"],
                              measurements=shots).samples_per_second

    assert predict(["A100-40GB-SXM", "A10G", "L4"]) == pytest.approx(truth, rel=1e-6)
    assert predict(["A100-40GB-SXM", "A10G", "T4"]) != pytest.approx(truth, rel=1e-3)


def test_the_weight_is_checked() -> None:
    with pytest.raises(AdvisorError, match="time_fit_weight must be in"):
        TransferModel(time_fit_weight=1.5)
