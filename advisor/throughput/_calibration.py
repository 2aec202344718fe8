"""Residual quantiles for ``TransferModel`` intervals, measured on held-out folds.

Split-conformal style: every fold is one reference *model* (all its precisions and
generations), predicted by a model that never saw it, and the interval's ends are the
finite-sample conformal quantiles of the held-out residuals per case (``conformal_bounds``),
so a 90% interval covers about 90% of new workloads drawn like the folds.

Every reference workload is predicted with all workloads of the same model (any precision,
any generation) left out, from 1, 2 and 3 random probes of its own (the factorization is
refitted without that model's rows); for the ``unseen`` cases the target accelerator's
column is also removed from the whole table and the spec regressions and the factorization
are refitted without it (that refit still sees the left-out model's other columns, a small
leak). Residuals are ``log(measured) - log(predicted)`` of the blended prediction.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from advisor.throughput._factor import FactorFit
from advisor.throughput._krige import SpecPrior
from advisor.throughput._published_anchor import precision_class
from advisor.throughput._table import (
    FloatArray,
    ReferenceTable,
    fit_ridge,
    ridge_predict,
    split_precision,
)
from advisor.throughput._transfer_core import Query, TransferSettings, blend_predict
from advisor.throughput.published import PublishedRow, Stack
from advisor.throughput.reference import ReferenceRow

__all__ = ["MEASURED_HALF_WIDTH", "conformal_bounds", "conformal_half_width",
           "grouped_conformal_half_width", "interval",
           "residual_case", "residual_quantiles", "stack_half_width", "stack_shifts",
           "unlike_probes", "weighted_conformal_half_width"]

MEASURED_HALF_WIDTH = 0.03  # probe-to-probe spread of a stable probe (log space)
_PROBE_COUNTS = (1, 2, 3)
_MIN_RESIDUALS = 20
_FALLBACK = {"prior_unseen": "prior", "roofline": "prior", "roofline_unseen": "prior_unseen",
             "unseen3": "unseen2",
             "unseen2": "unseen1", "seen3": "seen2", "seen2": "seen1"}


def _model_name(workload: str) -> str:
    return workload.split("/")[1] if workload.count("/") >= 2 else workload


def _probe_residuals(table: ReferenceTable, coefs: FloatArray, settings: TransferSettings,
                     rng: np.random.Generator, out: dict[str, list[float]],
                     *, target: int, unseen: bool, truth: ReferenceTable,
                     factors: dict[str, FactorFit | None], architectures: Sequence[object],
                     spec_prior: SpecPrior | None = None) -> None:
    names = np.array([_model_name(w) for w in table.workloads])
    for w in np.flatnonzero(np.isfinite(truth.log_sps[:, target])):
        rows = names != names[w]
        others = [c for c in np.flatnonzero(np.isfinite(truth.log_sps[w])) if c != target]
        split = split_precision(table.workloads[w])
        for k in _PROBE_COUNTS:
            if len(others) < k:
                continue
            probes = {int(c): float(truth.log_sps[w, c])
                      for c in rng.choice(others, size=k, replace=False)}
            unlike = unlike_probes([architectures[c] for c in probes], architectures[target])
            query = Query(probes, None if unseen else target, table.features[target],
                          row_mask=rows, peak=split[1] if split else None,
                          unlike_probes=unlike)
            result = blend_predict(table, coefs, factors[str(names[w])], query,
                                   settings=settings, spec_prior=spec_prior)
            if result is None:
                continue
            out[residual_case(result.regression, k, unlike=unlike)].append(
                float(truth.log_sps[w, target]) - result.log_sps)


def unlike_probes(probe_classes: Sequence[object], target_class: object) -> bool:
    """True when no probe (of a known class; None: unknown) shares the target's architecture
    class: the transfer then extrapolates across architectures."""
    return all(c != target_class for c in probe_classes if c is not None)


def residual_case(regression: bool, probes: int, *, unlike: bool) -> str:
    """The calibration case of a prediction with probes: ``seen3`` (target measured in the
    reference, three probes or more), ``unseen1`` (known by its specs, one probe), with
    ``_unlike`` when the target's architecture class is none of the probes' (the transfer
    then extrapolates and misses more)."""
    return (f"{'unseen' if regression else 'seen'}{min(probes, 3)}"
            + ("_unlike" if unlike else ""))


def _prior_residuals(table: ReferenceTable, coefs: FloatArray, out: dict[str, list[float]],
                     *, target: int, case: str, mismatch_weight: float,
                     measured: FloatArray) -> None:
    names = np.array([_model_name(w) for w in table.workloads])
    precisions = np.array(table.precisions)
    base = np.where(np.isfinite(measured), measured, ridge_predict(coefs, table.features[target]))
    for w in np.flatnonzero(np.isfinite(table.flops) & np.isfinite(table.log_sps[:, target])):
        usable = np.isfinite(table.flops) & (names != names[w]) & np.isfinite(base)
        if not usable.any():
            continue
        pred = base[usable] + np.log(table.flops[usable] / table.flops[w])
        weight = np.where(precisions[usable] == precisions[w], 1.0, mismatch_weight)
        out[case].append(float(table.log_sps[w, target] - (weight * pred).sum() / weight.sum()))


def conformal_bounds(residuals: list[float], coverage: float) -> tuple[float, float]:
    """(low, high) log offsets: the split-conformal quantiles of held-out residuals.

    Each tail gets (1 - coverage) / 2; the finite-sample rank ceil((n + 1)(1 - tail)) makes
    the interval cover at least ``coverage`` of a new exchangeable residual. Zero is always
    inside."""
    values = np.sort(np.asarray(residuals, dtype=float))
    n = len(values)
    tail = (1.0 - coverage) / 2
    rank = min(n, math.ceil((n + 1) * (1 - tail)))  # 1-based rank of the upper end
    return min(0.0, float(values[n - rank])), max(0.0, float(values[rank - 1]))


def grouped_conformal_half_width(groups: Mapping[str, Sequence[float]],
                                 coverage: float) -> float:
    """The ``coverage`` quantile of non-negative scores that come in groups (a reference
    model's rows), for a row of a new group: each group weighs one, shared by its rows (the
    pooled CDF of Dunn, Wasserman and Ramdas, 2022, for two-layer hierarchical data), at level
    ``coverage (K + 1) / K`` for ``K`` groups; the largest score where that is past 1. One
    score for both sides: one finite-sample correction, not one per tail."""
    kept = {name: np.asarray(v, dtype=float) for name, v in groups.items() if len(v)}
    if not kept:
        raise ValueError("grouped_conformal_half_width needs at least one score")
    values = np.concatenate(list(kept.values()))
    weights = np.concatenate([np.full(len(v), 1.0 / len(v)) for v in kept.values()])
    found = _weighted_quantile(values, weights, len(kept), coverage * (len(kept) + 1) / len(kept))
    return float(values.max()) if found is None else found


def _weighted_quantile(values: FloatArray, weights: FloatArray, total: float,
                       level: float) -> float | None:
    """The smallest of ``values`` whose weight at or below it reaches ``level`` of ``total``;
    None when none does."""
    order = np.argsort(values)
    reached = np.flatnonzero(np.cumsum(weights[order]) / total >= level - 1e-12)
    return float(values[order][reached[0]]) if len(reached) else None


def conformal_half_width(scores: Sequence[float], coverage: float) -> float:
    """The split-conformal ``coverage`` quantile of non-negative scores (``|residual|``): the
    score of rank ``ceil((n + 1) coverage)``, the largest where that is past ``n``; 0 without
    scores."""
    sizes = sorted(scores)
    if not sizes:
        return 0.0
    return sizes[min(len(sizes), math.ceil((len(sizes) + 1) * coverage)) - 1]


def stack_shifts(reference: Sequence[ReferenceRow],
                 published: Sequence[PublishedRow] = ()) -> dict[str, float]:
    """How much one workload's throughput moves when only its software stack changes: per
    pair of stacks, model and precision, the median log ratio over the cells (accelerator
    and device count) measured in both. The pairs: the reference table's generations against
    each other, and each published suite (one README, one vendor table) against each
    generation. MLPerf submissions are left out: hand-tuned beyond any user's step, and their
    figures are time to train (evaluation included), not a step's throughput."""
    cells: dict[tuple[str, str, str, int], dict[str, float]] = defaultdict(dict)
    for r in reference:
        cells[(r.model, r.precision, r.accelerator, r.accelerator_count)][r.generation] = (
            r.samples_per_second)
    found: dict[str, list[float]] = defaultdict(list)
    for (model, precision, _, _), by_generation in cells.items():
        generations = sorted(by_generation)
        for i, first in enumerate(generations):
            for second in generations[i + 1:]:
                found[f"{first}>{second}/{model}/{precision}"].append(
                    math.log(by_generation[second] / by_generation[first]))
    for p in published:
        key = precision_class(p.precision)  # as the reference table names it
        if p.stack is Stack.MLPERF_TUNED or key not in ("fp32", "mixed"):
            continue
        for generation, value in cells.get((p.workload, key, p.accelerator, p.chips), {}).items():
            found[f"{generation}>{p.suite}/{p.workload}/{key}"].append(
                math.log(p.samples_per_second_per_chip * p.chips / value))
    return {group: float(np.median(v)) for group, v in found.items()}


def stack_half_width(shifts: Mapping[str, float], coverage: float) -> float:
    """The split-conformal ``coverage`` quantile of the stack shifts' size (``stack_shifts``):
    how far a workload's step in a stack of its own may sit from the reference stack's
    figure, either way; 0 without any pair of stacks."""
    return conformal_half_width([abs(v) for v in shifts.values()], coverage)


def weighted_conformal_half_width(scores: Sequence[float], weights: Sequence[float],
                                  coverage: float, *, test_weight: float = 1.0) -> float:
    """The weighted split-conformal quantile of non-negative scores (``|residual|``).

    Each score carries its weight, the new point ``test_weight`` at +inf (Tibshirani et al.,
    2019, conformal prediction under covariate shift): the smallest score whose weight at or
    below it reaches ``coverage`` of the total. ``inf`` when the scores' weight is too small
    for that (too few held-out residuals alike the new point). Equal weights give the plain
    conformal rank ``ceil((n + 1) coverage)``."""
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be in (0, 1), got {coverage}")
    values = np.asarray(scores, dtype=float)
    mass = np.asarray(weights, dtype=float)
    if values.shape != mass.shape or (mass < 0).any() or test_weight <= 0:
        raise ValueError("weights must be non-negative, one per score, test_weight positive")
    found = _weighted_quantile(values, mass, float(mass.sum()) + test_weight, coverage)
    return math.inf if found is None else found


def residual_quantiles(table: ReferenceTable, coefs: FloatArray, *,
                       settings: TransferSettings, coverage: float, ridge_alpha: float,
                       fit_factors: Callable[[FloatArray], FactorFit], seed: int,
                       architectures: Sequence[object],
                       ) -> dict[str, tuple[float, float]]:
    """Conformal bounds of held-out log residuals per case (seen1..3 and unseen1..3, each
    also ``_unlike``, prior, prior_unseen); cases with fewer than 20 residuals are left out.
    ``fit_factors`` refits the factorization on a masked copy of ``table.log_sps``;
    ``architectures`` holds each column's architecture class (equal when alike)."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = defaultdict(list)
    seen_columns = np.flatnonzero(table.seen() & np.isfinite(table.features).all(axis=1))
    names = np.array([_model_name(w) for w in table.workloads])
    blend = settings.factor_weight > 0 or settings.factor_weight_unseen > 0
    left_out: dict[str, FactorFit | None] = {
        str(name): fit_factors(np.where((names == name)[:, None], np.nan, table.log_sps))
        if blend else None for name in set(names)}
    for target in seen_columns:
        _probe_residuals(table, coefs, settings, rng, out, target=int(target), unseen=False,
                         truth=table, factors=left_out, architectures=architectures)
        _prior_residuals(table, coefs, out, target=int(target), case="prior",
                         mismatch_weight=settings.precision_mismatch_weight,
                         measured=table.log_sps[:, target])
        hidden = ReferenceTable(table.workloads, table.precisions, table.flops,
                                table.accelerators, table.log_sps.copy(), table.features)
        hidden.log_sps[:, target] = np.nan
        hidden_coefs = fit_ridge(hidden, alpha=ridge_alpha, exclude_column=int(target))
        hidden_factors = (fit_factors(hidden.log_sps)
                          if settings.factor_weight_unseen > 0 else None)
        _probe_residuals(hidden, hidden_coefs, settings, rng, out, target=int(target),
                         unseen=True, truth=table,
                         factors=dict.fromkeys(left_out, hidden_factors),
                         architectures=architectures,
                         spec_prior=SpecPrior(hidden) if settings.spec_prior_weight > 0 else None)
        _prior_residuals(table, hidden_coefs, out, target=int(target), case="prior_unseen",
                         mismatch_weight=settings.precision_mismatch_weight,
                         measured=np.full(len(table.workloads), np.nan))
    return {case: conformal_bounds(values, coverage)
            for case, values in out.items() if len(values) >= _MIN_RESIDUALS}


def interval(quantiles: Mapping[str, tuple[float, float]], case: str, *,
             foreign_widening: float) -> tuple[float, float]:
    """Log-space (low, high) offsets for a residual case: the case's conformal bounds, or
    the nearest case with fewer probes that has them (an ``_unlike`` case then the case as
    if alike); vendors absent from the reference (``foreign``) get the bounds of an unseen
    target unlike its probes, widened by ``foreign_widening``. A case of one architecture
    class (``roofline@tc-bf16``) takes its class's bounds, else the case's."""
    if "@" in case:
        return quantiles.get(case) or interval(quantiles, case.partition("@")[0],
                                               foreign_widening=foreign_widening)
    if case == "foreign":
        low, high = interval(quantiles, "unseen3_unlike", foreign_widening=1.0)
        return low * foreign_widening, high * foreign_widening
    alike = case.removesuffix("_unlike")
    order = [alike]
    while order[-1] in _FALLBACK:
        order.append(_FALLBACK[order[-1]])
    if case != alike:  # fewer probes of the same kind first, then the case as if alike
        order = [c + "_unlike" for c in order] + order
    return next((quantiles[c] for c in order if c in quantiles), (-0.5, 0.5))
