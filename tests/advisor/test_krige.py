"""advisor.throughput._krige: the kriged precision shift and the row krige, alone and blended
into TransferModel (the spec prior: test_spec_prior.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.errors import AdvisorError
from advisor.throughput._krige import Twin, krige, shift_krige
from advisor.throughput._table import FloatArray, ReferenceTable
from advisor.throughput.estimate import WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()


def _table(log_sps: FloatArray) -> ReferenceTable:
    """A reference table over synthetic workloads ``w0..`` and accelerators ``a0..`` (spec
    features play no part in shift kriging)."""
    n_workloads, n_accelerators = log_sps.shape
    return ReferenceTable(
        [f"w{i}" for i in range(n_workloads)], ["mixed"] * n_workloads,
        np.full(n_workloads, np.nan), [f"a{i}" for i in range(n_accelerators)], log_sps,
        np.zeros((n_accelerators, 6)))


# -- shift kriging --------------------------------------------------------------------------

def _shift_case(rng: np.random.Generator, *, n_pairs: int, n_accelerators: int,
                own_constant: float, common: FloatArray | None = None,
                workload_common: float = 0.0, noise: float = 0.01,
                ) -> tuple[ReferenceTable, Twin, FloatArray]:
    """Row 0: the workload's fp32 twin; rows 2i+1 / 2i+2: pair i (mixed, fp32).

    log mixed - log fp32 = s_a + c_m (+ r_m * common_a) + noise, with the workload's own
    per-model constant ``own_constant`` and component ``workload_common``. Returns the
    table, the twin and the workload's true mixed row (not in the table).
    """
    speed = rng.normal(0, 0.5, n_accelerators)
    shift = rng.normal(0.5, 0.3, n_accelerators)
    loading = np.zeros(n_accelerators) if common is None else common

    def fp32() -> FloatArray:
        return np.asarray(rng.normal(4, 1) + speed + rng.normal(0, 0.2) * rng.normal(
            0, 1, n_accelerators))

    twin_row = fp32()
    truth = (twin_row + shift + own_constant + workload_common * loading
             + rng.normal(0, noise, n_accelerators))
    rows = [twin_row]
    for _ in range(n_pairs):
        base = fp32()
        mixed = (base + shift + rng.normal(0, 0.1) + rng.normal(0, 0.2) * loading
                 + rng.normal(0, noise, n_accelerators))
        rows += [mixed, base]
    pairs = [(2 * i + 1, 2 * i + 2) for i in range(n_pairs)]
    return _table(np.array(rows)), Twin([0], pairs), truth


def test_shift_krige_recovers_a_structured_shift() -> None:
    # The workload's own constant (+0.3) is unlike the reference models' (sd 0.1): the
    # probes reveal it, so kriging lands on the truth where twin + mean shift is 0.3 off.
    table, twin, truth = _shift_case(np.random.default_rng(0), n_pairs=6, n_accelerators=8,
                                     own_constant=0.3, noise=0.005)
    probes = {c: float(truth[c]) for c in (0, 2, 5)}
    pred = shift_krige(table, twin, probes, 7)
    assert pred is not None
    assert abs(pred - truth[7]) < 0.02
    shifts = np.array([table.log_sps[a] - table.log_sps[b] for a, b in twin.pairs])
    naive = table.log_sps[0, 7] + shifts[:, 7].mean()
    assert abs(naive - truth[7]) > 0.15


def test_shift_krige_leans_on_the_probe_whose_shift_co_varies() -> None:
    # a1 and a2 share a model-specific shift component (sd 0.2 over the reference pairs);
    # the workload's component is +0.4. Probes a1 (co-varies with the target a2), a3, a4.
    loading = np.zeros(8)
    loading[[1, 2]] = 1.0
    table, twin, truth = _shift_case(np.random.default_rng(1), n_pairs=30, n_accelerators=8,
                                     own_constant=0.0, common=loading, workload_common=0.4)
    probes = {c: float(truth[c]) for c in (1, 3, 4)}
    pred = shift_krige(table, twin, probes, 2)
    assert pred is not None
    # The naive view: twin + mean shift at the target + the mean probe deviation.
    shifts = np.array([table.log_sps[a] - table.log_sps[b] for a, b in twin.pairs])
    deviation = np.mean([truth[c] - table.log_sps[0, c] - shifts[:, c].mean() for c in probes])
    naive = table.log_sps[0, 2] + shifts[:, 2].mean() + deviation
    assert abs(pred - truth[2]) < 0.1
    assert abs(pred - truth[2]) < abs(naive - truth[2]) / 3


def test_shift_krige_ignores_a_probe_it_cannot_use() -> None:
    table, twin, truth = _shift_case(np.random.default_rng(2), n_pairs=6, n_accelerators=8,
                                     own_constant=0.1)
    table.log_sps[0, 6] = np.nan  # the twin has no value at a6: a probe there says nothing
    probes = {c: float(truth[c]) for c in (0, 2, 5)}
    assert shift_krige(table, twin, {**probes, 6: 9.9}, 7) == pytest.approx(
        shift_krige(table, twin, probes, 7))


def _none_case(change: str) -> tuple[ReferenceTable, Twin, dict[int, float]]:
    table, twin, truth = _shift_case(np.random.default_rng(3), n_pairs=6, n_accelerators=8,
                                     own_constant=0.0)
    probes = {c: float(truth[c]) for c in (0, 2, 5)}
    if change == "two pairs":
        twin = Twin(twin.rows, twin.pairs[:2])
    elif change == "twin misses target":
        table.log_sps[0, 7] = np.nan
    elif change == "no pair at target":
        table.log_sps[1:, 7] = np.nan
    elif change == "twin misses probes":
        table.log_sps[0, [0, 2, 5]] = np.nan
    elif change == "no pair at probes":
        table.log_sps[1:, [0, 2, 5]] = np.nan
    return table, twin, probes


@pytest.mark.parametrize("change", [
    "two pairs",             # fewer than 3 model pairs: no covariance to speak of
    "twin misses target",    # twin + shift needs the twin at the target
    "no pair at target",     # no mean shift at the target
    "twin misses probes",    # no probe's shift can be read off the twin
    "no pair at probes",     # no probe column has a mean shift
])
def test_shift_krige_is_none_when_not_applicable(change: str) -> None:
    table, twin, probes = _none_case(change)
    assert shift_krige(table, twin, probes, 7) is None


def test_shift_krige_applies_with_three_pairs() -> None:
    # The boundary of the row above: three pairs are enough.
    table, twin, truth = _shift_case(np.random.default_rng(3), n_pairs=6, n_accelerators=8,
                                     own_constant=0.0)
    probes = {c: float(truth[c]) for c in (0, 2, 5)}
    assert shift_krige(table, Twin(twin.rows, twin.pairs[:3]), probes, 7) is not None


def test_shift_krige_skips_a_pair_with_no_common_accelerator_quietly() -> None:
    table, twin, truth = _shift_case(np.random.default_rng(3), n_pairs=6, n_accelerators=8,
                                     own_constant=0.0)
    probes = {c: float(truth[c]) for c in (0, 2, 5)}
    expected = shift_krige(table, Twin(twin.rows, twin.pairs[1:]), probes, 7)
    mixed, fp32 = twin.pairs[0]
    table.log_sps[mixed, :4] = np.nan
    table.log_sps[fp32, 4:] = np.nan
    assert shift_krige(table, twin, probes, 7) == pytest.approx(expected)


# -- blended into TransferModel -------------------------------------------------------------

BENCH = ["P100", "V100-16GB-SXM2", "T4", "A10", "A10G", "L4", "A100-40GB-SXM", "H100-SXM",
         "RTX-3090", "RTX-4090"]
BENCH_PROBES = ("T4", "A10", "A100-40GB-SXM")
M0_MIXED = WorkloadFeatures(precision=None, name="m0/mixed")


def _bench_rows() -> tuple[list[ReferenceRow], dict[str, float]]:
    """Benchmark rows of m0..m6 at fp32 and mixed (log fp32 = level + speed + slope *
    factor; mixed = fp32 + per-accelerator shift + per-model constant + noise) without
    m0/mixed, and m0/mixed's true log samples/s. m0's slope and constant are unlike the
    others': only its twin knows the one, only its probes the other."""
    rng = np.random.default_rng(0)
    speed, factor = rng.normal(0, 0.5, len(BENCH)), rng.normal(0, 1, len(BENCH))
    shift = rng.normal(0.6, 0.3, len(BENCH))
    rows, truth = [], {}
    for i in range(7):
        level, slope = rng.normal(4, 1), 0.8 if i == 0 else rng.normal(0, 0.15)
        constant = 0.3 if i == 0 else rng.normal(0, 0.1)
        fp32 = level + speed + slope * factor
        mixed = fp32 + shift + constant + rng.normal(0, 0.01, len(BENCH))
        for model, values in ((f"m{i}/fp32", fp32), (f"m{i}/mixed", mixed)):
            if model == "m0/mixed":
                truth = dict(zip(BENCH, values.tolist(), strict=True))
                continue
            rows += [ReferenceRow("bench", model, "unknown", a, 1, 1, math.exp(v), "sample")
                     for a, v in zip(BENCH, values, strict=True)]
    return rows, truth


@pytest.mark.parametrize("target", ["H100-SXM", "RTX-4090", "L4"])
def test_transfer_model_blends_in_the_kriged_shift(target: str) -> None:
    rows, truth = _bench_rows()
    probes = {a: truth[a] for a in BENCH_PROBES}
    errors = {}
    for weight in (0.0, 0.5, 1.0):
        model = TransferModel(calibrate=False, krige_weight=weight).fit(rows, accelerators=SPECS)
        log_sps, case = model.predict_log(M0_MIXED, SPECS[target], probes)
        assert case == "seen3"
        errors[weight] = abs(log_sps - truth[target])
    assert errors[0.5] < errors[0.0] * 0.75  # the default weight improves on no kriging
    assert errors[1.0] < 0.03                # the kriged view alone is near exact here


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"krige_weight": 1.5}, "krige_weight"),            # above 1
    ({"krige_weight": -0.1}, "krige_weight"),           # below 0
    ({"spec_prior_weight": -0.1}, "spec_prior_weight"),  # below 0
    ({"spec_prior_weight": 2.0}, "spec_prior_weight"),   # above 1
    ({"row_krige_slope": -0.1}, "row_krige_slope"),      # below 0
])
def test_blend_weights_outside_the_unit_interval_are_rejected(
        kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(AdvisorError, match=name):
        TransferModel(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs", [{"krige_weight": 0.0}, {"krige_weight": 1.0},
                                    {"spec_prior_weight": 0.0}, {"spec_prior_weight": 1.0}])
def test_blend_weights_at_the_bounds_are_accepted(kwargs: dict[str, float]) -> None:
    model = TransferModel(**kwargs)  # type: ignore[arg-type]
    assert all(getattr(model, name) == value for name, value in kwargs.items())


# -- row kriging ----------------------------------------------------------------------------

def _loaded_rows(rng: np.random.Generator, n_rows: int, loading: FloatArray,
                 loadings: FloatArray) -> FloatArray:
    """log y = level + loading_r * loading + noise: columns with equal loading move together."""
    return np.array([rng.normal(4, 1) + u * loading + rng.normal(0, 0.02, len(loading))
                     for u in loadings[:n_rows]])


def test_krige_leans_on_the_column_that_co_varies_with_the_target() -> None:
    rng = np.random.default_rng(3)
    loading = np.array([1.0, 0.0, 0.0, 0.0, 1.0])  # columns 0 and 4 move together
    samples = _loaded_rows(rng, 12, loading, rng.normal(0, 0.5, 12))
    truth = 5.0 + 1.5 * loading  # a new row with a large loading
    values = {c: float(truth[c]) for c in (0, 1, 2, 3)}
    pred = krige(samples, values, 4)
    assert pred is not None and abs(pred - truth[4]) < 0.05
    mean = (samples - samples.mean(axis=1, keepdims=True)).mean(axis=0)
    plain = mean[4] + np.mean([values[c] - mean[c] for c in values])  # equal weights
    assert abs(plain - truth[4]) > 0.8


@pytest.mark.parametrize("change", ["two rows", "target unmeasured", "probes unmeasured"])
def test_krige_is_none_when_not_applicable(change: str) -> None:
    samples = np.random.default_rng(0).normal(0, 1, (6, 4))
    values = {0: 1.0, 1: 2.0}
    if change == "two rows":
        samples = samples[:2]
    elif change == "target unmeasured":
        samples[:, 3] = np.nan
    else:
        samples[:, :2] = np.nan
    assert krige(samples, values, 3) is None


def test_transfer_model_row_krige_weight_grows_with_the_probes() -> None:
    rows, truth = _bench_rows()
    own = WorkloadFeatures(precision=None, name="m0-mixed")  # no twin: the row view alone
    target = "RTX-4090"
    on = TransferModel(calibrate=False).fit(rows, accelerators=SPECS)
    off = TransferModel(calibrate=False, row_krige_slope=0.0).fit(rows, accelerators=SPECS)
    order = ["T4", "A10", "A100-40GB-SXM", "H100-SXM", "P100", "L4", "A10G", "RTX-3090"]
    gaps, errors = [], {}
    for k in (2, 3, 8):
        probes = {a: truth[a] for a in order[:k]}
        with_row = on.predict_log(own, SPECS[target], probes)[0]
        without = off.predict_log(own, SPECS[target], probes)[0]
        gaps.append(abs(with_row - without))
        errors[k] = (abs(with_row - truth[target]), abs(without - truth[target]))
    assert gaps[0] == 0.0 and 0 < gaps[1] < gaps[2]  # off below three probes, then growing
    assert errors[8][0] < errors[8][1]                # and better with many probes here
