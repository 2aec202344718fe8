"""The column-held ranking answers questions about all its rows as the records would: the
best row per accelerator, the first on-demand row, the choices folded across regions, the
counts per rejection kind; and a row read twice is the same record."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest
from test_recommend import RESNET, SPEC

from advisor.ranking.columns import LazyRows, RankedOffers, RejectedOffers
from advisor.ranking.decision import group_regions
from advisor.ranking.offers import Recommendation
from advisor.ranking.recommend import recommend
from advisor.spec import parse_workload_spec
from pricing import Market, shipped_catalog


@pytest.fixture(scope="module")
def rec() -> Recommendation:
    spec = parse_workload_spec({**SPEC, "constraints": {"max_accelerators": 8}})
    return recommend(spec, catalog=shipped_catalog(), profile=RESNET, today=date(2026, 1, 1))


def test_lazy_rows_build_each_row_once_when_indexed_and_stream_when_iterated() -> None:
    made: list[int] = []

    def make(i: int) -> object:
        made.append(i)
        return object()

    rows = LazyRows(3, make)
    assert rows[1] is rows[1] and made == [1]
    assert len(list(rows)) == 3 and made == [1, 0, 2]  # iterating keeps none but the kept one
    assert rows[-1] is not None and rows[0:2] == (rows[0], rows[1])
    with pytest.raises(IndexError):
        rows[3]


def test_the_best_row_per_accelerator_is_the_records_answer(rec: Recommendation) -> None:
    ranked = rec.ranked
    estimates = list(ranked)
    names = ranked.offers.accelerator
    best = ranked.first_per(names.codes, -ranked.samples_per_dollar)
    expected: dict[str, int] = {}
    for i, e in enumerate(estimates):
        name = e.offer.accelerator
        if name not in expected or e.samples_per_dollar > \
                estimates[expected[name]].samples_per_dollar:
            expected[name] = i
    assert {names.values[c]: r for c, r in best.items()} == expected
    assert [names.values[c] for c in best] == list(expected)  # in ranking order


def test_first_on_demand_row_and_the_choices_match_the_records(rec: Recommendation) -> None:
    ranked = rec.ranked
    estimates = list(ranked)
    first = ranked.first(ranked.on_demand())
    assert first == next(i for i, e in enumerate(estimates)
                         if e.offer.market is Market.ON_DEMAND)
    groups = group_regions(ranked)
    plain: dict[tuple[str, str, str], list[int]] = {}
    for i, e in enumerate(estimates):
        plain.setdefault((str(e.offer.cloud), e.offer.instance_type, str(e.offer.market)),
                         []).append(i)
    assert [g.rank for g in groups] == [rows[0] + 1 for rows in plain.values()]
    assert [len(g.estimates) for g in groups] == [len(rows) for rows in plain.values()]
    assert groups[3].estimates[-1] == estimates[list(plain.values())[3][-1]]


def test_rejections_count_by_kind_without_building_them(rec: Recommendation) -> None:
    rejected = rec.rejected
    kinds = Counter(r.kind for r in rejected)
    assert rejected.kind_counts() == kinds and len(kinds) > 1
    for kind in kinds:
        assert rejected.first_of(kind) == next(r for r in rejected if r.kind is kind)


def test_records_given_as_tuples_are_held_as_columns_too(rec: Recommendation) -> None:
    again = Recommendation(workload="w", prices_captured_at=date(2026, 1, 1),
                           ranked=tuple(rec.ranked[:20]), rejected=tuple(rec.rejected[:5]))
    assert isinstance(again.ranked, RankedOffers) and isinstance(again.rejected, RejectedOffers)
    assert list(again.ranked) == list(rec.ranked[:20])
    assert again.ranked.samples_per_dollar.tolist() == \
        [e.samples_per_dollar for e in rec.ranked[:20]]
    assert again.rejected.kind_counts() == Counter(r.kind for r in rec.rejected[:5])
