"""The ranked and rejected offers of a recommendation, held as columns and built when read.

A catalog of 100,000 offers ranks in arrays (``advisor.ranking.recommend``); a table shows 15
of them. ``RankedOffers`` and ``RejectedOffers`` are sequences of the usual records
(``CostEstimate``, ``Rejection``), each built from its row when indexed or iterated, and carry
the columns that questions about the whole ranking need (the best offer per accelerator, the
first on-demand row, the rows of one choice in every region, counts per rejection kind), so
answering those builds no record either. A tuple of records given to a ``Recommendation``
becomes one of these too, so every reader has one form.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from advisor.ranking.cost_estimate import CostEstimate
from advisor.ranking.rejections import Rejection, RejectionKind
from advisor.throughput import Basis
from pricing import Market
from pricing.offer_table import LazyRows, OfferTable, object_array

__all__ = ["RankedOffers", "RejectedOffers"]


class RankedOffers(LazyRows[CostEstimate]):
    """Feasible offers best first: ``offers`` (in rank order) and, per row, the samples per
    dollar (point, low and high end), the throughput's basis and the run's point cost."""

    __slots__ = ("_json_rows", "basis", "offers", "run_cost_usd", "samples_per_dollar",
                 "samples_per_dollar_high", "samples_per_dollar_low")

    def __init__(self, offers: OfferTable, *, samples_per_dollar: np.ndarray,
                 samples_per_dollar_low: np.ndarray, samples_per_dollar_high: np.ndarray,
                 run_cost_usd: np.ndarray, basis: np.ndarray,
                 make: Callable[[int], CostEstimate],
                 json_rows: Callable[[], Iterator[dict[str, Any]]] | None = None) -> None:
        super().__init__(len(offers), make)
        self._json_rows = json_rows
        self.offers = offers
        self.samples_per_dollar = samples_per_dollar
        self.samples_per_dollar_low = samples_per_dollar_low
        self.samples_per_dollar_high = samples_per_dollar_high
        self.run_cost_usd = run_cost_usd
        self.basis = basis  # object array of Basis

    @classmethod
    def of(cls, estimates: Sequence[CostEstimate]) -> RankedOffers:
        """The ranking ``estimates`` already are (in that order)."""
        if isinstance(estimates, RankedOffers):
            return estimates
        rows = tuple(estimates)
        basis = object_array([e.throughput.basis for e in rows])
        return cls(OfferTable.of(e.offer for e in rows),
                   samples_per_dollar=np.asarray([e.samples_per_dollar for e in rows], float),
                   samples_per_dollar_low=np.asarray([e.samples_per_dollar_low for e in rows],
                                                     float),
                   samples_per_dollar_high=np.asarray([e.samples_per_dollar_high for e in rows],
                                                      float),
                   run_cost_usd=np.asarray([e.run_cost_usd for e in rows], float),
                   basis=basis, make=rows.__getitem__)

    def column_rows(self) -> Iterator[dict[str, Any]] | None:
        """``advisor.ranking.serialize.estimate_row`` of every row, in order, made from the
        columns without building the estimates, where the ranking gave them (None: it did
        not; build each estimate's row)."""
        return self._json_rows() if self._json_rows is not None else None

    def measured(self) -> np.ndarray:
        """Per row: whether a probe measured its throughput (basis measured or tuned)."""
        rows: np.ndarray = np.isin(self.basis, [b for b in Basis if b.is_measured])
        return rows

    def with_basis(self, basis: Basis) -> np.ndarray:
        """Per row: whether its basis is ``basis``."""
        rows: np.ndarray = self.basis == basis
        return rows

    def first(self, rows: np.ndarray) -> int | None:
        """The first row where ``rows`` (a boolean mask) holds; None where none does."""
        found = np.flatnonzero(rows)
        return int(found[0]) if len(found) else None

    def first_per(self, codes: np.ndarray, *keys: np.ndarray,
                  rows: np.ndarray | None = None) -> dict[int, int]:
        """Per code of ``codes`` (one per row; among ``rows``, a mask, given): the row with the
        smallest ``keys`` (compared in order), the first such row on a tie; codes in the order
        their first row ranks."""
        candidates = np.arange(len(self)) if rows is None else np.flatnonzero(rows)
        if not len(candidates):
            return {}
        by = np.lexsort((candidates, *(k[candidates] for k in reversed(keys)),
                         codes[candidates]))
        ordered = candidates[by]
        grouped = codes[ordered]
        starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        found = {int(grouped[s]): int(ordered[s]) for s in starts}
        return {code: found[code] for code in dict.fromkeys(codes[candidates].tolist())}

    def probeable(self) -> np.ndarray:
        """Per row: whether a launcher can probe the offer (``probes.launcher_for_offer``,
        asked once per cloud and instance type)."""
        from probes import launcher_for_offer

        offers = self.offers
        width = len(offers.instance_type.values) + 1
        pair = offers.cloud.codes.astype(np.int64) * width + offers.instance_type.codes
        distinct, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
        keys = offers.keys(first)
        answers = np.asarray([launcher_for_offer(k) is not None for k in keys], dtype=bool)
        return answers[inverse.ravel()] if len(distinct) else np.zeros(0, dtype=bool)

    def on_demand(self) -> np.ndarray:
        """Per row: whether the offer is on demand."""
        return self.offers.market.equals(Market.ON_DEMAND.value)

    def choices(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows grouped by choice (cloud, instance type, market): per group, in ranking
        order of its best row, that first row; and per row, its group's number."""
        offers = self.offers
        width_t = len(offers.instance_type.values) + 1
        width_m = len(offers.market.values) + 1
        key = ((offers.cloud.codes.astype(np.int64) * width_t + offers.instance_type.codes)
               * width_m + offers.market.codes)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # groups in the order their best row ranks
        group_of = np.empty(len(order), dtype=np.int64)
        group_of[order] = np.arange(len(order))
        return first[order], group_of[inverse.ravel()]


class RejectedOffers(LazyRows[Rejection]):
    """Offers left out, in offer order, with each row's ``kind``: counting them by kind or
    finding one of a kind builds no record."""

    __slots__ = ("_json_rows", "kinds")

    def __init__(self, kinds: np.ndarray, make: Callable[[int], Rejection],
                 iterate: Callable[[], Iterator[Rejection]] | None = None, *,
                 json_rows: Callable[[bool], Iterator[dict[str, Any]]] | None = None) -> None:
        super().__init__(len(kinds), make, iterate)
        self._json_rows = json_rows
        self.kinds = kinds  # object array of RejectionKind

    @classmethod
    def of(cls, rejections: Sequence[Rejection]) -> RejectedOffers:
        """The rejections ``rejections`` already are (in that order)."""
        if isinstance(rejections, RejectedOffers):
            return rejections
        rows = tuple(rejections)
        return cls(object_array([r.kind for r in rows]), rows.__getitem__)

    def column_rows(self, *, offer_cells: bool = False) -> Iterator[dict[str, Any]] | None:
        """``advisor.ranking.serialize.rejection_row`` of every row, in order, made from the
        columns without building the offers, where the ranking gave them (None: it did not;
        build each rejection's row); ``offer_cells`` as ``rejection_row`` takes it."""
        return self._json_rows(offer_cells) if self._json_rows is not None else None

    def kind_counts(self) -> Counter[RejectionKind]:
        """How many offers each kind left out."""
        return Counter(self.kinds.tolist())

    def first_of(self, kind: RejectionKind) -> Rejection | None:
        """The first rejection of ``kind``; None where there is none."""
        found = np.flatnonzero(self.kinds == kind)
        return self[int(found[0])] if len(found) else None

