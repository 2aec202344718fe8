"""The HTML report says what orders its ranking and shows that figure, as the terminal does."""

from __future__ import annotations

import html
from dataclasses import replace

import pytest
from report_samples import GENERATED_AT, sample_recommendation

from advisor.ranking import RankBy
from reports.formatting import fmt_compact
from reports.recommendation import render_recommendation_html


@pytest.mark.parametrize(("rank_by", "order"), [
    (RankBy.CONSERVATIVE, "by the low end of its range"),  # the default
    (RankBy.ESTIMATE, "by its point estimate"),
])
def test_the_ranking_shows_the_figure_that_orders_it(rank_by: RankBy, order: str) -> None:
    # the page said "Best samples per dollar first" over rows ordered by the low end of a
    # range it did not show, so a row read as out of order against its samples/$ column
    rec = replace(sample_recommendation(), rank_by=rank_by)
    page = html.unescape(render_recommendation_html(rec, generated_at=GENERATED_AT))
    assert f"Best samples per dollar first, {order}." in page
    assert "samples/$ (low–high)" in page
    for est in rec.ranked:
        # three figures and a k/M suffix, as the terminal's range: full digits of three
        # eight-digit numbers folded the offer column onto four lines
        assert (f"{fmt_compact(est.samples_per_dollar)} ({fmt_compact(est.samples_per_dollar_low)}"
                f"–{fmt_compact(est.samples_per_dollar_high)})") in page
