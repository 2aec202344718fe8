"""One dollar figure reads the same everywhere: terminal table, HTML ranking, card, Pareto table."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from report_samples import GENERATED_AT, sample_recommendation

from advisor.ranking.decision import headline
from reports.formatting import fmt_money, fmt_usd
from reports.recommendation import render_recommendation_html


def _section(document: str, start: str, end: str) -> str:
    return document[document.index(start):document.index(end, document.index(start))]


def test_top_pick_run_cost_is_in_cents_in_every_html_place() -> None:
    rec = sample_recommendation()
    top = rec.ranked[0]
    cents = fmt_usd(top.run_cost_usd)
    assert cents.endswith(f".{round(top.run_cost_usd * 100) % 100:02d}")
    document = render_recommendation_html(rec, generated_at=GENERATED_AT)
    card = _section(document, '<div class="k">whole run</div>', "</div></div>")
    assert f'<div class="v">{fmt_money(top.run_cost_usd)}</div>' in card
    ranking_row = _section(document, '<tr class="top">', "</tr>")
    assert f'<td class="num">{cents}</td>' in ranking_row
    pareto = _section(document, "Pareto front offers", "</table>")
    assert f"<td>{top.offer.key}</td>" in pareto and f'<td class="num">{cents}</td>' in pareto


def test_no_whole_dollar_run_cost_in_the_ranking() -> None:
    document = render_recommendation_html(sample_recommendation(), generated_at=GENERATED_AT)
    ranking = _section(document, 'id="ranking"', "</section>")
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr.*?</tr>", ranking)]
    run_costs = [cells[-2] for cells in rows if cells]  # the "run $" column
    assert len(run_costs) == len(sample_recommendation().ranked)
    assert all(re.fullmatch(r"[\d,]+\.\d\d", cost) for cost in run_costs), run_costs


def test_money_signs_and_separators() -> None:
    assert [fmt_money(v) for v in (3.634, 1234.5, -1200.0, 0.004)] == [
        "$3.63", "$1,234.50", "-$1,200.00", "$0.004"]


@pytest.mark.parametrize(("usd", "text"), [
    (1234.5, "$1,234.50"),      # from $1 up: cents with separators
    (1.0, "$1.00"),
    (0.9996, "$1.00"),          # rounds up into the dollars
    (0.523, "$0.523"),          # below $1: three significant figures
    (0.5, "$0.50"),             # zeros past the cents dropped, never below the cents
    (0.0213, "$0.0213"),        # the MLP run: was $0.02
    (0.0261, "$0.0261"),
    (0.02, "$0.02"),
    (0.004, "$0.004"),          # was $0.00
    (0.00012345, "$0.000123"),
    (3e-9, "$0.000000003"),
    (0.0, "$0.00"),
    (-0.0213, "-$0.0213"),
])
def test_money_below_a_dollar_keeps_three_significant_figures(usd: float, text: str) -> None:
    assert fmt_money(usd) == text
    assert fmt_usd(abs(usd)) == text.lstrip("-$")


def test_a_cheap_run_headline_range_differs() -> None:
    rec = sample_recommendation()
    pick = replace(rec.ranked[0], run_cost_usd=0.0235, run_cost_usd_low=0.0213,
                   run_cost_usd_high=0.0261)
    line = headline(replace(rec, ranked=(pick, *rec.ranked[1:])))
    assert "run $0.0235 ($0.0213 to $0.0261)" in line
