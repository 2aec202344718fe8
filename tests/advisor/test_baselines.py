"""advisor.throughput.baseline: the median-ratio and nearest-workload ratio baselines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.errors import AdvisorError
from advisor.throughput.baseline import MedianRatioModel, NearestRatioModel
from advisor.throughput.estimate import Measurement, WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from cli.main import advisor
from pricing import load_accelerators

SPECS = load_accelerators()
# Samples/s of three reference workloads: two alike (compute-bound), one bandwidth-bound.
PROFILES = {
    "conv": {"T4": 1.0, "A10G": 2.0, "L4": 1.6, "A100-40GB-SXM": 8.0},
    "conv2": {"T4": 1.0, "A10G": 2.1, "L4": 1.7, "A100-40GB-SXM": 7.5},
    "lstm": {"T4": 1.0, "A10G": 1.5, "L4": 0.8, "A100-40GB-SXM": 4.0},
}
WORKLOAD = WorkloadFeatures(precision=None, name="new")


def _reference(profiles: dict[str, dict[str, float]]) -> list[ReferenceRow]:
    return [ReferenceRow("bench", name, "unknown", a, 1, 1, 100 * value, "sample")
            for name, row in profiles.items() for a, value in row.items()]


def _predict(model: MedianRatioModel, probes: dict[str, float], target: str) -> float:
    return model.estimate(WORKLOAD, SPECS[target], measurements=[
        Measurement(a, value) for a, value in probes.items()]).samples_per_second


def test_the_nearest_workload_carries_its_ratios_over() -> None:
    """A workload that moves like lstm over the probes gets lstm's ratio to the target; the
    median ratio is pulled toward the two conv workloads."""
    probes = {a: 30 * PROFILES["lstm"][a] for a in ("T4", "A10G", "L4")}
    truth = 30 * PROFILES["lstm"]["A100-40GB-SXM"]
    nearest = NearestRatioModel().fit(_reference(PROFILES), accelerators=SPECS)
    median = MedianRatioModel().fit(_reference(PROFILES), accelerators=SPECS)
    assert _predict(nearest, probes, "A100-40GB-SXM") == pytest.approx(truth)
    assert _predict(median, probes, "A100-40GB-SXM") > 1.3 * truth


def test_a_workload_missing_a_probe_is_not_a_candidate() -> None:
    profiles = {**PROFILES, "lstm": {a: v for a, v in PROFILES["lstm"].items() if a != "L4"}}
    probes = {a: 30 * PROFILES["lstm"][a] for a in ("T4", "A10G", "L4")}
    nearest = NearestRatioModel().fit(_reference(profiles), accelerators=SPECS)
    predicted = _predict(nearest, probes, "A100-40GB-SXM")
    assert predicted > 1.3 * 30 * PROFILES["lstm"]["A100-40GB-SXM"]  # a conv workload's ratio


def test_one_probe_is_the_median_ratio_and_a_probe_is_its_measurement() -> None:
    nearest = NearestRatioModel().fit(_reference(PROFILES), accelerators=SPECS)
    median = MedianRatioModel().fit(_reference(PROFILES), accelerators=SPECS)
    one = {"T4": 50.0}
    assert _predict(nearest, one, "L4") == pytest.approx(_predict(median, one, "L4"))
    assert _predict(nearest, one, "L4") == pytest.approx(50.0 * math.exp(math.log(1.6)))
    assert _predict(nearest, {"T4": 50.0, "L4": 77.0}, "L4") == pytest.approx(77.0)
    with pytest.raises(AdvisorError, match="need at least one probe"):
        _predict(nearest, {}, "L4")


def test_model_evaluate_runs_the_nearest_ratio_baseline(tmp_path: Path) -> None:
    lines = ["workload,accelerator,throughput_samples_per_s"]
    lines += [f"{name},{a},{100 * v}" for name, row in PROFILES.items() for a, v in row.items()]
    lines += [f"lstm2,{a},{30 * v}" for a, v in PROFILES["lstm"].items()]
    bench = tmp_path / "bench.csv"
    bench.write_text("\n".join(lines) + "\n")
    outputs = {}
    for model in ("nearest-ratio", "median-ratio"):
        result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "3",
                                              "--repeats", "1", "--reference", "none",
                                              "--model", model, "--json"])
        assert result.exit_code == 0, result.output
        outputs[model] = json.loads(result.output)
    assert outputs["nearest-ratio"]["mape"] < outputs["median-ratio"]["mape"]


def test_repeated_measurements_of_one_accelerator_average_in_log_space() -> None:
    for model in (MedianRatioModel(), NearestRatioModel()):
        model.fit(_reference(PROFILES), accelerators=SPECS)
        twice = model.estimate(WORKLOAD, SPECS["L4"], measurements=[
            Measurement("T4", 50.0), Measurement("T4", 200.0)]).samples_per_second
        assert twice == pytest.approx(_predict(model, {"T4": 100.0}, "L4"))
