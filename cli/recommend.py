"""``advisor recommend``: rank offers for a model.yaml."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from advisor.ranking import Recommendation
from advisor.serialize import recommendation_to_dict
from cli.errors import handle_errors
from cli.options import json_option
from cli.render import console, echo_json, fmt_number

__all__ = ["recommend"]


def _reason_kind(reason: str) -> str:
    """Group rejection reasons for the summary ('needs 41.2 GiB ...' -> 'needs N GiB ...')."""
    return re.sub(r"\$?[\d,.]+", "N", reason).split(";")[0]


def _render(rec: Recommendation, top: int) -> None:
    out = console()
    table = Table(title=f"{rec.workload}: best samples per dollar first "
                  f"(prices captured {rec.prices_captured_at})", title_justify="left")
    columns = ["#", "instance", "region", "accelerators", "market", "$/h", "samples/s",
               "interval", "samples/$", "run h", "run $", "basis"]
    for name in columns:
        table.add_column(name, justify="left" if name in {"instance", "region", "accelerators",
                                                          "market", "basis"} else "right")
    for i, est in enumerate(rec.ranked[:top], start=1):
        o, t = est.offer, est.throughput
        table.add_row(
            str(i), f"{o.cloud}:{o.instance_type}", o.region,
            f"{o.accelerator_count}x {o.accelerator}", str(o.market),
            f"{o.price_usd_per_hour:,.2f}", fmt_number(t.samples_per_second),
            f"{fmt_number(t.samples_per_second_low)}-{fmt_number(t.samples_per_second_high)}",
            fmt_number(est.samples_per_dollar), f"{est.run_hours:,.1f}",
            f"{est.run_cost_usd:,.0f}", str(t.basis),
        )
    out.print(table)
    out.print(f"{len(rec.ranked)} offers ranked, {len(rec.rejected)} rejected.")
    kinds = Counter(_reason_kind(r.reason) for r in rec.rejected)
    for kind, n in kinds.most_common(6):
        example = next(r for r in rec.rejected if _reason_kind(r.reason) == kind)
        out.print(f"  rejected {n:>4}: {escape(example.reason)}" + (" (e.g.)" if n > 1 else ""))
    for warning in rec.warnings:
        out.print(f"[yellow]warning:[/] {escape(warning)}")
    for line in rec.advice:
        out.print(f"[green]advice:[/] {escape(line)}")
    out.print("assumptions:")
    for line in rec.assumptions:
        out.print(f"  - {escape(line)}")


@click.command()
@click.argument("model_yaml", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--top", default=15, show_default=True, type=click.IntRange(min=1),
              help="How many ranked offers the table shows (JSON and CSV have all).")
@json_option
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every ranked and rejected offer to this CSV file.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write a self-contained HTML report (charts, savings) to this file.")
@click.option("--suggest-probes", "suggest_probes", type=click.IntRange(min=1), default=None,
              metavar="N", help="Suggest up to N offers to probe (largest expected regret cut "
                                "per probe dollar) and what each probe costs.")
@click.option("--include-flagged", is_flag=True,
              help="Rank offers whose price a consistency check doubts (left out by default).")
@handle_errors
def recommend(model_yaml: Path, top: int, as_json: bool, csv_path: Path | None,
              html_path: Path | None, suggest_probes: int | None,
              include_flagged: bool) -> None:
    """Rank cloud instances for MODEL_YAML by samples per dollar.

    Profiles the model locally (cached), predicts its throughput on every offer in the
    price catalog, applies the constraints (budget, deadline, memory, regions, spot) and
    prints the best offers with whole-run cost and time.

    \b
    Examples:
      advisor recommend examples/resnet50.yaml
      advisor recommend examples/bert.yaml --top 5 --json
      advisor recommend examples/gpt2.yaml --csv ranking.csv --html ranking.html
      advisor recommend examples/resnet50.yaml --suggest-probes 3
    """
    from advisor.service import recommend_for_file

    rec = recommend_for_file(model_yaml, include_flagged=include_flagged)
    if csv_path is not None:
        from reports.recommendation_csv import write_recommendation_csv

        write_recommendation_csv(rec, csv_path)
    if html_path is not None:
        from reports.recommendation import write_recommendation_html

        write_recommendation_html(rec, html_path)
    suggestions = []
    if suggest_probes:
        from advisor.planner import plan_probes

        suggestions = plan_probes(rec, suggest_probes)
    if as_json:
        data = recommendation_to_dict(rec)
        if suggest_probes:
            data["suggested_probes"] = [asdict(s) for s in suggestions]
        echo_json(data)
    else:
        _render(rec, top)
        if suggest_probes:
            console().print("suggested probes:" if suggestions else
                            "suggested probes: none would change the pick enough to pay off")
            for s in suggestions:
                console().print(f"  - {s.describe()}")
