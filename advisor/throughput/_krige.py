"""Two more views of the reference table for ``TransferModel``: kriging of the precision
shift (target measured in the reference) and a hierarchical spec regression (target known
by its specs only).

**Shift kriging.** When the reference holds the workload's precision twin (the same model
at the other precision), the workload is the twin plus a *shift* vector over accelerators.
The shift rows of the reference's model pairs (mixed minus fp32 of one model) give the
shift's mean per accelerator and its covariance between accelerators; the probes give the
shift on the probed accelerators, and ordinary kriging (best linear unbiased prediction
with an unknown level) carries it to the target. Unlike a ratio average it leans on the
probes whose shift co-varies most with the target's.

**Spec prior.** Every reference workload's log throughput is a ridge regression on the
accelerators' spec features; the coefficients' mean and covariance over the reference
workloads form a prior (around the twin's coefficients plus the mean precision shift, when
there is a twin), and the probes update it as Bayesian linear regression with a free level.
The posterior predicts an accelerator no reference workload ran on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from advisor.throughput._table import FloatArray, ReferenceTable

__all__ = ["SpecPrior", "Twin", "krige", "shift_krige", "twin_and_shifts"]

_MIN_ROWS = 3
_FREE_LEVEL_VARIANCE = 100.0
_JITTER = 1e-6
KRIGE_NUGGET = 0.003  # log-space noise variance added to the shift covariance
SPEC_PRIOR_ALPHA = 0.3  # ridge penalty of each reference workload's spec regression
SPEC_PRIOR_NOISE = 0.01  # log-space variance of a probe around the spec regression


@dataclass(frozen=True, slots=True)
class Twin:
    """The workload's precision twin rows and every (this precision, other) model pair."""

    rows: Sequence[int]
    pairs: Sequence[tuple[int, int]]


def _nanmean(values: FloatArray, axis: int) -> FloatArray:
    """Mean over the finite values along ``axis``; NaN (and no warning) where there are none."""
    counts = np.isfinite(values).sum(axis=axis)
    return np.asarray(np.where(counts > 0, np.nansum(values, axis=axis) / np.maximum(counts, 1),
                               np.nan))


def _twin_row(table: ReferenceTable, twin: Twin) -> FloatArray:
    """Mean log throughput of the twin rows per accelerator (NaN where none measured)."""
    return _nanmean(table.log_sps[list(twin.rows)], axis=0)


def twin_and_shifts(params: FloatArray, twin: Twin, usable: npt.NDArray[np.bool_],
                    ) -> tuple[FloatArray, FloatArray] | None:
    """The mean of the ``usable`` twin rows of ``params`` (one row per reference workload)
    and each usable model pair's difference (this precision minus the other); None without
    a usable twin row or pair."""
    twins = [t for t in twin.rows if usable[t]]
    shifts = np.array([params[a] - params[b] for a, b in twin.pairs if usable[a] and usable[b]])
    if not twins or not len(shifts):
        return None
    return params[twins].mean(axis=0), shifts


def krige(samples: FloatArray, values: dict[int, float], target: int,
          *, nugget: float = KRIGE_NUGGET) -> float | None:
    """Ordinary kriging of one new row at column ``target`` from its ``values`` at other
    columns; the rows of ``samples`` (NaN = not measured) give the mean per column and the
    covariance between columns, each row centred on its own level, and the new row's level
    is free (the weights sum to one). None when too few rows or no usable value.
    Hand-written: the covariance is the rows' empirical one over pairwise-observed cells, which
    no scikit-learn Gaussian-process kernel expresses."""
    if len(samples) < _MIN_ROWS:
        return None
    centred = samples - _nanmean(samples, axis=1)[:, None]
    observed = np.isfinite(centred)
    mean = _nanmean(centred, axis=0)
    if not np.isfinite(mean[target]):
        return None
    columns = [c for c, v in values.items() if np.isfinite(v) and np.isfinite(mean[c])]
    if not columns:
        return None
    residual = np.where(observed, centred - mean, 0.0)
    chosen = [*columns, target]
    mask = observed[:, chosen].astype(float)
    pair_counts = mask.T @ mask
    cov = np.where(pair_counts >= _MIN_ROWS,
                   (residual[:, chosen].T @ residual[:, chosen]) / np.maximum(pair_counts, 1), 0.0)
    cov += nugget * np.eye(len(chosen))
    k = len(columns)
    system = np.zeros((k + 1, k + 1))
    system[:k, :k] = cov[:k, :k]
    system[:k, k] = system[k, :k] = 1.0
    try:
        weights = np.linalg.solve(system, np.append(cov[:k, k], 1.0))[:k]
    except np.linalg.LinAlgError:
        return None
    return float(mean[target] + weights @ (np.array([values[c] for c in columns]) - mean[columns]))


def shift_krige(table: ReferenceTable, twin: Twin, probes: dict[int, float], target: int,
                *, nugget: float = KRIGE_NUGGET) -> float | None:
    """Log samples/s at the target column: twin + kriged shift; None when not applicable."""
    base = _twin_row(table, twin)
    if not np.isfinite(base[target]):
        return None
    shifts = np.array([table.log_sps[a] - table.log_sps[b] for a, b in twin.pairs])
    shift = krige(shifts, {c: y - base[c] for c, y in probes.items()}, target, nugget=nugget)
    return None if shift is None else float(base[target] + shift)


class SpecPrior:
    """Per reference workload ridge coefficients of log throughput on spec features."""

    def __init__(self, table: ReferenceTable, *, alpha: float = SPEC_PRIOR_ALPHA) -> None:
        features = table.features
        measured = np.isfinite(table.log_sps).any(axis=0) & np.isfinite(features).all(axis=1)
        self.mean_ = features[measured].mean(axis=0) if measured.any() else np.zeros(
            features.shape[1])
        std = features[measured].std(axis=0) if measured.any() else np.ones(features.shape[1])
        self.std_ = np.where(std > 0, std, 1.0)
        design = self.design(features)
        penalty = alpha * np.eye(design.shape[1])
        penalty[0, 0] = _JITTER
        self.coefs_ = np.full((len(table.workloads), design.shape[1]), np.nan)
        for w in range(len(table.workloads)):
            rows = measured & np.isfinite(table.log_sps[w])
            if rows.sum() >= _MIN_ROWS:
                d = design[rows]
                self.coefs_[w] = np.linalg.solve(d.T @ d + penalty, d.T @ table.log_sps[w, rows])

    def design(self, features: FloatArray) -> FloatArray:
        """[1, standardised features] per row of ``features`` (NaN rows stay NaN)."""
        z = (np.atleast_2d(features) - self.mean_) / self.std_
        return np.hstack([np.ones((len(z), 1)), z])

    def predict(self, probes: dict[int, float], probe_features: FloatArray,
                target_features: FloatArray, *, noise: float = SPEC_PRIOR_NOISE,
                row_mask: npt.NDArray[np.bool_] | None = None,
                twin: Twin | None = None) -> float | None:
        """Posterior prediction at ``target_features`` from the probes; None without prior."""
        usable = np.isfinite(self.coefs_).all(axis=1)
        if row_mask is not None:
            usable &= row_mask
        prior = self._twin_prior(twin, usable) if twin is not None else None
        if prior is None:
            if usable.sum() < _MIN_ROWS:
                return None
            coefs = self.coefs_[usable]
            prior = coefs.mean(axis=0), np.cov(coefs.T)
        mean, cov = prior
        cov = cov + _JITTER * np.eye(len(mean))
        cov[0, :] = cov[:, 0] = 0.0
        cov[0, 0] = _FREE_LEVEL_VARIANCE
        design = self.design(probe_features)
        y = np.fromiter(probes.values(), dtype=float, count=len(probes))
        known = np.isfinite(design).all(axis=1)  # probes on parts without a spec say nothing
        if not known.any():
            return None
        design, y = design[known], y[known]
        precision = np.linalg.inv(cov)
        posterior = np.linalg.solve(design.T @ design / noise + precision,
                                    design.T @ y / noise + precision @ mean)
        return float((self.design(target_features) @ posterior)[0])

    def _twin_prior(self, twin: Twin, usable: npt.NDArray[np.bool_],
                    ) -> tuple[FloatArray, FloatArray] | None:
        """Twin's coefficients plus the mean shift of the model pairs, and the shifts' spread."""
        found = twin_and_shifts(self.coefs_, twin, usable)
        if found is None or len(found[1]) < _MIN_ROWS:
            return None
        twin_row, shifts = found
        return twin_row + shifts.mean(axis=0), np.cov(shifts.T)
