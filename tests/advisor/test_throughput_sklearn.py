"""TransferModel is a scikit-learn estimator: clone and the parameter API round trip,
``cross_validate`` with a group splitter is leave-one-model-out (held-out predictions equal a
hand-written loop), the ridge fits are scikit-learn's with the old normal equations'
coefficients, and the cached model recommend loads holds no scikit-learn object."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import LeaveOneGroupOut, cross_val_predict, cross_validate

from advisor.errors import AdvisorError
from advisor.profiling import reference_op_mixes
from advisor.spec import Precision
from advisor.throughput._factor import fit_factors
from advisor.throughput._no_probe import reference_features
from advisor.throughput._plain import PlainTransferModel
from advisor.throughput._table import ReferenceTable, fit_ridge
from advisor.throughput.estimate import Measurement, WorkloadFeatures
from advisor.throughput.model_cache import cached_transfer_model
from advisor.throughput.reference import REFERENCE_FLOPS_PER_SAMPLE, load_reference
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()
# lambda_v1 rows of the models with shipped FLOPs: no-probe predictions exist for them
ROWS = [r for r in load_reference()
        if r.generation == "lambda_v1" and r.model in REFERENCE_FLOPS_PER_SAMPLE
        and r.accelerator in SPECS]
MODELS = [r.model for r in ROWS]


def test_clone_keeps_the_parameters_and_drops_the_fit() -> None:
    model = TransferModel(calibrate=False, tau=0.1, own_generation=None).fit(
        ROWS, accelerators=SPECS)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert copy is not model and not hasattr(copy, "table_")


def test_set_params_round_trips_and_fit_checks_them() -> None:
    model = TransferModel()
    assert model.set_params(tau=0.2, top_k=4) is model
    assert model.get_params()["tau"] == 0.2 and model.get_params()["top_k"] == 4
    assert TransferModel(**model.get_params()).get_params() == model.get_params()
    model.set_params(tau=0.0)  # unchecked, as in scikit-learn ...
    with pytest.raises(AdvisorError, match="tau must be > 0"):
        model.fit(ROWS, accelerators=SPECS)  # ... until fit


def test_y_replaces_the_rows_samples_per_second() -> None:
    doubled = TransferModel(calibrate=False).fit(
        ROWS, [2 * r.samples_per_second for r in ROWS], accelerators=SPECS)
    plain = TransferModel(calibrate=False).fit(ROWS, accelerators=SPECS)
    assert np.allclose(doubled.table_.log_sps, plain.table_.log_sps + np.log(2), equal_nan=True)
    with pytest.raises(AdvisorError, match="one samples/s per row"):
        TransferModel().fit(ROWS, [1.0], accelerators=SPECS)


def test_leave_one_model_out_is_cross_validate_with_a_group_splitter() -> None:
    model = TransferModel(calibrate=False)
    scores = cross_validate(model, ROWS, groups=MODELS, cv=LeaveOneGroupOut(),
                            params={"accelerators": SPECS})
    assert len(scores["test_score"]) == len(set(MODELS))
    assert np.isfinite(scores["test_score"]).all()
    held_out = cross_val_predict(model, ROWS, groups=MODELS, cv=LeaveOneGroupOut(),
                                 params={"accelerators": SPECS})
    by_hand = np.full(len(ROWS), np.nan)
    for name in sorted(set(MODELS)):
        rest = [r for r in ROWS if r.model != name]
        fitted = TransferModel(calibrate=False).fit(rest, accelerators=SPECS)
        mine = [i for i, r in enumerate(ROWS) if r.model == name]
        by_hand[mine] = fitted.predict([ROWS[i] for i in mine])
    assert np.isfinite(held_out).all()
    np.testing.assert_allclose(held_out, by_hand, rtol=1e-12)


def test_leave_one_accelerator_out_is_the_same_with_accelerator_groups() -> None:
    accelerators = [r.accelerator for r in ROWS]
    scores = cross_validate(TransferModel(calibrate=False), ROWS, groups=accelerators,
                            cv=LeaveOneGroupOut(), params={"accelerators": SPECS})
    assert len(scores["test_score"]) == len(set(accelerators))
    assert (scores["test_score"] > 0.8).all()  # R² of samples/s on the held-out part


def test_predict_is_the_no_probe_estimate_and_nan_without_flops() -> None:
    model = TransferModel(calibrate=False).fit(load_reference(), accelerators=SPECS)
    row = next(r for r in ROWS if r.accelerator == "H100-SXM" and r.accelerator_count > 1)
    other = next(r for r in load_reference() if r.model == "maskrcnn")  # no FLOPs, no op mix
    predicted = model.predict([row, other])
    assert np.isnan(predicted[1])
    features = reference_features(row, reference_op_mixes())
    assert features.op_mix is not None and features.precision is not None
    assert predicted[0] == model.estimate(features, SPECS["H100-SXM"],
                                          count=row.accelerator_count).samples_per_second


def _normal_equations(table: ReferenceTable, alpha: float) -> np.ndarray:
    """The ridge coefficients as the code solved them before scikit-learn."""
    x = table.features
    usable = np.isfinite(x).all(axis=1)
    z = (x - x[usable].mean(axis=0)) / np.where(x[usable].std(axis=0) > 0,
                                                  x[usable].std(axis=0), 1.0)
    design = np.hstack([np.ones((len(z), 1)), z])
    penalty = alpha * np.eye(design.shape[1])
    penalty[0, 0] = 0.0
    coefs = np.full((len(table.workloads), design.shape[1]), np.nan)
    for w in range(len(table.workloads)):
        mask = usable & np.isfinite(table.log_sps[w])
        if mask.sum() >= 3:
            d = design[mask]
            coefs[w] = np.linalg.solve(d.T @ d + penalty, d.T @ table.log_sps[w, mask])
    return coefs


@pytest.mark.parametrize("alpha", [0.1, 1.0, 10.0])
def test_fit_ridge_is_sklearn_ridge_with_the_normal_equations_coefficients(alpha: float) -> None:
    table = ReferenceTable.build(load_reference(), SPECS)
    got = fit_ridge(table, alpha=alpha)[:, :8]
    np.testing.assert_allclose(got, _normal_equations(table, alpha), atol=1e-8)


def test_the_spec_map_is_the_ridge_with_a_free_intercept() -> None:
    table = ReferenceTable.build(load_reference(), SPECS)
    fit = fit_factors(table.log_sps, table.features, rank=2, alpha=0.1, spec_alpha=1.0)
    usable = np.isfinite(fit.levels) & np.isfinite(table.features).all(axis=1)
    z = np.hstack([np.ones((int(usable.sum()), 1)),
                   (table.features[usable] - fit.spec_mean) / fit.spec_std])
    penalty = np.eye(z.shape[1])
    penalty[0, 0] = 0.0
    targets = np.hstack([fit.levels[usable, None], fit.factors[usable]])
    expected = np.linalg.lstsq(z.T @ z + penalty, z.T @ targets, rcond=None)[0]
    np.testing.assert_allclose(fit.spec_weights, expected, atol=1e-8)


def test_the_cached_model_is_plain_and_loads_without_sklearn(tmp_path: Path) -> None:
    model = cached_transfer_model(SPECS, cache_dir=tmp_path)
    assert type(model) is PlainTransferModel
    blob = pickle.dumps(model)
    assert b"sklearn" not in blob and b"scipy" not in blob
    (tmp_path / "model.pkl").write_bytes(blob)
    code = ("import pickle, sys; from pathlib import Path; "
            f"m = pickle.loads(Path({str(tmp_path / 'model.pkl')!r}).read_bytes()); "
            "from advisor.throughput import Measurement; from pricing import load_accelerators; "
            "from advisor.throughput.estimate import WorkloadFeatures; "
            "s = load_accelerators(); "
            "m.estimate(WorkloadFeatures(precision=None, name='w'), s['L4'], "
            "measurements=[Measurement('A10G', 400.0), Measurement('T4', 150.0)]); "
            "print(sorted(n for n in ('sklearn', 'scipy') if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# Estimates of the default model recorded before it became a scikit-learn estimator
# (name, accelerator, devices, probes -> samples/s, low, high).
RESNET = WorkloadFeatures(precision=Precision.FP16, flops_per_sample=3 * 4.1e9,
                          name="resnet50/mixed")
ANON = WorkloadFeatures(precision=None, name="mine")
PROBES = [Measurement("A10G", 400.0), Measurement("T4", 150.0),
          Measurement("A100-40GB-SXM", 1300.0)]
BEFORE = [
    (RESNET, "H100-SXM", 1, 0, (11196.195949032255, 5252.348403876859, 24039.659548357908)),
    # moved -2% to -4% when the reference rows were labelled as Lambda's command lines ran them
    # (NCF's 80 GB cells fp32, the 2080 Ti BERT-large cells dropped) and NCF, Transformer-XL
    # and GNMT were traced as apex O2 (2026-11-27): the per-device corrections refit
    (ANON, "H100-SXM", 1, 3, (2071.096275025556, 1648.9949882487074, 2715.608916825996)),
    # TPU-v5e: its MLPerf GPT-3 ratio is int8 (AQT) beside the H100's fp8; since 2026-11-27
    # carried to the harness by the anchor's own stack factor (_stack_factor: the fp8 gain
    # over the int8 gain moves it, +57%). Earlier: its interval widened with the Gaudi/A100
    # MLPerf BERT pair's v1.1 and v2.0 rows and MLPerf v0.5's ResNet-50 rows (published spread);
    # -1.4% when MLPerf v3.0's A100-80GB, L4 and RetinaNet rows entered (2026-11-27: the
    # stack factors' and the spread's pairs); -16% when probes on other parts came to move a
    # part with no reference rows by their misses (2026-11-27: its no-probe 2,370 moved by
    # the mean of A10G's and T4's log misses, 400 against 1,744 and 150 against 1,186, the
    # whole of each across vendors; before, the pooled model re-predicted it from their
    # columns: 482.6); +1.3% when the PCIe A100s' and the A40's MLPerf ResNet-50 and RetinaNet
    # rows entered the stack factors (2026-11-27: the typical factor and the speed slope)
    (RESNET, "TPU-v5e", 1, 2, (408.9204633084353, 190.21083797879297, 885.4188777408654)),
    # L4, anchored since 2026-11-27 to its MLPerf v3.0/v3.1 rows (before: a prior borrowing its
    # peers' corrections, 240.9 in 178.1-355.7): the A10G probe sets the anchors' level, and
    # the interval is the published case's, the anchor's no-probe error (an unknown model:
    # the FLOPs prior's) with the ratios' spread; +4.6% when the PCIe A100s' and the A40's
    # MLPerf rows entered the stack factors (the speed slope that brackets a cousin)
    (ANON, "L4", 1, 1, (244.3700718638205, 113.66962604435726, 529.1245956060601)),
]


def test_the_default_model_predicts_as_before(tmp_path: Path) -> None:
    model = cached_transfer_model(SPECS, cache_dir=tmp_path)
    for workload, name, count, probes, expected in BEFORE:
        got = model.estimate(workload, SPECS[name], count=count, measurements=PROBES[:probes])
        assert (got.samples_per_second, got.samples_per_second_low,
                got.samples_per_second_high) == pytest.approx(expected, rel=1e-9)
