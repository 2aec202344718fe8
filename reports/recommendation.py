"""The recommendation report: one self-contained HTML page plus the per-offer CSV.

Sections: summary (top pick, savings against a baseline), warnings and advice, a bar chart of
samples per dollar with interval error bars, run cost against run time with the Pareto front,
the ranking table, rejected offers grouped by reason (full list folded), which numbers are
measured and which predicted, the assumptions, and the CSV columns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from advisor.ranking import (
    BASIS_LABEL,
    BASIS_MEANING,
    CostEstimate,
    Recommendation,
    Rejection,
    RejectionKind,
    describe_opportunity,
    headline,
)
from advisor.throughput import Basis
from reports._scale import wants_log_axis
from reports.baseline import Baseline, Savings, choose_baseline, savings
from reports.charts import Bar, Point, bar_chart, pareto_front, scatter_chart
from reports.columns import columns_html
from reports.formatting import fmt_money, fmt_number, fmt_usd
from reports.html import Child, Markup, card, el, escape, offer_key, page, table
from reports.output import ReportFiles, ensure_folder, write_text
from reports.pdf import print_pdf
from reports.recommendation_csv import COLUMN_DOCS, write_recommendation_csv

__all__ = [
    "BASIS_COLORS",
    "ReportFiles",
    "render_recommendation_html",
    "write_recommendation_html",
    "write_recommendation_report",
]

BASIS_COLORS = {str(Basis.MEASURED): "#1b7837", str(Basis.TUNED): "#5aae61",
                str(Basis.PREDICTED): "#2166ac", str(Basis.PRIOR): "#d6842a"}
_TABLE_ROWS = 25
_BARS = 20


def _offer_label(est: CostEstimate | None, offer_key: str) -> str:
    if est is None:
        return offer_key
    o = est.offer
    return f"{o.cloud} {o.region} {o.instance_type} {o.market} ({o.accelerator_count}x {o.accelerator})"


def _basis_tag(basis: Basis) -> Markup:
    return el("span", {"class": f"tag {basis}"}, str(basis))


def _summary(rec: Recommendation, base: Baseline | None, saved: Savings | None) -> Markup:
    if not rec.ranked:
        return el("div", {"class": "warning"}, "No offer meets every constraint; see the "
                  "rejected offers below.")
    top = rec.ranked[0]
    basis = top.throughput.basis
    cards = [
        card(f"top pick ({basis}: {BASIS_LABEL[basis]})",
              f"{top.offer.accelerator_count}x {top.offer.accelerator}",
              Markup(offer_key(top.offer.key)
                     + escape(f" at {fmt_money(top.offer.price_usd_per_hour)}/h"))),
        card("whole run", fmt_money(top.run_cost_usd),
              f"{fmt_money(top.run_cost_usd_low)} to {fmt_money(top.run_cost_usd_high)}; "
              f"{top.run_hours:,.1f} h"),
        card("samples per dollar", fmt_number(top.samples_per_dollar),
              f"{fmt_number(top.samples_per_dollar_low)} to "
              f"{fmt_number(top.samples_per_dollar_high)}; basis: {basis}"),
        card("offers", f"{len(rec.ranked):,} ranked", f"{len(rec.rejected):,} rejected"),
    ]
    if saved is not None:
        b = saved.baseline.estimate_basis
        cards.insert(2, card(
            "saved vs baseline",
            f"{fmt_money(saved.run_saved_usd_low)} to {fmt_money(saved.run_saved_usd_high)}",
            f"pick {basis} ({BASIS_LABEL[basis]}) vs baseline {b}; point estimate "
            f"{fmt_money(saved.run_saved_usd)} ({saved.run_saved_fraction:.0%})"))
    blocks: list[Child] = [el("p", {"class": "headline"}, headline(rec)),
                           el("div", {"class": "cards"}, cards)]
    blocks.append(_baseline_text(base, saved))
    if rec.could_be_better:
        blocks.append(el("div", {"class": "advice"}, "Could be better (the optimistic end "
                         "beats the pick; a probe settles it):",
                         el("ul", None, [el("li", None, describe_opportunity(o))
                                         for o in rec.could_be_better])))
    return el("section", {"id": "summary"}, blocks)


def _baseline_text(base: Baseline | None, saved: Savings | None) -> Markup:
    if base is None:
        return el("p", {"class": "muted"}, "No baseline: the ranking holds no on-demand A100 "
                  "offer; name one with --baseline cloud:instance_type.")
    head = (f"Baseline ({base.chosen_by}): {base.offer.key} at "
            f"{fmt_money(base.offer.price_usd_per_hour)}/h ({base.offer.market} price)")
    if saved is None:
        return el("p", None, head + f". It was rejected ({base.rejected_because}), so it has no "
                  "cost estimate to compare with.")
    est = base.estimate
    assert est is not None
    return el("p", None, head, f", {est.run_hours:,.1f} h and {fmt_money(est.run_cost_usd)} for the "
              f"run. The top pick {saved.describe()}. Per sample it saves "
              f"{saved.per_sample_fraction:.0%} (from {saved.per_sample_fraction_low:.0%} to "
              f"{saved.per_sample_fraction_high:.0%} across both throughput intervals); it takes "
              f"{abs(saved.hours_difference):,.1f} h {'longer' if saved.hours_difference > 0 else 'less'}.")


def _charts(rec: Recommendation, base: Baseline | None) -> Markup:
    bars = [Bar(label=f"{i}. {e.offer.cloud} {e.offer.region} {e.offer.instance_type} {e.offer.market}",
                value=e.samples_per_dollar,
                low=e.throughput.samples_per_second_low * 3600 / e.offer.price_usd_per_hour,
                high=e.throughput.samples_per_second_high * 3600 / e.offer.price_usd_per_hour,
                group=str(e.throughput.basis),
                title=f"{e.offer.key}: {fmt_number(e.samples_per_dollar)} samples/$ ({e.throughput.basis})")
            for i, e in enumerate(rec.ranked[:_BARS], start=1)]
    points = [Point(e.run_hours, e.run_cost_usd, str(e.throughput.basis),
                    f"{e.offer.key}: {e.run_hours:,.1f} h, {fmt_money(e.run_cost_usd)}")
              for e in rec.ranked]
    front = pareto_front(points)
    highlight = []
    if points:
        highlight.append((points[0], "top pick"))
    base_index = next((i for i, e in enumerate(rec.ranked)
                       if base is not None and e is base.estimate), None)
    if base_index is not None and base_index > 0:
        highlight.append((points[base_index], "baseline"))
    scatter = scatter_chart(
        points, x_label="run time (hours)", y_label="run cost (USD)", colors=BASIS_COLORS,
        name="cost-vs-time", log_x=wants_log_axis([p.x for p in points]),
        log_y=wants_log_axis([p.y for p in points]), front=front, highlight=highlight)
    return el("section", {"id": "charts"},
              el("h2", None, "Samples per dollar"),
              el("figure", None, bar_chart(bars, x_label="samples per dollar (higher is better)",
                                           colors=BASIS_COLORS, name="samples-per-dollar"),
                 el("figcaption", None, f"The best {len(bars)} offers; whiskers span the "
                    "throughput interval, colour gives the basis of the estimate.")),
              el("h2", None, "Run cost against run time"),
              el("figure", None, scatter, el("figcaption", None, (
                  f"Every feasible offer ({len(points):,}). The Pareto front ({len(front)} "
                  "offers) joins those no other offer beats on both cost and time.")),
                 _front_table(rec, front, points)))


def _front_table(rec: Recommendation, front: Sequence[Point], points: Sequence[Point]) -> Markup:
    index = {id(p): i for i, p in enumerate(points)}
    rows = []
    for p in front:
        e = rec.ranked[index[id(p)]]
        rows.append([e.offer.key, f"{e.offer.accelerator_count}x {e.offer.accelerator}",
                     f"{e.run_hours:,.1f}", fmt_usd(e.run_cost_usd), _basis_tag(e.throughput.basis)])
    return el("details", None, el("summary", None, f"Pareto front offers ({len(rows)})"),
              table(["offer", "accelerators", "run h", "run $", "basis"], rows, numeric=[2, 3]))


def _ranking_rows(ranked: Sequence[CostEstimate], start: int) -> list[list[Child]]:
    rows: list[list[Child]] = []
    for i, e in enumerate(ranked, start=start):
        o, t = e.offer, e.throughput
        rows.append([
            i, f"{o.cloud} {o.region} {o.instance_type}", f"{o.accelerator_count}x {o.accelerator}",
            str(o.market), fmt_usd(o.price_usd_per_hour), o.observed_at.isoformat(),
            f"{fmt_number(t.samples_per_second)} ({fmt_number(t.samples_per_second_low)}–"
            f"{fmt_number(t.samples_per_second_high)})", fmt_number(e.samples_per_dollar),
            f"{e.run_hours:,.1f}", fmt_usd(e.run_cost_usd), _basis_tag(t.basis)])
    return rows


_RANK_HEADERS = ["#", "offer", "accelerators", "market", "$/h", "price seen", "samples/s (low–high)",
                 "samples/$", "run h", "run $", "basis"]


def _ranking(rec: Recommendation) -> Markup:
    head = rec.ranked[:_TABLE_ROWS]
    rest = rec.ranked[_TABLE_ROWS:]
    num = [0, 4, 6, 7, 8, 9]
    parts: list[Child] = [
        el("h2", {"id": "ranking"}, "Ranking"),
        table(_RANK_HEADERS, _ranking_rows(head, 1), numeric=num,
              row_classes=["top"] + [None] * (len(head) - 1)),
    ]
    if rest:
        parts.append(el("details", None, el("summary", None, f"The other {len(rest):,} ranked "
                                            "offers (all are in the CSV)"),
                        table(_RANK_HEADERS, _ranking_rows(rest, _TABLE_ROWS + 1), numeric=num)))
    return el("section", None, parts)


def _rejections(rec: Recommendation) -> Markup:
    kinds = Counter(r.kind for r in rec.rejected)
    example: dict[RejectionKind, Rejection] = {}
    for r in rec.rejected:
        example.setdefault(r.kind, r)
    # Grouped by the rule each failed; each group shows one real reason and its offer.
    grouped: list[list[Child]] = [[n, example[kind].reason, offer_key(example[kind].offer.key)]
                                   for kind, n in kinds.most_common()]
    full = [[offer_key(r.offer.key), fmt_usd(r.offer.price_usd_per_hour), r.reason]
            for r in rec.rejected]
    return el("section", {"id": "rejected"},
              el("h2", None, f"Rejected offers ({len(rec.rejected):,})"),
              table(["offers", "reason (of the example)", "example offer"], grouped, numeric=[0]),
              el("details", None, el("summary", None, f"All {len(full):,} rejected offers"),
                 table(["offer", "$/h", "reason"], full, numeric=[1])))


def _evidence(rec: Recommendation) -> Markup:
    counts = Counter(e.throughput.basis for e in rec.ranked)
    rows: list[list[Child]] = [[_basis_tag(b), counts.get(b, 0), BASIS_MEANING[b]]
                               for b in Basis]
    sources = sorted({e.offer.source for e in rec.ranked} | {r.offer.source for r in rec.rejected})
    return el("section", {"id": "evidence"},
              el("h2", None, "Measured and predicted numbers"),
              el("p", None, "Throughput (samples per second) of each ranked offer:"),
              table(["basis", "ranked offers", "meaning"], rows, numeric=[1]),
              el("ul", {"class": "notes"},
                 el("li", None, "Prices are observed figures from the price catalog, as of the "
                    f"date in each row (snapshot captured {rec.prices_captured_at.isoformat()}; "
                    f"sources: {', '.join(sources) or 'none'}); they are never re-priced."),
                 el("li", None, "Run time and run cost are computed from throughput, price and the "
                    "assumptions below; memory per device is computed from the local profile."))
              )


def render_recommendation_html(rec: Recommendation, *, baseline: str | None = None,
                               generated_at: datetime | None = None) -> str:
    """The whole HTML report as a string (ReportError when ``baseline`` matches nothing)."""
    base = choose_baseline(rec, baseline)
    saved = savings(rec.ranked[0], base) if rec.ranked and base is not None else None
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    notes: list[Child] = [el("div", {"class": "warning"}, w) for w in rec.warnings]
    notes += [el("div", {"class": "advice"}, a) for a in rec.advice]
    body = [
        el("h1", None, f"Instance recommendation: {rec.workload}"),
        el("p", {"class": "sub"}, f"Best samples per dollar first. Prices captured "
           f"{rec.prices_captured_at.isoformat()}; report generated {when}."),
        _summary(rec, base, saved),
        el("section", {"id": "advice"}, el("h2", None, "Warnings and advice"), notes)
        if notes else None,
        _charts(rec, base),
        _ranking(rec),
        _rejections(rec),
        _evidence(rec),
        el("section", {"id": "assumptions"}, el("h2", None, "Assumptions"),
           el("ul", {"class": "notes"}, [el("li", None, a) for a in rec.assumptions])),
        el("section", {"id": "columns"}, el("h2", None, "Columns of the CSV"),
           el("p", None, "The CSV beside this report has one row per offer; its columns:"),
           columns_html(COLUMN_DOCS)),
    ]
    return page(f"advisor: {rec.workload}", *body,
                footer=f"advisor recommend · {rec.workload} · prices captured "
                       f"{rec.prices_captured_at.isoformat()} · generated {when}")


def write_recommendation_html(rec: Recommendation, path: Path, *, baseline: str | None = None,
                              generated_at: datetime | None = None) -> Path:
    """Write the HTML report to ``path`` (UTF-8, missing folders created); returns the path."""
    return write_text(path, render_recommendation_html(rec, baseline=baseline,
                                                       generated_at=generated_at))


def write_recommendation_report(rec: Recommendation, out_dir: Path, *,
                                baseline: str | None = None, pdf: bool = False,
                                name: str = "recommendation",
                                generated_at: datetime | None = None) -> ReportFiles:
    """Write ``<name>.html``, ``<name>.csv`` and ``<name>.columns.md`` (and ``.pdf``) to
    ``out_dir``, creating it."""
    ensure_folder(out_dir)
    html_path = write_recommendation_html(rec, out_dir / f"{name}.html", baseline=baseline,
                                          generated_at=generated_at)
    csv_path, doc = write_recommendation_csv(rec, out_dir / f"{name}.csv")
    pdf_path = print_pdf(html_path, out_dir / f"{name}.pdf") if pdf else None
    return ReportFiles(html_path, csv_path, doc, pdf_path)
