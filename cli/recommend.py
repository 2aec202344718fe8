"""``advisor recommend``: rank offers for a model.yaml."""

from __future__ import annotations

import contextlib
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.cells import cell_len
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from advisor.ranking import RankBy, TunedPolicy
from cli.errors import handle_errors
from cli.options import (
    OneOf,
    PositiveNumber,
    check_report_outputs,
    json_option,
    spec_file_argument,
)
from cli.render import (
    console,
    echo_json,
    echo_written,
    fmt_compact,
    fmt_number,
    fmt_usd,
    printable,
    status,
)

if TYPE_CHECKING:  # the ranking is imported when a command ranks, not for --help
    from advisor.ranking import CostEstimate, OfferGroup, Recommendation

__all__ = ["rank_for_file", "ranking_table", "recommend"]


@dataclass(frozen=True)
class _Col:
    """One column of the terminal ranking: text columns may wrap, the others never do."""

    name: str
    numeric: bool = True
    wraps: bool = False


_KEY = "instance"  # cloud:instance_type, the part of the offer key that must stay whole
_RANGE = "samples/$ range"
_COLUMNS = (_Col("#"), _Col(_KEY, numeric=False), _Col("region", numeric=False, wraps=True),
            _Col("accelerators", numeric=False, wraps=True),
            _Col("market", numeric=False), _Col("$/h"), _Col("samples/s"),
            _Col("samples/$"), _Col(_RANGE, wraps=True), _Col("run h"), _Col("run $"),
            _Col("basis", numeric=False, wraps=True))
# Left out, in this order, when the table cannot fit otherwise (JSON, CSV and HTML keep them);
# never the column the rows are ordered by (the range's low end, or the point samples/$).
_OPTIONAL = {RankBy.CONSERVATIVE: ("samples/s", "samples/$"),
             RankBy.ESTIMATE: ("samples/s", _RANGE)}


def _market(est: CostEstimate) -> str:
    """``on-demand``, or ``spot`` with its monthly interruption band (``?`` when none is
    published and the top band is assumed)."""
    from advisor.ranking import SpotRiskBasis

    spot = est.spot
    if spot is None:
        return str(est.offer.market)
    return f"spot {spot.bucket.value}" + ("?" if spot.basis is SpotRiskBasis.ASSUMED else "")


def _cells(rec: Recommendation, top: int, *, all_regions: bool) -> list[dict[str, str]]:
    """Table cells of the first ``top`` rows: one per offer, or one per choice (cloud,
    instance type, market) in its best region with '+N' (more regions) beside it."""
    from advisor.ranking import group_regions

    if all_regions:
        shown = [(i, est, 0) for i, est in enumerate(rec.ranked[:top], start=1)]
    else:
        shown = [(g.rank, g.best, g.other_regions) for g in group_regions(rec.ranked)[:top]]
    rows = []
    for i, est, more in shown:
        o, t = est.offer, est.throughput
        rows.append({
            "#": str(i), _KEY: f"{o.cloud}:{o.instance_type}",
            "region": o.region + (f" +{more}" if more else ""),
            "accelerators": f"{o.accelerator_count}x {o.accelerator}", "market": _market(est),
            "$/h": fmt_usd(o.price_usd_per_hour), "samples/s": fmt_number(t.samples_per_second),
            "samples/$": fmt_number(est.samples_per_dollar),
            _RANGE: f"{fmt_compact(est.samples_per_dollar_low)}-"
                    f"{fmt_compact(est.samples_per_dollar_high)}",
            "run h": f"{est.run_hours:,.1f}", "run $": fmt_usd(est.run_cost_usd),
            "basis": str(t.basis),
        })
    return rows


def _title(rec: Recommendation) -> str:
    return (f"{rec.workload}: best samples per dollar first, by {rec.rank_by.order_text} "
            f"(prices captured {rec.prices_captured_at})")


def _offer_list(rec: Recommendation, rows: Sequence[dict[str, str]]) -> Group:
    """The narrow-console layout: one entry per offer, the key on its own line first."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(justify="right", no_wrap=True)
    grid.add_column(overflow="fold")
    for r in rows:
        grid.add_row(Text(f"{r['#']}."), Text(
            f"{r[_KEY]}\n{r['region']}  {r['market']}  {r['accelerators']}  {r['basis']}\n"
            f"${r['$/h']}/h  run {r['run h']} h  ${r['run $']}\n"
            f"{r['samples/s']} samples/s  {r['samples/$']} samples/$ ({r[_RANGE]})"))
    return Group(Text(_title(rec)), grid)


def _widest(col: _Col, rows: Sequence[dict[str, str]]) -> int:
    """The width ``col`` takes unwrapped: its longest cell or header line."""
    return max(cell_len(line) for text in (col.name, *(r[col.name] for r in rows))
               for line in text.splitlines())


def _wrap_widths(rows: Sequence[dict[str, str]], columns: Sequence[_Col],
                 width: int) -> dict[str, int]:
    """Widths of the wrapping columns for a table ``width`` wide: each at least its longest
    word (rich, left to narrow them, folds words: 'V100-16GB-SX' over 'M2'), the room left
    given first to the columns that need the least to stop wrapping."""
    wrapping = [c for c in columns if c.wraps]
    widths = {c.name: _narrowest(c, rows) for c in wrapping}
    room = width - _min_width(rows, columns)
    for col in sorted(wrapping, key=lambda c: _widest(c, rows) - widths[c.name]):
        grow = max(0, min(room, _widest(col, rows) - widths[col.name]))
        widths[col.name] += grow
        room -= grow
    return widths


def _table(rec: Recommendation, rows: Sequence[dict[str, str]], columns: Sequence[_Col],
           *, width: int | None = None) -> Table:
    """The rows as a rich table: the text columns wrap between words to fit ``width`` (None:
    rich wraps them as it likes); the others are never narrowed (their minimum width is
    their longest cell)."""
    table = Table(title=_title(rec), title_justify="left")
    fixed = _wrap_widths(rows, columns, width) if width is not None else {}
    for col in columns:
        table.add_column(col.name, justify="right" if col.numeric else "left", overflow="fold",
                         no_wrap=not col.wraps, width=fixed.get(col.name),
                         min_width=None if col.wraps else _narrowest(col, rows))
    for row in rows:
        table.add_row(*(Text(row[c.name]) for c in columns))
    return table


def _narrowest(col: _Col, rows: Sequence[dict[str, str]]) -> int:
    """The narrowest ``col`` may be: its longest cell or header, or where it wraps, its
    longest word."""
    texts = (col.name, *(r[col.name] for r in rows))
    if col.wraps:
        return max(cell_len(word) for text in texts for word in text.split())
    return max(cell_len(line) for text in texts for line in text.splitlines())


def _min_width(rows: Sequence[dict[str, str]], columns: Sequence[_Col]) -> int:
    """The narrowest ``_table`` of ``rows`` fits, as rich measures it (a test holds the two
    equal), from the cells alone: each column its ``_narrowest`` plus its padding (one space
    either side), and the box a rule between columns and at either edge. Measuring the rich
    table itself renders every cell, for each set of columns tried."""
    return sum(_narrowest(col, rows) + 2 for col in columns) + len(columns) + 1


def ranking_table(rec: Recommendation, top: int, *, width: int,
                  all_regions: bool = False) -> tuple[Table | Group, list[str]]:
    """The ranking as a rich table no wider than ``width``, and the columns it left out.

    Nothing is ever cut off with an ellipsis: text columns wrap first, then the optional
    columns are left out (while rich measures the table wider than ``width``); when even that
    is too wide, each offer becomes a short entry whose first line is the offer key (folded
    only when the console is narrower than the key).
    """
    rows = _cells(rec, top, all_regions=all_regions)
    optional = _OPTIONAL[rec.rank_by]
    for n in range(len(optional) + 1):
        columns = [c for c in _COLUMNS if c.name not in optional[:n]]
        if _min_width(rows, columns) <= width:
            return _table(rec, rows, columns, width=width), list(optional[:n])
    return _offer_list(rec, rows), []


def _legend(rec: Recommendation, shown: Sequence[OfferGroup] | None, top: int) -> list[str]:
    """What the table's '#' and 'spot' cells mean, when the shown rows need it: '#' skips
    numbers where rows fold regions (``shown``: the groups shown; None: every row shown)."""
    from advisor.ranking import spot_legend

    lines = []
    if shown and any(g.rank != i for i, g in enumerate(shown, start=1)):
        lines.append("# = the offer's place among all ranked offers; the numbers skipped are "
                     "other regions and markets of choices above it")
    spots = [g.best.spot for g in shown] if shown else [e.spot for e in rec.ranked[:top]]
    legend = spot_legend(s.basis for s in spots if s)
    return lines if legend is None else [*lines, legend]


def _hanging(out: Console, text: str, *, lead: str = "", hang: int = 4, lead_style: str = "",
             text_style: str = "") -> None:
    """Print ``lead`` and ``text`` (control characters from data shown escaped) wrapped to
    the console, continuation lines indented by ``hang`` columns (a wrapped line never
    restarts at column 0)."""
    lines = textwrap.wrap(lead + printable(text), width=out.width,
                          subsequent_indent=" " * min(hang, out.width // 3),
                          break_on_hyphens=False) or [lead]  # a word past the width folds
    out.print(Text(lines[0][:len(lead)], style=lead_style)
              + Text(lines[0][len(lead):], style=text_style), soft_wrap=True)
    for line in lines[1:]:
        out.print(Text(line, style=text_style), soft_wrap=True)


def _render(rec: Recommendation, top: int, *, all_regions: bool = False) -> None:
    from advisor.ranking import describe_opportunity, group_regions, headline

    out = console()
    _hanging(out, headline(rec), hang=6, text_style="bold")
    if rec.ranked:  # no empty table: the rejections and the advice below say why
        table, dropped = ranking_table(rec, top, width=out.width, all_regions=all_regions)
        out.print(table)
        if dropped:
            out.print(f"({' and '.join(dropped)} left out to fit {out.width} columns; "
                      "--json or --csv has every column)")
    groups = group_regions(rec.ranked)
    grouped = ("" if all_regions or len(groups) == len(rec.ranked) else
               f" as {len(groups):,} choices (one row each, in its best region; '+N' more "
               "regions offer it; --all-regions lists every row)")
    _hanging(out, f"{len(rec.ranked)} offers ranked{grouped}, {len(rec.rejected)} rejected.")
    for line in _legend(rec, groups[:top] if not all_regions else None, top):
        _hanging(out, line)
    for kind, n in rec.rejected.kind_counts().most_common(6):
        example = rec.rejected.first_of(kind)
        assert example is not None  # counted, so there is one
        # the reason is the example's own (its region, accelerator, figures), never the N's
        line = (f"  rejected {n:>4}, e.g. {example.offer.key}: {example.reason} (--json lists "
                "each)" if n > 1 else f"  rejected {n:>4}: {example.reason} "
                f"({example.offer.key})")
        _hanging(out, line, hang=17)
    if rec.could_be_better:
        out.print("could be better (the optimistic end beats the pick; a probe settles it):")
        for opp in rec.could_be_better:
            _hanging(out, f"  - {describe_opportunity(opp)}")
    for warning in rec.warnings:
        _hanging(out, warning, lead="warning: ", hang=9, lead_style="yellow")
    for line in rec.advice:
        _hanging(out, line, lead="advice: ", hang=8, lead_style="green")
    out.print("assumptions:")
    for line in rec.assumptions:
        _hanging(out, f"  - {line}")


def rank_for_file(model_yaml: Path, *, include_flagged: bool = False,
                  rank_by: RankBy = RankBy.CONSERVATIVE,
                  tuned: TunedPolicy = TunedPolicy.OFF) -> Recommendation:
    """``advisor.ranking.service.recommend_for_file`` with a status line on stderr: a spinner
    on a terminal; where stderr is piped, one plain line when the seconds of work start (a
    new model is profiled), nothing otherwise. What the user's model code prints goes to
    stderr."""
    from advisor.ranking import service

    # the user's build() and step may print: stdout keeps only the table or the JSON
    with status(f"ranking offers for {model_yaml} ...") as spinner, \
            contextlib.redirect_stdout(sys.stderr):
        def progress(line: str) -> None:
            if spinner is None:  # stderr is piped: one plain line
                click.echo(printable(line), err=True)
            else:
                spinner.update(escape(printable(line)))

        return service.recommend_for_file(model_yaml, include_flagged=include_flagged,
                                          rank_by=rank_by, tuned=tuned, progress=progress)


_RANKING_OPTIONS = (
    click.option("--include-flagged", is_flag=True,
                 help="Rank offers whose price a consistency check doubts (left out by "
                      "default)."),
    click.option("--rank-by", type=OneOf([str(r) for r in RankBy]),
                 default=str(RankBy.CONSERVATIVE), show_default=True,
                 help="Order by the low end of each offer's samples-per-dollar range "
                      "(conservative: a guess ranks above evidence only when even its "
                      "pessimistic end is better) or by the point estimate."),
    click.option("--tuned", type=OneOf([str(t) for t in TunedPolicy]),
                 default=str(TunedPolicy.OFF), show_default=True,
                 help="Use the best configuration 'advisor probe --tune' measured as a probe's "
                      "throughput (basis 'tuned'): same_numerics only when precision and batch "
                      "are the spec's; any also when they change (check convergence first)."),
)


def ranking_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--include-flagged``, ``--rank-by`` and ``--tuned`` (as ``include_flagged``,
    ``rank_by``, ``tuned``): how offers are ranked, alike in ``recommend`` and the report of
    its ranking; ``rank_for_options`` ranks with them."""
    for option in reversed(_RANKING_OPTIONS):
        command = option(command)
    return command


def rank_for_options(model_yaml: Path, *, include_flagged: bool, rank_by: str,
                     tuned: str) -> Recommendation:
    """``rank_for_file`` with the values of ``ranking_options``."""
    return rank_for_file(model_yaml, include_flagged=include_flagged, rank_by=RankBy(rank_by),
                         tuned=TunedPolicy(tuned))


@click.command()
@spec_file_argument("model_yaml")
@click.option("--top", default=15, show_default=True, type=PositiveNumber(integer=True),
              help="How many rows the table shows (JSON and CSV have every offer).")
@json_option
@click.option("--csv", "csv_path", type=click.Path(path_type=Path),
              help="Also write every ranked and rejected offer to this CSV file, and its "
                   "columns and units to NAME.columns.md beside it (folders created).")
@click.option("--html", "html_path", type=click.Path(path_type=Path),
              help="Also write a self-contained HTML report (charts, savings) to this file "
                   "(folders created).")
@click.option("--suggest-probes", "suggest_probes", type=PositiveNumber(integer=True), default=None,
              metavar="N", help="Suggest up to N offers to probe (largest expected regret cut "
                                "per probe dollar) and what each probe costs.")
@ranking_options
@click.option("--all-regions", is_flag=True,
              help="One table row per region (default: one row per choice of cloud, instance "
                   "type and market, in its best region; JSON and CSV always list every row).")
@handle_errors
def recommend(model_yaml: Path, top: int, as_json: bool, csv_path: Path | None,
              html_path: Path | None, suggest_probes: int | None,
              include_flagged: bool, rank_by: str, tuned: str, all_regions: bool) -> None:
    """Rank cloud instances for MODEL_YAML by samples per dollar.

    Profiles the model locally (cached), predicts its throughput on every offer in the
    price catalog, applies the constraints (budget, deadline, memory, regions, spot) and
    prints the best offers with whole-run cost and time. Files written by --csv and --html
    are listed on stderr.

    Exit status: 0 when an offer ranks; 1 when none meets every constraint (the output,
    files and --json included, says which constraints rejected them and what to relax);
    2 for bad input.

    \b
    Examples:
      advisor recommend examples/resnet50.yaml
      advisor recommend examples/bert.yaml --top 5 --json
      advisor recommend examples/gpt2.yaml --csv ranking.csv --html ranking.html
      advisor recommend examples/resnet50.yaml --suggest-probes 3
      advisor recommend examples/resnet50.yaml --rank-by estimate --all-regions
    """
    from advisor.storage import default_storage_url, sqlite_file

    check_report_outputs((("--csv", csv_path), ("--html", html_path)),
                         reads={"MODEL_YAML": model_yaml,
                                "the probe store": sqlite_file(default_storage_url())})
    rec = rank_for_options(model_yaml, include_flagged=include_flagged, rank_by=rank_by,
                           tuned=tuned)
    if csv_path is not None:
        from reports.recommendation_csv import write_recommendation_csv

        csv_file, columns_file = write_recommendation_csv(rec, csv_path)
        echo_written([("csv", csv_file), ("columns", columns_file)])
    if html_path is not None:
        from reports.recommendation import write_recommendation_html

        echo_written([("html", write_recommendation_html(rec, html_path))])
    suggestions = []
    if suggest_probes:
        from advisor.ranking import plan_probes

        suggestions = plan_probes(rec, suggest_probes)
    if as_json:
        from advisor.ranking import recommendation_to_dict

        data = recommendation_to_dict(rec, stream=True)
        if suggest_probes:
            data["suggested_probes"] = [asdict(s) for s in suggestions]
        echo_json(data)
    else:
        _render(rec, top, all_regions=all_regions)
        if suggest_probes:
            _hanging(console(), "suggested probes:" if suggestions else
                     "suggested probes: none would change the pick enough to pay off"
                     if rec.ranked else "suggested probes: none: no offer meets every "
                     "constraint, so there is no pick for a probe to settle")
            for s in suggestions:
                _hanging(console(), f"  - {s.describe()}")
    if not rec.ranked:  # a script's `advisor recommend ... && launch` stops here
        raise SystemExit(1)
