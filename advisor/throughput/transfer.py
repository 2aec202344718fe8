"""``TransferModel``: the throughput model as a scikit-learn estimator.

``X`` is a sequence of ``ReferenceRow`` (a model at a precision measured on a number of
devices of an accelerator), ``y`` their samples/s (None: the rows carry them); the
accelerators' specs (``accelerators``) and the published training figures (``published``)
are fit parameters. ``predict(X)`` answers each row with no probe; ``estimate`` answers one
workload, with probes, as an interval (what ``recommend`` asks). ``get_params``,
``set_params`` and ``clone`` come from ``BaseEstimator``, so leave-one-model-out is

    cross_validate(TransferModel(), rows, groups=[r.model for r in rows],
                   cv=LeaveOneGroupOut(), params={"accelerators": specs})

and ``groups=[r.accelerator for r in rows]`` leaves one accelerator out. (Without metadata
routing, scikit-learn indexes a fit parameter per fold when its length equals the number of
rows: keep ``accelerators`` a mapping with another number of entries.)

The hyper-parameters (stated once, as ``PlainTransferModel.__init__``'s keywords), the
fitting and the predictions are ``advisor.throughput._plain``'s. ``plain()`` hands the fitted
state over without scikit-learn's classes: the model cache pickles that, so a warm
``recommend`` never imports scikit-learn, which this module imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator, RegressorMixin

from advisor.throughput._plain import PlainTransferModel
from advisor.throughput.reference import ReferenceRow

__all__ = ["TransferModel"]


class TransferModel(RegressorMixin, BaseEstimator, PlainTransferModel):  # type: ignore[misc]
    """Ratio transfer from similar reference workloads, spec regression as fallback, as a
    scikit-learn regressor of samples/s on reference rows (hyper-parameters, ``fit``,
    ``predict`` and ``estimate``: see ``PlainTransferModel``)."""

    def __sklearn_tags__(self) -> Any:
        """A regressor on a sequence of reference rows (not a 2-D array) whose target is
        optional (the rows carry their samples/s)."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.target_tags.required = False
        return tags

    def score(self, X: Sequence[ReferenceRow], y: npt.ArrayLike | None = None,
              sample_weight: npt.ArrayLike | None = None) -> float:
        """R² of ``predict(X)`` against ``y`` (None: the rows' samples/s) over the rows it
        predicts (NaN when it predicts none)."""
        from sklearn.metrics import r2_score

        truth = np.asarray([r.samples_per_second for r in X] if y is None else y, dtype=float)
        predicted = self.predict(X)
        kept = np.isfinite(predicted)
        if not kept.any():
            return float("nan")
        weights = None if sample_weight is None else np.asarray(sample_weight)[kept]
        return float(r2_score(truth[kept], predicted[kept], sample_weight=weights))
