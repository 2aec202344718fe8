"""The low-rank factorization inside TransferModel: exact on rank-1 data, spec fallback."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.throughput._factor import fit_factors

RNG = np.random.default_rng(3)
LEVELS = RNG.normal(5, 2, 12)           # per workload
ACCELERATORS = RNG.normal(0, 0.5, 8)    # per accelerator
SLOPES = RNG.normal(0, 0.3, 12)         # workload sensitivity to one accelerator factor
FACTOR = RNG.normal(0, 1, 8)
TABLE = LEVELS[:, None] + ACCELERATORS[None, :] + SLOPES[:, None] * FACTOR[None, :]
# Spec features linear in the accelerator level and factor, so the spec map can recover them.
FEATURES = np.column_stack([ACCELERATORS, FACTOR, RNG.normal(0, 1, 8)])


def test_new_row_is_recovered_from_probes() -> None:
    fit = fit_factors(TABLE[1:], FEATURES, rank=1, alpha=1e-3, spec_alpha=1e-3)
    probes = {c: float(TABLE[0, c]) for c in (0, 2, 5)}
    pred = fit.predict(probes, FEATURES[[0, 2, 5]], fit.column(7, FEATURES[7]), shrinkage=1e-3)
    assert pred == pytest.approx(TABLE[0, 7], abs=0.02)


def test_hidden_column_comes_from_the_spec_map() -> None:
    hidden = TABLE[1:].copy()
    hidden[:, 7] = np.nan
    fit = fit_factors(hidden, FEATURES, rank=1, alpha=1e-3, spec_alpha=1e-3)
    assert np.isnan(fit.levels[7])
    probes = {c: float(TABLE[0, c]) for c in (0, 2, 5)}
    pred = fit.predict(probes, FEATURES[[0, 2, 5]], fit.column(7, FEATURES[7]), shrinkage=1e-3)
    assert pred == pytest.approx(TABLE[0, 7], abs=0.1)


def test_one_probe_gives_the_mean_profile_shifted() -> None:
    # With strong shrinkage the new row has no interaction: probe level plus column offsets.
    fit = fit_factors(TABLE[1:], FEATURES, rank=1, alpha=1e-3, spec_alpha=1e-3)
    pred = fit.predict({0: 10.0}, FEATURES[[0]], fit.column(3, FEATURES[3]), shrinkage=1e6)
    assert pred == pytest.approx(10.0 - fit.levels[0] + fit.levels[3], abs=1e-3)


def test_row_params_are_kept_for_fitted_rows() -> None:
    table = TABLE.copy()
    table[4] = np.nan
    fit = fit_factors(table, FEATURES, rank=1, alpha=1e-3, spec_alpha=1e-3)
    assert fit.row_params.shape == (12, 2)
    assert np.isnan(fit.row_params[4]).all()
    assert np.isfinite(np.delete(fit.row_params, 4, axis=0)).all()


def test_prior_pulls_a_one_probe_row_toward_its_twin() -> None:
    # One probe cannot reveal row 0's slope; a prior holding it (row 0's own fitted
    # parameters, as a precision twin would) recovers the row, the zero prior does not.
    fit = fit_factors(TABLE, FEATURES, rank=1, alpha=1e-3, spec_alpha=1e-3)
    target = fit.column(7, FEATURES[7])
    probe = {0: float(TABLE[0, 0])}
    twin = fit.predict(probe, FEATURES[[0]], target, shrinkage=1.0, prior=fit.row_params[0],
                       prior_shrinkage=1.0)
    mean = fit.predict(probe, FEATURES[[0]], target, shrinkage=1.0)
    assert twin == pytest.approx(TABLE[0, 7], abs=0.05)
    assert abs(twin - TABLE[0, 7]) < abs(mean - TABLE[0, 7])
