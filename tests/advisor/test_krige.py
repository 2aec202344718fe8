"""advisor.throughput._krige: the kriged precision shift and the hierarchical spec prior, alone and
blended into TransferModel."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from advisor.errors import AdvisorError
from advisor.throughput._krige import SpecPrior, Twin, krige, shift_krige
from advisor.throughput._table import FloatArray, ReferenceTable, precision_twin, spec_features
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


# -- spec prior -----------------------------------------------------------------------------

MEASURED = ["P100", "V100-16GB-SXM2", "T4", "A10", "A10G", "L4", "A100-40GB-SXM",
            "A100-80GB-SXM", "H100-SXM", "RTX-A6000", "RTX-3090", "RTX-4090", "Quadro-RTX-8000"]
UNMEASURED = "L40S"  # has specs, no reference workload ran on it
MEAN_COEFS = np.array([0.3, 0.4, 0.2, 0.3, 0.1, 0.2])
# The family's coefficients vary along one direction: compute-bound vs bandwidth-bound.
DIRECTION = np.array([0.0, 0.0, 1.0, -1.0, 0.0, 0.0])


def _coefs(rng: np.random.Generator, t: float) -> FloatArray:
    return np.asarray(MEAN_COEFS + t * DIRECTION + rng.normal(0, 0.002, 6))


def _spec_rows(coefs: dict[str, FloatArray], levels: dict[str, float]) -> list[ReferenceRow]:
    """Benchmark-style rows whose log samples/s is exactly level + spec features @ coefs on
    the measured accelerators."""
    return [ReferenceRow("bench", name, "unknown", a, 1, 1,
                         math.exp(levels[name] + spec_features(SPECS[a]) @ beta), "sample")
            for name, beta in coefs.items() for a in MEASURED]


def _spec_table(coefs: dict[str, FloatArray], levels: dict[str, float]) -> ReferenceTable:
    """The table of ``_spec_rows``; the unmeasured accelerator is in it by its specs only."""
    table = ReferenceTable.build(_spec_rows(coefs, levels),
                                 {a: SPECS[a] for a in [*MEASURED, UNMEASURED]})
    assert np.isnan(table.log_sps[:, table.accelerators.index(UNMEASURED)]).all()
    return table


def _truth(table: ReferenceTable, level: float, beta: FloatArray) -> dict[str, float]:
    """The new workload's log samples/s on every accelerator of the table."""
    return {a: float(level + table.features[i] @ beta) for i, a in enumerate(table.accelerators)}


def _spec_predict(table: ReferenceTable, prior: SpecPrior, truth: dict[str, float],
                  probes: tuple[str, ...], *, row_mask: npt.NDArray[np.bool_] | None = None,
                  twin: Twin | None = None) -> float | None:
    columns = [table.accelerators.index(a) for a in probes]
    target = table.accelerators.index(UNMEASURED)
    return prior.predict({c: truth[a] for c, a in zip(columns, probes, strict=True)},
                         table.features[columns], table.features[target], row_mask=row_mask,
                         twin=twin)


def _naive(table: ReferenceTable, coefs: dict[str, FloatArray], truth: dict[str, float],
           probes: tuple[str, ...]) -> float:
    """The mean reference profile moved to the probes' mean level."""
    mean = np.mean(list(coefs.values()), axis=0)
    features = {a: table.features[i] for i, a in enumerate(table.accelerators)}
    level = np.mean([truth[a] - features[a] @ mean for a in probes])
    return float(features[UNMEASURED] @ mean + level)


def _family(seed: int) -> tuple[ReferenceTable, dict[str, FloatArray], dict[str, float]]:
    """Eight reference workloads of one family and a new one one sd off the family mean."""
    rng = np.random.default_rng(seed)
    coefs = {f"m{i}/fp32": _coefs(rng, rng.normal(0, 0.3)) for i in range(8)}
    table = _spec_table(coefs, {name: rng.normal(2, 1) for name in coefs})
    return table, coefs, _truth(table, 1.0, _coefs(rng, 0.3))


SPREAD_PROBES = ("P100", "T4", "H100-SXM")  # spread along DIRECTION


def test_spec_prior_predicts_an_unmeasured_accelerator() -> None:
    table, coefs, truth = _family(0)
    pred = _spec_predict(table, SpecPrior(table), truth, SPREAD_PROBES)
    assert pred is not None
    error = abs(pred - truth[UNMEASURED])
    assert error < 0.05
    # The probes placed the workload in the family: far better than the mean profile.
    assert error < abs(_naive(table, coefs, truth, SPREAD_PROBES) - truth[UNMEASURED]) / 4


def test_spec_prior_ignores_a_probe_on_a_part_without_a_spec() -> None:
    table, _, truth = _family(0)
    prior = SpecPrior(table)
    expected = _spec_predict(table, prior, truth, SPREAD_PROBES)
    columns = [table.accelerators.index(a) for a in SPREAD_PROBES]
    features = table.features[columns].copy()
    features[1] = np.nan  # T4 as if it had no spec: its probe cannot place the workload
    probes = {c: truth[a] for c, a in zip(columns, SPREAD_PROBES, strict=True)}
    probes[columns[1]] += 5.0
    target = table.features[table.accelerators.index(UNMEASURED)]
    got = prior.predict(probes, features, target)
    without = _spec_predict(table, prior, truth, (SPREAD_PROBES[0], SPREAD_PROBES[2]))
    assert got is not None and expected is not None and without is not None
    assert got == pytest.approx(without)
    features[:] = np.nan
    assert prior.predict(probes, features, target) is None


@pytest.mark.parametrize(("kept", "applies"), [
    (0, False),  # every reference workload masked out: no prior
    (2, False),  # two workloads are too few for a mean and covariance
    (3, True),   # three are enough
])
def test_spec_prior_needs_three_unmasked_workloads(kept: int, applies: bool) -> None:
    table, _, truth = _family(0)
    mask = np.arange(len(table.workloads)) < kept
    pred = _spec_predict(table, SpecPrior(table), truth, SPREAD_PROBES, row_mask=mask)
    assert (pred is not None) is applies


TWIN_SHIFT = np.array([0.0, 0.0, 0.3, -0.1, 0.0, 0.1])  # mixed minus fp32 coefficients


def _twin_coefs() -> tuple[dict[str, FloatArray], dict[str, float]]:
    """Six models at fp32 and mixed (mixed = fp32 coefficients + a common shift, level
    + 0.5) and the fp32 row of m0, far off the family in DIRECTION."""
    rng = np.random.default_rng(5)
    coefs: dict[str, FloatArray] = {}
    levels: dict[str, float] = {}
    for i in range(7):
        beta, level = _coefs(rng, 1.0 if i == 0 else rng.normal(0, 0.3)), rng.normal(2, 1)
        coefs[f"m{i}/fp32"], levels[f"m{i}/fp32"] = beta, level
        if i > 0:
            coefs[f"m{i}/mixed"] = beta + TWIN_SHIFT + rng.normal(0, 0.002, 6)
            levels[f"m{i}/mixed"] = level + 0.5
    return coefs, levels


def _twin_family() -> tuple[ReferenceTable, dict[str, float], Twin]:
    """The table of ``_twin_coefs``, m0 at mixed (the truth) and its twin."""
    coefs, levels = _twin_coefs()
    table = _spec_table(coefs, levels)
    rows, pairs = precision_twin(table, "m0", "mixed")
    assert len(rows) == 1 and len(pairs) == 6
    return table, _truth(table, 3.0, coefs["m0/fp32"] + TWIN_SHIFT), Twin(rows, pairs)


def test_spec_prior_from_the_twin_beats_the_population_with_one_probe() -> None:
    table, truth, twin = _twin_family()
    # A light ridge fits the exact linear profiles closely (the default's bias on m0's
    # far-off profile is ~0.1): this is about the prior, not about the ridge.
    prior = SpecPrior(table, alpha=0.01)
    population = _spec_predict(table, prior, truth, ("A10",))
    from_twin = _spec_predict(table, prior, truth, ("A10",), twin=twin)
    assert population is not None and from_twin is not None
    assert abs(from_twin - truth[UNMEASURED]) < 0.03
    assert abs(population - truth[UNMEASURED]) > 10 * abs(from_twin - truth[UNMEASURED])


def test_spec_prior_falls_back_to_the_population_when_the_twin_is_masked() -> None:
    table, truth, twin = _twin_family()
    prior = SpecPrior(table)
    mask = np.ones(len(table.workloads), dtype=bool)
    mask[list(twin.rows)] = False
    assert _spec_predict(table, prior, truth, ("A10",), row_mask=mask, twin=twin) == (
        _spec_predict(table, prior, truth, ("A10",), row_mask=mask))


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
        model = TransferModel(calibrate=False, krige_weight=weight).fit(rows, SPECS)
        log_sps, case = model.predict_log(M0_MIXED, SPECS[target], probes)
        assert case == "seen3"
        errors[weight] = abs(log_sps - truth[target])
    assert errors[0.5] < errors[0.0] * 0.75  # the default weight improves on no kriging
    assert errors[1.0] < 0.03                # the kriged view alone is near exact here


def test_transfer_model_blends_in_the_spec_prior_for_an_unmeasured_target() -> None:
    coefs, levels = _twin_coefs()
    rows = _spec_rows(coefs, levels)
    beta = coefs["m0/fp32"] + TWIN_SHIFT
    truth = {a: 3.0 + float(spec_features(SPECS[a]) @ beta) for a in [*MEASURED, UNMEASURED]}
    probes = {a: truth[a] for a in SPREAD_PROBES}
    errors = {}
    for weight in (0.0, 0.5):
        model = TransferModel(calibrate=False, spec_prior_weight=weight).fit(rows, SPECS)
        log_sps, case = model.predict_log(M0_MIXED, SPECS[UNMEASURED], probes)
        assert case == "unseen3"
        errors[weight] = abs(log_sps - truth[UNMEASURED])
    assert errors[0.5] < errors[0.0] * 0.75


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
    on = TransferModel(calibrate=False).fit(rows, SPECS)
    off = TransferModel(calibrate=False, row_krige_slope=0.0).fit(rows, SPECS)
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
