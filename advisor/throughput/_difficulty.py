"""How hard a workload is for the roofline, known before any measurement, and the
normalized split-conformal scores that let a no-probe interval follow it (issue 29).

Locally weighted (normalized) split conformal (Papadopoulos et al. 2008; Lei et al. 2018,
"Distribution-free predictive inference for regression", section 5.2): each held-out
residual is scored as ``|r| / s(x)``, ``s`` a difficulty scale fitted on other residuals,
and a new point's half-width is the scores' conformal quantile times its own ``s``. Here
``x`` is the roofline's own predicted share of time that no compute peak bounds
(``RooflinePrior.memory_bound_share``: kernel overhead and memory-bound operators), known
from the operator mix and the datasheet alone, and ``s`` is linear in it with non-negative
coefficients, so a workload the roofline models less of gets a wider interval.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["HeldOutResidual", "difficulty_scale", "normalized_scores", "scale_at"]

# (reference group ``model/precision``, held-out log residual, memory-bound share of the
# prediction that missed it)
HeldOutResidual = tuple[str, float, float]

_FLOOR = 0.1  # s never drops below this share of the mean |residual|: no score divides by ~0


def difficulty_scale(found: Sequence[HeldOutResidual]) -> tuple[float, float, float]:
    """(a, b, floor) of ``s(share) = max(a + b share, floor)``: non-negative least squares
    of ``|residual|`` on (1, share), each reference group weighing one whatever its rows;
    ``floor`` a tenth of the group-weighted mean ``|residual|``."""
    from scipy.optimize import nnls

    counts = Counter(g for g, _, _ in found)
    root = np.sqrt([1.0 / counts[g] for g, _, _ in found])
    design = np.array([[1.0, share] for _, _, share in found])
    target = np.abs([r for _, r, _ in found])
    (a, b), _ = nnls(design * root[:, None], target * root)
    floor = _FLOOR * float((root ** 2 * target).sum() / (root ** 2).sum())
    return float(a), float(b), floor


def scale_at(scale: tuple[float, float, float], share: float) -> float:
    """``s(share)`` of ``difficulty_scale``'s coefficients."""
    a, b, floor = scale
    return max(a + b * share, floor)


@functools.lru_cache(maxsize=64)  # one fit's residual cases, asked offer after offer
def normalized_scores(found: tuple[HeldOutResidual, ...]) -> tuple[float, ...]:
    """Each residual's ``|r| / s(share)``, ``s`` fitted (``difficulty_scale``) on the
    residuals of the other reference models only, so a model's own misses never set the
    scale they are judged by (cross-fitted, as split conformal's calibration set is
    apart from the fit); a model alone in ``found`` is scored by its own."""
    models = sorted({g.partition("/")[0] for g, _, _ in found})
    scales = {}
    for model in models:
        others = [x for x in found if x[0].partition("/")[0] != model]
        scales[model] = difficulty_scale(others or found)
    return tuple(abs(r) / scale_at(scales[g.partition("/")[0]], share)
                 for g, r, share in found)
