"""advisor.throughput._krige: the hierarchical spec prior (a new workload's log samples/s on
an accelerator no reference workload ran on, from the specs)."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest

from advisor.throughput._krige import SpecPrior, Twin
from advisor.throughput._table import FloatArray, ReferenceTable, precision_twin, spec_features
from advisor.throughput.estimate import WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.transfer import TransferModel
from pricing import load_accelerators

SPECS = load_accelerators()

MEASURED = ["P100", "V100-16GB-SXM2", "T4", "A10", "A10G", "L4", "A100-40GB-SXM",
            "A100-80GB-SXM", "H100-SXM", "RTX-A6000", "RTX-3090", "RTX-4090", "Quadro-RTX-8000"]
UNMEASURED = "L40S"  # has specs, no reference workload ran on it
MEAN_COEFS = np.array([0.3, 0.4, 0.2, 0.3, 0.1, 0.2, 0.1])
# The family's coefficients vary along one direction: compute-bound vs bandwidth-bound.
DIRECTION = np.array([0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 0.0])


def _coefs(rng: np.random.Generator, t: float) -> FloatArray:
    return np.asarray(MEAN_COEFS + t * DIRECTION + rng.normal(0, 0.002, len(MEAN_COEFS)))


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


TWIN_SHIFT = np.array([0.0, 0.0, 0.3, -0.1, 0.0, 0.1, 0.0])  # mixed minus fp32 coefficients


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
            coefs[f"m{i}/mixed"] = beta + TWIN_SHIFT + rng.normal(0, 0.002, len(TWIN_SHIFT))
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


M0_MIXED = WorkloadFeatures(precision=None, name="m0/mixed")


def test_transfer_model_blends_in_the_spec_prior_for_an_unmeasured_target() -> None:
    coefs, levels = _twin_coefs()
    rows = _spec_rows(coefs, levels)
    beta = coefs["m0/fp32"] + TWIN_SHIFT
    truth = {a: 3.0 + float(spec_features(SPECS[a]) @ beta) for a in [*MEASURED, UNMEASURED]}
    probes = {a: truth[a] for a in SPREAD_PROBES}
    errors = {}
    for weight in (0.0, 0.5):
        model = TransferModel(calibrate=False, spec_prior_weight=weight).fit(rows, accelerators=SPECS)
        log_sps, case = model.predict_log(M0_MIXED, SPECS[UNMEASURED], probes)
        assert case == "unseen3"
        errors[weight] = abs(log_sps - truth[UNMEASURED])
    assert errors[0.5] < errors[0.0] * 0.75


@pytest.mark.parametrize(("accelerator", "flags"), [
    ("P100", (0.0, 0.0)), ("V100-16GB-SXM2", (1.0, 0.0)), ("T4", (1.0, 0.0)),
    ("A100-80GB-SXM", (1.0, 1.0)), ("L40S", (1.0, 1.0))])
def test_spec_features_mark_the_architecture_class(accelerator: str,
                                                   flags: tuple[float, float]) -> None:
    # tensor cores, bf16: Pascal / Volta-Turing / Ampere and newer, whose kernels differ
    # beyond the peak figures (a V100 target is no slower A100)
    assert tuple(spec_features(SPECS[accelerator])[-2:]) == flags


def test_a_class_offset_beyond_the_specs_reaches_an_unmeasured_part() -> None:
    rng = np.random.default_rng(3)
    beta = MEAN_COEFS.copy()
    beta[-1] = 0.4  # the bf16 class runs 1.5x what its peak figures alone would say
    coefs = {f"m{i}/fp32": beta + rng.normal(0, 0.002, len(beta)) for i in range(8)}
    table = _spec_table(coefs, {name: rng.normal(2, 1) for name in coefs})
    truth = _truth(table, 1.0, beta)
    pred = _spec_predict(table, SpecPrior(table), truth, SPREAD_PROBES)
    assert pred is not None and abs(pred - truth[UNMEASURED]) < 0.05
