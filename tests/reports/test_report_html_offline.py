"""The HTML reports are self-contained: no URL to another host, no linked files, text escaped."""

from __future__ import annotations

import html
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from offline_html import blank_page, external_references
from report_samples import GENERATED_AT, mlp_ranking, sample_recommendation, sample_sweep

from advisor.sweep import SweepStatus as SweepReportData
from reports.recommendation import render_recommendation_html
from reports.sweep import render_sweep_html


def _recommendation_html() -> str:
    return render_recommendation_html(sample_recommendation(), generated_at=GENERATED_AT)


def _sweep_html() -> str:
    return render_sweep_html(sample_sweep(), generated_at=GENERATED_AT)


@pytest.mark.parametrize("render", [_recommendation_html, _sweep_html])
def test_report_has_no_external_reference(render) -> None:
    document = render()
    assert external_references(document) == []
    assert "<svg" in document and "<style>" in document


@pytest.mark.parametrize(("snippet", "found"), [
    ('<img src="https://example.com/x.png">', True),          # image from another host
    ('<a href="http://example.com">x</a>', True),              # link out
    ('<link rel="stylesheet" href="s.css">', True),            # linked stylesheet
    ('<script src="app.js"></script>', True),                  # linked script
    ("<style>body{background:url(//cdn.x/y.png)}</style>", True),  # css fetch
    ('<div style="background:url(http://x)"></div>', True),    # inline style fetch
    ('<a href="#ranking">x</a>', False),                       # in-page anchor
    ('<svg xmlns="http://www.w3.org/2000/svg"></svg>', False),  # a namespace is not a fetch
])
def test_checker_catches_external_references(snippet: str, found: bool) -> None:
    assert bool(external_references(blank_page() + snippet)) is found


def test_page_forbids_fetches_by_csp() -> None:
    assert "content=\"default-src 'none';" in html.unescape(_recommendation_html())


def test_user_text_is_escaped() -> None:
    rec = replace(sample_recommendation(), workload='<script>alert("x")</script> & co',
                  advice=("<b>bold</b>",))
    document = render_recommendation_html(rec, generated_at=GENERATED_AT)
    assert "<script>" not in document and "<b>bold" not in document
    assert "&lt;script&gt;" in document and "&lt;b&gt;bold" in document


class _Sections(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.charts: list[str] = []
        self.marks = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "svg" and a.get("data-chart"):
            self.charts.append(str(a["data-chart"]))
        if "mark" in (a.get("class") or "").split():
            self.marks += 1


def _sections(document: str) -> _Sections:
    parser = _Sections()
    parser.feed(document)
    return parser


def test_recommendation_report_sections_and_charts() -> None:
    document = _recommendation_html()
    found = _sections(document)
    assert {"summary", "advice", "charts", "ranking", "rejected", "evidence", "assumptions",
            "columns"} <= found.ids
    assert found.charts == ["samples-per-dollar", "cost-vs-time"]
    # 5 bars + 5 scatter points + Pareto front rings
    assert found.marks >= 10
    assert "Pareto front" in document
    # Rejections are grouped by reason, shown with a real example, never a placeholder.
    assert "not in constraints.regions" in document and "{region}" not in document
    assert "{cloud}" not in document and "{accelerator}" not in document
    assert ":<wbr>" in document  # offer keys wrap only after a colon
    assert "<details>" in document  # full rejected list folded


def test_recommendation_report_states_savings_against_default_baseline() -> None:
    document = _recommendation_html()
    # default baseline: cheapest on-demand 8x A100 = p4d us-east-1 at $32.77/h
    assert "aws:p4d.24xlarge:us-east-1:on-demand at $32.77/h" in document
    # a range from both intervals, with the basis of both sides in the same line
    assert "The top pick saves $" in document and "(point estimate $35" in document
    assert ("the pick is predicted (a prediction from other models), the baseline predicted "
            "(a prediction from other models)") in document


def test_sweep_report_sections_and_figures() -> None:
    document = _sweep_html()
    found = _sections(document)
    assert {"summary", "spend", "by-state", "cost-vs-objective", "best", "trials",
            "columns"} <= found.ids
    assert found.charts == ["spend-over-time", "spend-by-state", "cost-vs-objective"]
    assert "$1.21" in document           # saved by pruning
    assert "280.4 MiB" in document       # bytes cleaned
    assert "Best trial: #4" in document
    assert "budget $5.00" in document


def test_empty_sweep_renders_no_data_charts() -> None:
    empty = SweepReportData(study="s", direction="maximize", instance="local",
                            price_usd_per_hour=0.0, trials=())
    document = render_sweep_html(empty, generated_at=GENERATED_AT)
    assert "no data" in document and external_references(document) == []


def test_the_ranking_shows_each_spot_rows_band_as_the_terminal_table_does() -> None:
    # the table's market cell reads 'spot >20%?' (or 'spot 5-10%'); the HTML said 'spot' alone
    rec = mlp_ranking(clouds=["aws"])
    document = render_recommendation_html(rec, generated_at=GENERATED_AT)
    cells = {f"<td>spot {e.spot.bucket.value}{'?' if e.spot.basis.value == 'assumed' else ''}"
             "</td>" for e in rec.ranked if e.spot is not None}
    assert len(cells) > 1  # published bands and the assumed one
    assert all(html.escape(cell, quote=False).replace("&lt;td&gt;", "<td>")
               .replace("&lt;/td&gt;", "</td>") in document for cell in cells)
    assert "'?' = none published, the top band assumed" in html.unescape(document)
