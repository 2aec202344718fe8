"""The recommendation report: one self-contained HTML page plus the per-offer CSV.

The page is ``templates/recommendation.html.j2``; this module works out what it shows.

Sections: summary (top pick, savings against a baseline), warnings and advice, a bar chart of
samples per dollar with interval error bars, run cost against run time with the Pareto front,
the ranking table, rejected offers grouped by reason (full list folded), which numbers are
measured and which predicted, the assumptions, and the CSV columns.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from advisor.ranking import (
    BASIS_LABEL,
    BASIS_MEANING,
    Recommendation,
    Rejection,
    RejectionKind,
    describe_opportunity,
    headline,
    spot_legend,
)
from advisor.throughput import Basis
from pricing import InstanceOffer
from reports._scale import wants_log_axis
from reports.baseline import Baseline, CompareMarket, report_savings
from reports.charts import Bar, Point, bar_chart, pareto_front, scatter_chart
from reports.formatting import fmt_money, fmt_number
from reports.output import ReportFiles, ensure_folder, write_text
from reports.pdf import print_pdf
from reports.recommendation_csv import COLUMN_DOCS, write_recommendation_csv
from reports.render import render

__all__ = [
    "BASIS_COLORS",
    "PriceSources",
    "ReportFiles",
    "price_sources",
    "render_recommendation_html",
    "write_recommendation_html",
    "write_recommendation_report",
]

BASIS_COLORS = {str(Basis.MEASURED): "#1b7837", str(Basis.TUNED): "#5aae61",
                str(Basis.PREDICTED): "#2166ac", str(Basis.PRIOR): "#d6842a"}
_TABLE_ROWS = 25
_BARS = 20


_REPLACES = "; replaces "
_SHARED_MIN_CHARS = 30


@dataclass(frozen=True)
class PriceSources:
    """Price sources that begin with the same words: ``shared`` once, then each source's own
    ending and how many offers it priced; ``replacing`` when they replaced snapshot prices."""

    shared: str
    endings: tuple[tuple[str, int], ...]
    replacing: bool


def price_sources(offers: Iterable[InstanceOffer]) -> list[PriceSources]:
    """Each distinct price source once, sources that share their first words grouped.

    A price that a supplement replaced names its source as ``new; replaces P USD/h of old``
    (``pricing._import_shared``), different for every offer; the page names the new source once
    and the CSV's ``price_source`` keeps each offer's whole text. Sources that differ only in
    their last words (one file per instance family, say) share one line.
    """
    counts: Counter[str] = Counter()
    replacing: set[str] = set()
    for offer in offers:
        source, replaces, _ = offer.source.partition(_REPLACES)
        counts[source] += 1
        if replaces:
            replacing.add(source)
    groups: list[list[str]] = []
    for source in sorted(counts):
        if groups and len(_shared_words([*groups[-1], source])) >= _SHARED_MIN_CHARS:
            groups[-1].append(source)
        else:
            groups.append([source])
    found = []
    for group in groups:
        shared = _shared_words(group) if len(group) > 1 else group[0]
        found.append(PriceSources(shared.rstrip(), tuple((s[len(shared):], counts[s]) for s in group),
                                  any(s in replacing for s in group)))
    return found


def _shared_words(texts: Sequence[str]) -> str:
    """The longest beginning of every text in ``texts`` that ends at a space ('' if none)."""
    prefix = os.path.commonprefix(list(texts))
    return prefix[:prefix.rfind(" ") + 1]


def _charts(rec: Recommendation, base: Baseline | None) -> dict[str, object]:
    bars = [Bar(label=f"{i}. {e.offer.cloud} {e.offer.region} {e.offer.instance_type} {e.offer.market}",
                value=e.samples_per_dollar,
                low=e.samples_per_dollar_low, high=e.samples_per_dollar_high,
                group=str(e.throughput.basis),
                title=f"{e.offer.key}: {fmt_number(e.samples_per_dollar)} samples/$ ({e.throughput.basis})")
            for i, e in enumerate(rec.ranked[:_BARS], start=1)]
    points = [Point(e.run_hours, e.run_cost_usd, str(e.throughput.basis),
                    f"{e.offer.key}: {e.run_hours:,.1f} h, {fmt_money(e.run_cost_usd)}")
              for e in rec.ranked]
    front = pareto_front(points)
    highlight = [(points[0], "top pick")] if points else []
    base_index = next((i for i, e in enumerate(rec.ranked)
                       if base is not None and e is base.estimate), None)
    if base_index is not None and base_index > 0:
        highlight.append((points[base_index], "baseline"))
    index = {id(p): i for i, p in enumerate(points)}
    return {
        "bars": bar_chart(bars, x_label="samples per dollar (higher is better)",
                          colors=BASIS_COLORS, name="samples-per-dollar"),
        "bar_count": len(bars), "point_count": len(points),
        "scatter": scatter_chart(
            points, x_label="run time (hours)", y_label="run cost (USD)", colors=BASIS_COLORS,
            name="cost-vs-time", log_x=wants_log_axis([p.x for p in points]),
            log_y=wants_log_axis([p.y for p in points]), front=front, highlight=highlight),
        "front": [rec.ranked[index[id(p)]] for p in front],
    }


def _rejection_groups(rec: Recommendation) -> list[tuple[int, Rejection]]:
    """Rejections grouped by the rule each failed: (count, one real example), most first."""
    kinds = Counter(r.kind for r in rec.rejected)
    example: dict[RejectionKind, Rejection] = {}
    for r in rec.rejected:
        example.setdefault(r.kind, r)
    return [(n, example[kind]) for kind, n in kinds.most_common()]


def render_recommendation_html(rec: Recommendation, *, baseline: str | None = None,
                               compare_market: CompareMarket = CompareMarket.SAME,
                               generated_at: datetime | None = None) -> str:
    """The whole HTML report as a string (ReportError when ``baseline`` matches nothing)."""
    base, saved = report_savings(rec, baseline, compare_market)
    basis_counts = Counter(e.throughput.basis for e in rec.ranked)
    return render(
        "recommendation.html.j2", rec=rec, base=base, saved=saved,
        order=rec.rank_by.order_text,
        when=(generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        headline=headline(rec), basis_label=BASIS_LABEL,
        opportunities=[describe_opportunity(o) for o in rec.could_be_better],
        bases=[(b, basis_counts.get(b, 0), BASIS_MEANING[b]) for b in Basis],
        ranked=list(enumerate(rec.ranked, start=1)), table_rows=_TABLE_ROWS,
        spot_legend=spot_legend(e.spot.basis for e in rec.ranked if e.spot is not None),
        rejection_groups=_rejection_groups(rec),
        sources=price_sources([e.offer for e in rec.ranked] + [r.offer for r in rec.rejected]),
        columns=COLUMN_DOCS, **_charts(rec, base))


def write_recommendation_html(rec: Recommendation, path: Path, *, baseline: str | None = None,
                              compare_market: CompareMarket = CompareMarket.SAME,
                              generated_at: datetime | None = None) -> Path:
    """Write the HTML report to ``path`` (UTF-8, missing folders created); returns the path."""
    return write_text(path, render_recommendation_html(rec, baseline=baseline,
                                                       compare_market=compare_market,
                                                       generated_at=generated_at))


def write_recommendation_report(rec: Recommendation, out_dir: Path, *,
                                baseline: str | None = None, pdf: bool = False,
                                compare_market: CompareMarket = CompareMarket.SAME,
                                name: str = "recommendation",
                                generated_at: datetime | None = None) -> ReportFiles:
    """Write ``<name>.html``, ``<name>.csv`` and ``<name>.columns.md`` (and ``.pdf``) to
    ``out_dir``, creating it; both state the top pick's saving against ``baseline``
    (``report_savings``)."""
    ensure_folder(out_dir)
    html_path = write_recommendation_html(rec, out_dir / f"{name}.html", baseline=baseline,
                                          compare_market=compare_market,
                                          generated_at=generated_at)
    _, saved = report_savings(rec, baseline, compare_market)
    csv_path, doc = write_recommendation_csv(rec, out_dir / f"{name}.csv", saved=saved)
    pdf_path = print_pdf(html_path, out_dir / f"{name}.pdf") if pdf else None
    return ReportFiles(html_path, csv_path, doc, pdf_path)
