"""The probes' two-term time fit: seconds per sample = FLOPs / peak + bytes / bandwidth.

For a target known by its datasheet only, a workload's probes fix the two unknowns of the
simplest roofline of its whole step (FLOPs and bytes moved per sample, both >= 0) on the
probed accelerators' peak FLOP/s for the workload's precision (one precision key for every
probe and the target) and their memory bandwidth;
the target's time follows from its own two figures (the Habitat idea, at the scale of one
step instead of one operator). The fit is relative (each probe's residual is a fraction of
its own time), so a fast probe counts as much as a slow one. It needs two probes.
"""

from __future__ import annotations

import numpy as np

from advisor.throughput._table import FloatArray

__all__ = ["PEAK_COLUMNS", "time_fit_predict"]

# Columns of ``spec_features`` (log values): the peak FLOP/s the step runs at, by precision
# key (fp32 as the reference ran it: TF32 on Ampere and newer), and the memory bandwidth.
PEAK_COLUMNS = {"fp32": 1, "mixed": 2}
_BANDWIDTH = 3


def _nonnegative_lstsq(a: FloatArray, b: FloatArray) -> FloatArray:
    """argmin ||a x - b|| over x >= 0 for two columns: the free solution when it is
    non-negative, else the better of the two one-term fits. ``scipy.optimize.nnls`` gives the
    same x (tests/advisor/test_time_fit.py checks it), but this runs per prediction and a
    warm ``recommend`` with probes would import ``scipy.optimize`` for it."""
    free = np.linalg.lstsq(a, b, rcond=None)[0]
    if (free >= 0).all():
        return np.asarray(free)
    one_term = [np.eye(a.shape[1])[j] * max(float(a[:, j] @ b) / float(a[:, j] @ a[:, j]), 0.0)
                for j in range(a.shape[1])]
    return min(one_term, key=lambda x: float(np.linalg.norm(a @ x - b)))


def time_fit_predict(probe_features: FloatArray, probe_logs: FloatArray,
                     target_features: FloatArray, peak: str) -> float | None:
    """Log samples/s on the target from the probes (``spec_features`` rows and log samples/s);
    None with fewer than two probes or a probe or target without the figures."""
    column = PEAK_COLUMNS[peak]
    figures = np.exp(probe_features[:, [column, _BANDWIDTH]])
    target = np.exp(target_features[[column, _BANDWIDTH]])
    if len(probe_logs) < 2 or not (np.isfinite(figures).all() and np.isfinite(target).all()):
        return None
    # time_i = x . (1 / figures_i); relative residual time_i / measured_i - 1
    design = np.exp(probe_logs)[:, None] / figures
    x = _nonnegative_lstsq(design, np.ones(len(probe_logs)))
    seconds = float(x @ (1.0 / target))
    return -float(np.log(seconds)) if seconds > 0 else None
