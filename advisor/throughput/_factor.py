"""Low-rank factorization of the reference table, the second half of the throughput model.

Internal to ``TransferModel``. Log single-device throughput is modelled as

    log y[w, a] = m_w + b_a + u_w . v_a

(workload level, accelerator level, and ``rank`` interaction factors), fitted by alternating
ridge regressions on the measured cells only. A new workload is a new row: its level and
factors are fitted to its probes by ridge regression that shrinks the factors toward zero
(the mean workload), so one probe gives the mean profile and more probes bend it. An
accelerator with no column (or whose column is hidden) gets its level and factors from a
ridge regression on spec features fitted over the known accelerators; this is the PARIS-
style transfer written as matrix completion. The fitted rows' [level, factors] are kept
(``row_params``) so a new row can shrink toward a related one (its precision twin) instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["FactorFit", "fit_factors"]

FloatArray = npt.NDArray[np.float64]
_ITERATIONS = 40
_TINY = 1e-9


def _batched_ridge(design: FloatArray, mask: npt.NDArray[np.bool_], target: FloatArray,
                   penalty: FloatArray) -> FloatArray:
    """Per row i: ridge solution of target[i, mask[i]] on design[mask[i]] (shared design).

    Hand-written: scikit-learn has no ridge batched over masks with a per-term penalty
    (here a near-zero one on the level), and this runs 80 times per factorization."""
    weights = mask.astype(float)
    gram = np.einsum("na,ai,aj->nij", weights, design, design) + penalty
    rhs = np.einsum("na,ai->ni", weights * np.nan_to_num(target), design)
    return np.asarray(np.linalg.solve(gram, rhs[..., None])[..., 0])


def _spec_map(features: FloatArray, targets: FloatArray, mean: FloatArray, std: FloatArray,
              *, alpha: float) -> FloatArray:
    """Weights of [1, standardised features] -> targets: ``sklearn.linear_model.Ridge`` with
    an unpenalised intercept (zeros when no column has both)."""
    if not len(features):
        return np.zeros((features.shape[1] + 1, targets.shape[1]))
    from sklearn.linear_model import Ridge  # fitting only: predictions need no scikit-learn

    fitted = Ridge(alpha=alpha).fit((features - mean) / std, targets)
    return np.asarray(np.vstack([fitted.intercept_, fitted.coef_.T]))


@dataclass(frozen=True, slots=True)
class FactorFit:
    """Fitted accelerator side of the factorization plus the spec map for unknown columns."""

    levels: FloatArray        # b_a per column (NaN where the column had no measurement)
    factors: FloatArray       # v_a per column, (n_columns, rank)
    spec_weights: FloatArray  # ridge map [1, z(features)] -> [b, v]
    spec_mean: FloatArray
    spec_std: FloatArray
    row_params: FloatArray    # [m_w, u_w] per reference row (NaN rows had no measurement)

    def from_spec(self, features: FloatArray) -> tuple[float, FloatArray]:
        """(level, factors) of an accelerator known only by its spec features."""
        z = np.concatenate([[1.0], (features - self.spec_mean) / self.spec_std])
        out = z @ self.spec_weights
        return float(out[0]), np.asarray(out[1:])

    def column(self, index: int | None, features: FloatArray) -> tuple[float, FloatArray]:
        """(level, factors) of a column; from the spec map when it was never measured."""
        if index is not None and np.isfinite(self.levels[index]):
            return float(self.levels[index]), self.factors[index]
        return self.from_spec(features)

    def predict(self, probes: dict[int, float], probe_features: FloatArray,
                target: tuple[float, FloatArray], *, shrinkage: float,
                prior: FloatArray | None = None, prior_shrinkage: float = 0.1) -> float:
        """Log samples/s of a new workload at ``target`` from probes (column -> log y).

        Without ``prior`` the new row's factors shrink toward zero (the mean workload) and
        its level is free; with ``prior`` ([level, factors], e.g. from a precision twin) the
        whole row shrinks toward it with ``prior_shrinkage``. (A few-term ridge solved with
        numpy: it runs per prediction, where scikit-learn is never imported.)
        """
        pairs = [self.column(c, f) for c, f in zip(probes, probe_features, strict=True)]
        levels = np.array([p[0] for p in pairs])
        design = np.hstack([np.ones((len(pairs), 1)), np.array([p[1] for p in pairs])])
        y = np.fromiter(probes.values(), dtype=float, count=len(probes)) - levels
        if prior is not None and np.isfinite(prior).all():
            penalty = prior_shrinkage * np.eye(design.shape[1])
            solution = np.linalg.solve(design.T @ design + penalty,
                                       design.T @ y + penalty @ prior)
        else:
            penalty = shrinkage * np.eye(design.shape[1])
            penalty[0, 0] = _TINY
            solution = np.linalg.solve(design.T @ design + penalty, design.T @ y)
        level, factors = target
        return float(level + solution[0] + factors @ solution[1:])


def fit_factors(log_sps: FloatArray, features: FloatArray, *, rank: int, alpha: float,
                spec_alpha: float, seed: int = 0) -> FactorFit:
    """Alternating ridge fit of ``log_sps`` (NaN = not measured) and the spec map.

    ``alpha`` penalises the interaction factors of both sides, ``spec_alpha`` the spec map.
    Columns without any measurement keep NaN levels; rows without any are ignored.
    """
    observed = np.isfinite(log_sps)
    rows = observed.any(axis=1)
    x, mask = log_sps[rows], observed[rows]
    cols: npt.NDArray[np.bool_] = np.asarray(mask.any(axis=0))
    n, n_cols = x.shape
    rng = np.random.default_rng(seed)
    filled = np.where(mask, x, 0.0)
    level_w = filled.sum(axis=1) / np.maximum(mask.sum(axis=1), 1)
    level_a = (np.where(mask, filled - level_w[:, None], 0.0).sum(axis=0)
               / np.maximum(mask.sum(axis=0), 1))
    u = 0.1 * rng.standard_normal((n, rank))
    v = 0.1 * rng.standard_normal((n_cols, rank))
    penalty = alpha * np.eye(rank + 1)
    penalty[0, 0] = _TINY
    for _ in range(_ITERATIONS):
        design_a = np.hstack([np.ones((n_cols, 1)), v])
        sol = _batched_ridge(design_a, mask, x - level_a[None, :], penalty)
        level_w, u = sol[:, 0], sol[:, 1:]
        design_w = np.hstack([np.ones((n, 1)), u])
        sol = _batched_ridge(design_w, mask.T, (x - level_w[:, None]).T, penalty)
        level_a, v = sol[:, 0], sol[:, 1:]
    levels = np.where(cols, level_a, np.nan)
    usable = cols & np.isfinite(features).all(axis=1)
    spec_mean = features[usable].mean(axis=0) if usable.any() else np.zeros(features.shape[1])
    spec_std = features[usable].std(axis=0) if usable.any() else np.ones(features.shape[1])
    spec_std = np.where(spec_std > 0, spec_std, 1.0)
    spec_weights = _spec_map(features[usable], np.hstack([level_a[usable, None], v[usable]]),
                             spec_mean, spec_std, alpha=spec_alpha)
    row_params = np.full((len(log_sps), rank + 1), np.nan)
    row_params[rows] = np.hstack([level_w[:, None], u])
    return FactorFit(levels, np.where(cols[:, None], v, 0.0), spec_weights, spec_mean, spec_std,
                     row_params)
