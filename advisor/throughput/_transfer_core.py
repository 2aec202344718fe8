"""The numerical core of ratio transfer (PARIS / Gavel style), on a ``ReferenceTable``.

A workload W with probes ``y_p`` (log samples/s on accelerators p) is predicted on a target
X by every reference workload j that was measured on X and on at least one probe:

    pred_j = log j(X) + mean_p (y_p - log j(p))

j's offsets ``y_p - log j(p)`` are constant when j behaves like W on the probes; their spread
``disp_j`` sets j's weight ``exp(-0.5 (disp_j / tau)^2)``. When too few reference workloads
know X, ``log j(X)`` comes from j's ridge regression on spec features instead.

``blend_predict`` averages this with the low-rank factorization's prediction (see
``advisor.throughput._factor``), in log space, with the factor weight of the case (target column
measured in the reference or not), and then with the views of ``advisor.throughput._krige``: the
kriged precision shift when the workload has a twin and the target is measured, the
hierarchical spec regression when the target is known by its specs only; last the probes'
two-term time fit (``advisor.throughput._time_fit``) when the target is known by its specs only
or is of an architecture class none of the probes has.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from advisor.throughput._factor import FactorFit
from advisor.throughput._krige import SpecPrior, Twin, krige, shift_krige
from advisor.throughput._table import FloatArray, ReferenceTable, ridge_predict
from advisor.throughput._time_fit import time_fit_predict

__all__ = ["ROW_KRIGE_MAX", "Query", "TransferResult", "TransferSettings", "blend_predict",
           "transfer_predict"]

ROW_KRIGE_MAX = 0.7  # most weight the kriged row gets, however many probes


@dataclass(frozen=True, slots=True)
class TransferSettings:
    """The hyper-parameters the transfer reads, taken from ``PlainTransferModel``'s (their
    defaults and meaning are stated there, once)."""

    tau: float
    single_probe_dispersion: float
    precision_mismatch_weight: float
    min_neighbours: int
    top_k: int
    factor_weight: float
    factor_weight_unseen: float
    factor_shrinkage: float
    twin_shrinkage: float
    krige_weight: float
    spec_prior_weight: float
    row_krige_slope: float
    time_fit_weight: float


@dataclass(frozen=True, slots=True)
class TransferResult:
    """Predicted log samples/s and how it was obtained."""

    log_sps: float
    regression: bool          # True when the target came from spec regressions
    neighbours: float         # effective number of reference workloads used


def _weights(offsets: FloatArray, settings: TransferSettings, n_probes: int,
             ) -> tuple[FloatArray, FloatArray]:
    """(anchor, log weight) per reference workload from its offset matrix (NaN = not measured)."""
    counts = np.isfinite(offsets).sum(axis=1)
    with np.errstate(invalid="ignore"):
        anchor = np.where(counts > 0, np.nansum(offsets, axis=1) / np.maximum(counts, 1), np.nan)
        squared = np.nansum((offsets - anchor[:, None]) ** 2, axis=1)
    missing = n_probes - counts
    prior = settings.single_probe_dispersion ** 2
    # Probes j has no measurement on count as one typical dispersion each.
    dispersion = np.sqrt((squared + missing * prior + (prior if n_probes == 1 else 0.0))
                         / np.maximum(n_probes, 1))
    log_weight = -0.5 * (dispersion / settings.tau) ** 2
    return anchor, np.where(counts > 0, log_weight, -np.inf)


@dataclass(frozen=True)
class Query:
    """What one prediction asks: the probes (table column -> log samples/s), the target
    column (None: an accelerator known by its spec features only), the target's spec
    features, which reference rows may take part (None: all), the workload's precision
    key (None: any; otherwise rows of another precision weigh ``precision_mismatch_weight``),
    the datasheet peak its step runs at (``fp32`` or ``mixed``; None: unknown, no time
    fit) and whether the target's architecture class (tensor cores, bf16) is none of the
    probes' (the ratio transfer then extrapolates and the time fit joins in)."""

    probes: dict[int, float]
    target: int | None
    target_features: FloatArray
    row_mask: npt.NDArray[np.bool_] | None = None
    precision_key: str | None = None
    peak: str | None = None
    unlike_probes: bool = False


def transfer_predict(table: ReferenceTable, coefs: FloatArray, query: Query, *,
                     settings: TransferSettings) -> TransferResult | None:
    """Predict log samples/s on the target column (or spec features when the table has no
    column for it) from probe columns; None when no reference workload overlaps the probes.
    """
    probes, target, row_mask = query.probes, query.target, query.row_mask
    rows = np.ones(len(table.workloads), dtype=bool) if row_mask is None else row_mask.copy()
    cols = np.fromiter(probes, dtype=int, count=len(probes))
    y = np.fromiter(probes.values(), dtype=float, count=len(probes))
    probe_logs = table.log_sps[:, cols].copy()
    for k, c in enumerate(cols):  # a probe on an accelerator no reference workload ran on
        if not np.isfinite(probe_logs[:, k]).any() and np.isfinite(table.features[c]).all():
            probe_logs[:, k] = ridge_predict(coefs, table.features[c])
    offsets = y[None, :] - probe_logs
    anchor, log_weight = _weights(offsets, settings, len(probes))
    if query.precision_key is not None:
        log_weight = log_weight + np.where(np.array(table.precisions) == query.precision_key, 0.0,
                                           np.log(settings.precision_mismatch_weight))
    log_weight = np.where(rows, log_weight, -np.inf)
    measured = (table.log_sps[:, target] if target is not None
                else np.full(len(table.workloads), np.nan))
    direct = np.isfinite(measured) & np.isfinite(log_weight)
    regression = int(direct.sum()) < settings.min_neighbours
    if regression:
        base = ridge_predict(coefs, query.target_features)
        base = np.where(np.isfinite(measured), measured, base)
    else:
        base = measured
    usable = np.isfinite(base) & np.isfinite(anchor) & np.isfinite(log_weight)
    if not usable.any():
        return None
    shifted = np.where(usable, log_weight - log_weight[usable].max(), -np.inf)
    w = np.exp(shifted)
    if settings.top_k and usable.sum() > settings.top_k:
        cutoff = np.sort(w)[-settings.top_k]
        w = np.where(w >= cutoff, w, 0.0)
    pred = base + anchor
    total = float(w.sum())
    effective = total ** 2 / float((w ** 2).sum())
    return TransferResult(float(np.nansum(w * pred) / total), regression, effective)


def _mix(log_sps: float, weight: float, view: float | None) -> float:
    """``log_sps`` moved ``weight`` of the way to ``view``; unchanged when the view has no
    finite value."""
    if view is None or not np.isfinite(view):
        return log_sps
    return float((1 - weight) * log_sps + weight * view)


def blend_predict(table: ReferenceTable, coefs: FloatArray, factors: FactorFit | None,
                  query: Query, *, settings: TransferSettings, prior: FloatArray | None = None,
                  twin: Twin | None = None,
                  spec_prior: SpecPrior | None = None) -> TransferResult | None:
    """``transfer_predict`` averaged in log space with the factorization's prediction
    (whose new row shrinks toward ``prior`` when given and ``twin_shrinkage`` > 0), then
    with the kriged shift from ``twin`` (target measured in the reference) or the
    ``spec_prior`` posterior (target known by its specs only), then with the kriged row
    (measured target, three probes or more), and last with the probes' time fit (target
    known by its specs only, or of an architecture class none of the probes has)."""
    result = transfer_predict(table, coefs, query, settings=settings)
    if result is None:
        return result
    probes, target, target_features, row_mask = (query.probes, query.target,
                                                  query.target_features, query.row_mask)
    log_sps = result.log_sps
    weight = settings.factor_weight_unseen if result.regression else settings.factor_weight
    if factors is not None and weight > 0:
        log_sps = _mix(log_sps, weight, factors.predict(
            probes, table.features[list(probes)], factors.column(target, target_features),
            shrinkage=settings.factor_shrinkage,
            prior=prior if settings.twin_shrinkage > 0 else None,
            prior_shrinkage=settings.twin_shrinkage or 1.0))
    if result.regression:
        if spec_prior is not None and settings.spec_prior_weight > 0:
            log_sps = _mix(log_sps, settings.spec_prior_weight, spec_prior.predict(
                probes, table.features[list(probes)], target_features, row_mask=row_mask,
                twin=twin))
    elif target is not None:
        if twin is not None and settings.krige_weight > 0:
            log_sps = _mix(log_sps, settings.krige_weight,
                           shift_krige(table, twin, probes, target))
        weight = min(ROW_KRIGE_MAX, settings.row_krige_slope * (len(probes) - 2))
        if weight > 0:
            rows = table.log_sps if row_mask is None else table.log_sps[row_mask]
            log_sps = _mix(log_sps, weight, krige(rows, probes, target))
    if ((result.regression or query.unlike_probes) and settings.time_fit_weight > 0
            and query.peak is not None):
        log_sps = _mix(log_sps, settings.time_fit_weight, time_fit_predict(
            table.features[list(probes)], np.array(list(probes.values())), target_features,
            query.peak))
    return TransferResult(log_sps, result.regression, result.neighbours)
