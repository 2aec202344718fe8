"""TransferModel tiers: a table's own rows lead, shipped rows count by their similarity;
conformal interval bounds; the calibration module does not import the model."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from advisor.throughput._calibration import conformal_bounds
from advisor.throughput._tiers import BENCH_GENERATION, mix_tiers, shipped_similarity
from advisor.throughput.estimate import Measurement, WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPEEDS = {"T4": 1.0, "A10G": 2.5, "L4": 1.8, "A100-40GB-SXM": 6.0, "H100-SXM": 14.0}


def _rows(generation: str, speeds: dict[str, float], sizes: dict[str, float],
          ) -> list[ReferenceRow]:
    return [ReferenceRow(generation=generation, model=w, precision="unknown", accelerator=a,
                         accelerator_count=1, batch_size_per_accelerator=0,
                         samples_per_second=size * speed, sample_unit="sample")
            for w, size in sizes.items() for a, speed in speeds.items()]


def _predict(model: TransferModel, probes: dict[str, float], target: str) -> float:
    specs = load_accelerators()
    shots = [Measurement(a, v) for a, v in probes.items()]
    return model.estimate(WorkloadFeatures(precision=None, name="new"), specs[target],
                          measurements=shots).samples_per_second


def test_shipped_rows_unlike_the_table_leave_the_own_answer_unchanged() -> None:
    specs = load_accelerators()
    own = _rows(BENCH_GENERATION, SPEEDS, {"a": 100.0, "b": 40.0, "c": 7.0})
    # shipped workloads with the opposite ratio profile: they agree with no probe set
    unlike = _rows("lambda_v9", {a: 1 / s for a, s in SPEEDS.items()}, {"x": 50.0, "y": 9.0})
    probes = {"T4": 30.0, "A10G": 75.0, "L4": 54.0}
    alone = _predict(TransferModel(calibrate=False).fit(own, accelerators=specs), probes, "H100-SXM")
    both = _predict(TransferModel(calibrate=False).fit(own + unlike, accelerators=specs), probes, "H100-SXM")
    assert both == pytest.approx(alone, rel=1e-6)
    assert alone == pytest.approx(30.0 * 14.0, rel=0.02)


def test_pooling_everything_is_still_available() -> None:
    specs = load_accelerators()
    own = _rows(BENCH_GENERATION, SPEEDS, {"a": 100.0, "b": 40.0, "c": 7.0})
    unlike = _rows("lambda_v9", {a: 1 / s for a, s in SPEEDS.items()}, {"x": 50.0, "y": 9.0})
    model = TransferModel(calibrate=False, own_generation=None).fit(own + unlike, accelerators=specs)
    assert model.pooled_ is None and len(model.table_.workloads) == 5


@pytest.mark.parametrize(("shipped_logs", "expected"), [
    # exactly the probes' ratios on all three probes: (3 - 1) / 3 of full weight
    ([0.0, 1.0, 2.0], 2 / 3),
    # only one probe shared: no evidence of agreement, zero weight
    ([0.0, np.nan, np.nan], 0.0),
    # one ratio off by 1 in log space: far beyond tau = 0.1
    ([0.0, 2.0, 2.0], 0.0),
])
def test_similarity_is_agreement_shrunk_by_shared_probes(shipped_logs: list[float],
                                                         expected: float) -> None:
    log_sps = np.array([shipped_logs])
    value = shipped_similarity(log_sps, np.array([True]), {0: 3.0, 1: 4.0, 2: 5.0}, tau=0.1)
    assert value == pytest.approx(expected, abs=1e-3)


def test_mix_tiers_uses_the_case_weight_and_the_pooled_prior() -> None:
    seen = mix_tiers((1.0, "seen3"), (2.0, "seen3"), 0.5, seen_weight=0.4, unseen_weight=1.0)
    assert seen[0] == pytest.approx(1.2) and seen[1] == "seen3"
    unseen = mix_tiers((1.0, "unseen2"), (2.0, "seen2"), 1.0, seen_weight=0.0,
                       unseen_weight=0.5)
    assert unseen[0] == pytest.approx(1.5) and unseen[1] == "unseen2"
    assert mix_tiers((1.0, "prior"), (2.0, "prior"), 0.0, seen_weight=0.3,
                     unseen_weight=0.6) == (2.0, "prior")


def test_conformal_bounds_cover_the_nominal_share_of_new_residuals() -> None:
    rng = np.random.default_rng(0)
    fresh = rng.normal(0, 0.2, 20000)
    shares = []
    for _ in range(200):  # the guarantee is on average over calibration sets
        low, high = conformal_bounds(list(rng.normal(0, 0.2, 50)), 0.9)
        shares.append(float(np.mean((fresh >= low) & (fresh <= high))))
    assert 0.9 <= float(np.mean(shares)) <= 0.94


def test_conformal_bounds_with_few_residuals_take_the_extremes() -> None:
    assert conformal_bounds([-0.3, -0.1, 0.2, 0.4], 0.9) == (-0.3, 0.4)


def test_calibration_does_not_import_the_model_module() -> None:
    source = Path(__file__).parents[2] / "advisor" / "throughput" / "_calibration.py"
    imported = {node.module for node in ast.walk(ast.parse(source.read_text()))
                if isinstance(node, ast.ImportFrom)}
    assert "advisor.throughput.transfer" not in imported


def test_get_params_round_trips() -> None:
    model = TransferModel(shipped_weight=0.2, similarity_tau=0.05)
    clone = TransferModel(**model.get_params())
    assert clone.get_params() == model.get_params()
    assert not math.isnan(clone.shipped_weight)
