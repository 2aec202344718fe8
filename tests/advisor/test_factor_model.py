"""The low-rank factorization inside TransferModel: exact on rank-1 data, spec fallback."""

from __future__ import annotations

import numpy as np
import pytest

from advisor._factor import fit_factors

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
