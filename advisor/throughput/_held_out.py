"""Held-out fits for ``evaluate``: one model per group split, fitted by scikit-learn's
``cross_validate`` (this module imports scikit-learn; ``evaluate`` imports it when it runs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Self

import numpy as np
import numpy.typing as npt
from sklearn.base import BaseEstimator
from sklearn.model_selection import LeaveOneGroupOut, cross_validate

from advisor.throughput.estimate import ThroughputModel
from advisor.throughput.reference import ReferenceRow
from pricing import AcceleratorSpec

__all__ = ["FactoryEstimator", "fit_held_out", "group_splits"]

Split = tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]


class FactoryEstimator(BaseEstimator):  # type: ignore[misc]
    """Any ``ThroughputModel`` factory (a class, a lambda) as a scikit-learn estimator, so
    baselines and wrappers are cross-validated like ``TransferModel``: ``fit`` fits
    ``factory()`` on the rows with ``accelerators`` (a parameter, not a fit parameter:
    scikit-learn would index a mapping as long as the rows) into ``model_``."""

    def __init__(self, factory: Callable[[], ThroughputModel],
                 accelerators: Mapping[str, AcceleratorSpec]) -> None:
        self.factory = factory
        self.accelerators = accelerators

    def fit(self, X: Sequence[ReferenceRow], y: npt.ArrayLike | None = None) -> Self:
        """Fit a fresh model on ``X`` (``y``: their samples/s, None: the rows'); returns self."""
        model = self.factory()
        self.model_ = (model.fit(X, accelerators=self.accelerators) if y is None
                       else model.fit(X, y, accelerators=self.accelerators))
        return self


def group_splits(groups: Sequence[str]) -> list[tuple[str, Split]]:
    """``LeaveOneGroupOut`` over ``groups`` (one per row): (group, (train, test)) per group,
    in sorted order; one group alone is held out from nothing (train empty)."""
    labels = np.asarray(groups, dtype=object)
    if len(set(groups)) == 1:  # LeaveOneGroupOut needs two; the reference may still teach
        return [(str(labels[0]), (np.arange(0, dtype=np.intp), np.arange(len(labels))))]
    return [(str(labels[test[0]]), (train, test))
            for train, test in LeaveOneGroupOut().split(labels, groups=labels)]


def _held_out_rows(estimator: FactoryEstimator, X: Sequence[ReferenceRow],
                   y: npt.ArrayLike | None = None) -> int:
    """The fold's score: how many rows it held out (the evaluation scores with probes)."""
    del estimator, y
    return len(X)


def fit_held_out(factory: Callable[[], ThroughputModel], X: Sequence[ReferenceRow],
                 splits: Sequence[Split], *,
                 accelerators: Mapping[str, AcceleratorSpec]) -> list[ThroughputModel]:
    """One fitted model per (train, test) split of ``X``, fitted on its train rows by
    ``cross_validate`` (sequentially, in split order)."""
    if not splits:
        return []
    result = cross_validate(FactoryEstimator(factory, accelerators), list(X), cv=list(splits),
                            scoring=_held_out_rows, return_estimator=True)
    return [estimator.model_ for estimator in result["estimator"]]
