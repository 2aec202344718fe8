"""``advisor report``: CSV and self-contained HTML cost reports for budget reviews."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import click

from cli.errors import handle_errors
from cli.options import OneOf, PositiveNumber, spec_file_argument
from cli.recommend import ranking_options
from reports.output import ReportFiles

__all__ = ["report"]

_OUT = click.option("--out", "out_dir", required=True,
                    type=click.Path(path_type=Path),  # checked by check_output_path
                    help="Folder to write the report into (created if missing).")
_PDF = click.option("--pdf", is_flag=True,
                    help="Also print the HTML to PDF with headless Chromium (needs chromium).")
_JSON = click.option("--json", "as_json", is_flag=True,
                     help="Print the written paths as one JSON object.")


def _done(files: ReportFiles, as_json: bool, *, savings: dict[str, object] | None = None,
          no_saving: str | None = None) -> None:
    paths = {k: str(v) for k, v in asdict(files).items() if v is not None}
    if as_json:
        extra = ({"savings": savings} if savings else
                 {"savings": None, "no_saving_because": no_saving} if no_saving else {})
        click.echo(json.dumps({**paths, **extra}, indent=2))
        return
    labels = {kind: kind.replace("_", " ") for kind in paths}  # profile_csv: "profile csv"
    width = max(map(len, labels.values()), default=0)
    for kind, path in paths.items():
        click.echo(f"wrote {labels[kind]:<{width}} {path}")


@click.group()
def report() -> None:
    """Write cost reports: one CSV row per offer or trial, and one HTML page with charts.

    The HTML file is self-contained (styles and SVG charts inline, nothing fetched), so it
    opens offline, mails well and prints. Each CSV gets a NAME.columns.md with units.

    \b
    Examples:
      advisor report recommend examples/resnet50.yaml --out resnet50-report/
      advisor report recommend model.yaml --out r/ --baseline aws:p4d.24xlarge --pdf
      advisor report sweep digits-mlp --out digits-report/
      advisor report probe 3f2a9c1b7d4e --out probe-report/
    """


@report.command("recommend")
@spec_file_argument("model_yaml")
@_OUT
@click.option("--baseline", default=None, metavar="OFFER",
              help="Offer to measure savings against: cloud:instance_type[:region[:market]], "
                   "on-demand unless a market is named (default: the cheapest on-demand 8x "
                   "A100 offer).")
@click.option("--compare-market", type=OneOf(["same", "any"]), default="same",
              show_default=True,
              help="Markets the saving compares: 'same' prices a spot side at the same "
                   "instance's on-demand price when the other side is on demand (the spot "
                   "discount shown apart); 'any' compares each in its own market.")
@ranking_options
@_PDF
@_JSON
@handle_errors
def recommend_report(model_yaml: Path, out_dir: Path, baseline: str | None,
                     compare_market: str, include_flagged: bool, rank_by: str, tuned: str,
                     pdf: bool, as_json: bool) -> None:
    """Rank offers for MODEL_YAML and write recommendation.html/.csv into --out.

    The report shows samples per dollar with intervals, run cost against run time with the
    Pareto front, rejected offers and why, measured vs predicted numbers, the assumptions,
    and the top pick's savings against --baseline (like for like unless --compare-market
    any; the same figures on stderr, in the CSV's top row and in --json). The ranking takes
    recommend's --include-flagged, --rank-by and --tuned.

    \b
    Examples:
      advisor report recommend examples/resnet50.yaml --out resnet50-report/
      advisor report recommend examples/resnet50.yaml --out r/ --baseline aws:p4d.24xlarge
      advisor report recommend m.yaml --out r/ --baseline gcp:a2-highgpu-8g:us-central1:spot
    """
    from cli.recommend import rank_for_options
    from reports.baseline import CompareMarket, no_saving_because, parse_baseline, report_savings
    from reports.output import check_output_path
    from reports.recommendation import write_recommendation_report

    check_output_path(out_dir, option="--out", folder=True)  # before the work
    if baseline is not None:
        parse_baseline(baseline)
    rec = rank_for_options(model_yaml, include_flagged=include_flagged, rank_by=rank_by,
                           tuned=tuned)
    market = CompareMarket(compare_market)
    # a bad --baseline fails before anything is written
    base, saved = report_savings(rec, baseline, market)
    files = write_recommendation_report(rec, out_dir, baseline=baseline, pdf=pdf,
                                        compare_market=market)
    if base is not None:
        click.echo(f"baseline {base.offer.key} ({base.chosen_by})", err=True)
    no_saving = no_saving_because(rec, base) if saved is None else None
    if saved is not None:
        click.echo(f"the top pick {saved.describe()}", err=True)
    elif no_saving is not None:
        click.echo(f"no saving against the baseline: {no_saving}", err=True)
    _done(files, as_json, savings=saved.to_dict() if saved is not None else None,
          no_saving=no_saving)


@report.command("sweep")
@click.argument("study")
@_OUT
@click.option("--storage", default=None, metavar="URL",
              help="Storage URL of the study (default: the local SQLite file).")
@click.option("--budget-usd", type=PositiveNumber(), default=None,
              help="Planned budget to compare with (default: the one the sweep recorded).")
@_PDF
@_JSON
@handle_errors
def sweep_report(study: str, out_dir: Path, storage: str | None, budget_usd: float | None,
                 pdf: bool, as_json: bool) -> None:
    """Write sweep.html/.csv for STUDY into --out: a budget review of the sweep.

    Planned budget against spend over time, spend by trial state, dollars saved by pruning,
    storage freed by cleanup, the best trial and its cost, and cost per trial against the
    objective.

    \b
    Examples:
      advisor report sweep digits-mlp --out digits-report/
      advisor report sweep resnet50-lr --out r/ --storage postgresql://advisor@db/advisor
    """
    from advisor.sweep import load_sweep_report_data
    from reports.output import check_output_path
    from reports.sweep import write_sweep_report

    check_output_path(out_dir, option="--out", folder=True)
    data = load_sweep_report_data(study, storage_url=storage, budget_usd=budget_usd)
    _done(write_sweep_report(data, out_dir, pdf=pdf), as_json)


@report.command("probe")
@click.argument("probe_id")
@_OUT
@_PDF
@_JSON
@handle_errors
def probe_report(probe_id: str, out_dir: Path, pdf: bool, as_json: bool) -> None:
    """Write probe.html and probe_tuning.csv / probe_profile.csv of a tuned probe into --out.

    The tuning table (each knob's samples/s with its interval, speed-up, samples per dollar
    on the offer, and whether it changes the numerics), a bar chart of the speed-ups, the
    knobs that do not apply and why, and the profile of the tuned configuration. PROBE_ID
    may be the first characters of the id.

    \b
    Examples:
      advisor probe examples/resnet50_tune.yaml --on local --tune
      advisor report probe 3f2a9c1b7d4e --out probe-report/
    """
    from advisor.ranking import offer_price
    from advisor.storage import default_storage_url
    from probes import ProbeStore
    from reports.output import check_output_path
    from reports.probe import write_probe_report

    check_output_path(out_dir, option="--out", folder=True)
    store = ProbeStore(default_storage_url())
    result = store.get(store.resolve_id(probe_id))
    _done(write_probe_report(result, out_dir, price_usd_per_hour=offer_price(result.offer_key),
                             pdf=pdf), as_json)
