"""``advisor model``: check how far to trust the throughput model on your own past runs."""

from __future__ import annotations

import math
from pathlib import Path

import click

from cli.errors import handle_errors
from cli.options import OneOf, PositiveNumber, json_option, spec_file_argument
from cli.render import console, echo_json

__all__ = ["model"]


@click.group()
def model() -> None:
    """Evaluate the throughput model on your own measurements.

    \b
    Example:
      advisor model evaluate examples/bench_sample.csv --probes 3
    """


@model.command()
@spec_file_argument("bench_csv", kind="CSV")
@click.option("--probes", "-k", "probes", type=PositiveNumber(integer=True), required=True,
              help="How many other accelerators of each workload count as its probes.")
@click.option("--repeats", "-r", type=PositiveNumber(integer=True), default=10, show_default=True,
              help="Seeded probe sets drawn per (workload, target accelerator).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--reference", type=OneOf(["shipped", "none"]), default="shipped",
              show_default=True,
              help="Add the shipped reference measurements to the other workloads of the file.")
@click.option("--unseen-target", is_flag=True,
              help="Remove every row of the target accelerator from the reference first "
                   "(as if it were brand new).")
@click.option("--model", "model_name",
              type=OneOf(["transfer", "median-ratio", "nearest-ratio"]),
              default="transfer", show_default=True,
              help="The throughput model, or a simple baseline: the median reference ratio, "
                   "or the ratios of the nearest reference workload over the probes.")
@click.option("--by-accelerator", is_flag=True,
              help="Also show the accuracy per target accelerator, worst first (where the "
                   "model misses on your hardware).")
@json_option
@handle_errors
def evaluate(bench_csv: Path, probes: int, repeats: int, seed: int, reference: str,
             unseen_target: bool, model_name: str, by_accelerator: bool,
             as_json: bool) -> None:
    """Predict every measured row of BENCH_CSV from PROBES other rows of its workload.

    BENCH_CSV (UTF-8) has columns workload, accelerator, throughput_samples_per_s and optionally
    price_usd_per_hour (accelerator names as in 'advisor pricing list', or V100, A100,
    H100...). For each workload W and accelerator X, R seeded sets of K other accelerators
    of W are W's probes; the other workloads (plus the shipped reference data) are the
    reference. Reports the error of the prediction for X (MAPE, median APE) and, over the
    priced accelerators, how often the samples-per-dollar pick is the best (top-1) and the
    mean regret of the pick.

    \b
    Examples:
      advisor model evaluate runs.csv --probes 3
      advisor model evaluate runs.csv --probes 2 --repeats 20 --reference none --json
      advisor model evaluate runs.csv --probes 3 --unseen-target
      advisor model evaluate runs.csv --probes 3 --by-accelerator
    """
    from rich.progress import Progress
    from rich.table import Table

    from advisor.throughput import evaluate_file

    err = console(stderr=True)
    with Progress(console=err, transient=True, disable=as_json or not err.is_terminal) as bar:
        task = bar.add_task("evaluating workloads", total=None)
        result = evaluate_file(bench_csv, probes=probes, repeats=repeats, seed=seed,
                               reference=reference, unseen_target=unseen_target,
                               model=model_name,
                               progress=lambda done, total: bar.update(task, completed=done,
                                                                        total=total))
    if as_json:
        data = result.to_dict()
        if by_accelerator:
            data["by_accelerator"] = [row.to_dict() for row in result.by_accelerator]
        echo_json(data)
        return
    out = console()
    out.print(f"{result.n} predictions from {probes} probe(s) each ({model_name} model, "
              f"reference: {reference}{', unseen target' if unseen_target else ''})")
    out.print(f"  MAPE              {result.mape:6.1f} %")
    out.print(f"  median APE        {result.median_ape:6.1f} %")
    if not math.isnan(result.coverage_pct):
        out.print(f"  interval coverage {result.coverage_pct:6.1f} %  (held-out targets inside "
                  "the predicted low-high range)")
    if math.isnan(result.top1_pct):  # no workload with two priced accelerators to rank
        out.print("  top-1 pick / mean regret: - (needs a price_usd_per_hour column with prices "
                  "for 2+ accelerators of a workload)")
    else:
        out.print(f"  top-1 pick        {result.top1_pct:6.1f} %")
        out.print(f"  mean regret       {result.mean_regret_pct:6.1f} %")
    if by_accelerator:
        table = Table(title="per target accelerator, worst MAPE first", title_justify="left")
        table.add_column("target accelerator")
        for header in ("predictions", "MAPE %", "median APE %", "inside interval %"):
            table.add_column(header, justify="right")
        for t in result.by_accelerator:
            table.add_row(t.accelerator, str(t.n), f"{t.mape:.1f}", f"{t.median_ape:.1f}",
                          f"{t.coverage_pct:.0f}")
        out.print(table)
