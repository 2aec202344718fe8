"""``advisor sweep``: run an Optuna sweep with pruning, a dollar cap and artifact cleanup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from cli.errors import handle_errors

__all__ = ["sweep"]


class _SweepGroup(click.Group):
    """A group where ``advisor sweep FILE.yaml`` means ``advisor sweep run FILE.yaml``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_SweepGroup, invoke_without_command=True)
@click.pass_context
def sweep(ctx: click.Context) -> None:
    """Run an Optuna sweep that knows what every trial cost.

    \b
    Examples:
      advisor sweep examples/sweep_digits/sweep.yaml            run (or resume) the sweep
      advisor sweep sweep.yaml --workers 4                      4 local workers (PostgreSQL)
      advisor sweep worker sweep.yaml                           join from another machine
      advisor sweep sweep.yaml --workers 4 --launch             4 workers on EC2 instances
      advisor sweep status digits-mlp --json                    trials, dollars, savings
      advisor sweep cleanup digits-mlp --dry-run                what cleanup would delete

    Trials are pruned by the sweep.yaml pruner, no trial starts once budget.max_usd would be
    passed, and artifacts of pruned/failed trials are deleted (never the best K).
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _money(usd: float) -> str:
    return f"${usd:,.4f}" if usd < 1 else f"${usd:,.2f}"


def _render_status(status: Any) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"sweep [bold]{status.study}[/] ({status.direction}), trials charged at "
                  f"{_money(status.price_usd_per_hour)}/h ({status.instance})")
    table = Table()
    table.add_column("state")
    table.add_column("trials", justify="right")
    table.add_column("dollars", justify="right")
    for state, count in status.trials_by_state.items():
        table.add_row(state, str(count), _money(status.usd_by_state.get(state, 0.0)))
    table.add_row("total", str(sum(status.trials_by_state.values())), _money(status.spent_usd))
    console.print(table)
    if status.best_value is not None:
        console.print(f"best: trial {status.best_trial} value {status.best_value:.6g} "
                      f"params {json.dumps(status.best_params)}")
    console.print(f"saved by pruning (estimated): {_money(status.saved_by_pruning_usd)}; "
                  f"artifacts cleaned: {status.bytes_cleaned:,} bytes")
    if status.stop_reason:
        console.print(f"stopped: {status.stop_reason}")


def _progress_display(max_trials: int | None, max_usd: float | None) -> tuple[Any, Any]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[info]}"), transient=False)
    task = progress.add_task("sweep", total=max_trials, info="starting")
    cap = f" of ${max_usd:g}" if max_usd is not None else ""

    def update(status: Any) -> None:
        by = status.trials_by_state
        info = (f"{_money(status.spent_usd)}{cap} | pruned {by.get('pruned', 0)} | failed "
                f"{by.get('fail', 0)} | running {by.get('running', 0)} | best "
                f"{'-' if status.best_value is None else f'{status.best_value:.4g}'}")
        progress.update(task, completed=status.finished, info=info)

    return progress, update


@sweep.command("run", hidden=True)
@click.argument("sweep_yaml", type=click.Path(dir_okay=False))
@click.option("--workers", type=int, default=None,
              help="Local worker processes (default: sweep.yaml 'workers'; >1 needs PostgreSQL).")
@click.option("--storage", default=None, help="Storage URL (overrides sweep.yaml 'storage').")
@click.option("--launch", is_flag=True,
              help="Start the workers on cloud instances of the sweep's offer (AWS; needs "
                   "ADVISOR_AWS_BUCKET and a PostgreSQL storage the instances reach); they are "
                   "terminated when the study ends, the budget is reached or you press Ctrl-C.")
@click.option("--json", "as_json", is_flag=True, help="Print the final status as JSON.")
@handle_errors
def run(sweep_yaml: str, workers: int | None, storage: str | None, launch: bool,
        as_json: bool) -> None:
    """Run (or resume) the sweep described by SWEEP_YAML."""
    import optuna

    from advisor.sweep import load_sweep_spec, run_sweep

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = load_sweep_spec(sweep_yaml)
    if as_json:
        outcome = run_sweep(sweep_yaml, workers=workers, storage_url=storage, launch=launch)
        click.echo(json.dumps({**outcome.status.to_json(), "stop_reason": outcome.stop_reason},
                              indent=2))
        return
    progress, update = _progress_display(spec.budget.max_trials, spec.budget.max_usd)
    with progress:
        outcome = run_sweep(sweep_yaml, workers=workers, storage_url=storage, launch=launch,
                            on_progress=update)
    _render_status(outcome.status)
    if outcome.final_cleanup is not None and outcome.final_cleanup.errors:
        for message in outcome.final_cleanup.errors:
            click.echo(f"warning: {message}", err=True)


@sweep.command("worker")
@click.argument("sweep_yaml", type=click.Path(dir_okay=False))
@click.option("--storage", default=None, help="Storage URL (overrides sweep.yaml 'storage').")
@handle_errors
def worker(sweep_yaml: str, storage: str | None) -> None:
    """Join the study of SWEEP_YAML as one more worker (any machine that reaches the database).

    \b
    Example:
      advisor sweep worker sweep.yaml --storage postgresql://advisor@db/advisor
    """
    from dataclasses import replace

    from advisor.sweep import load_sweep_spec, run_worker

    spec = load_sweep_spec(sweep_yaml)
    if storage:
        spec = replace(spec, storage=storage)
    result = run_worker(spec)
    click.echo(f"worker done: {result.trials_run} trials; {result.stop_reason}")


@sweep.command("status")
@click.argument("study")
@click.option("--storage", default=None, help="Storage URL (default: the local SQLite file).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the budget-review HTML report (charts) to this file.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write one row per trial (state, objective, dollars) to this CSV file.")
@handle_errors
def status(study: str, storage: str | None, as_json: bool, html_path: Path | None,
           csv_path: Path | None) -> None:
    """Trials by state, best trial, dollars by state, pruning savings and bytes cleaned.

    \b
    Examples:
      advisor sweep status digits-mlp --json
      advisor sweep status digits-mlp --html review.html --csv trials.csv
    """
    from advisor.sweep import load_status

    result = load_status(study, storage_url=storage)
    if html_path is not None or csv_path is not None:
        from reports.sweep import write_sweep_html
        from reports.sweep_csv import write_sweep_csv
        from reports.sweep_data import load_sweep_report_data

        data = load_sweep_report_data(study, storage_url=storage)
        if html_path is not None:
            write_sweep_html(data, html_path)
        if csv_path is not None:
            write_sweep_csv(data, csv_path)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        _render_status(result)


@sweep.command("cleanup")
@click.argument("study")
@click.option("--storage", default=None, help="Storage URL (default: the local SQLite file).")
@click.option("--artifacts", default=None,
              help="Artifact location (default: the one the sweep recorded).")
@click.option("--keep-best", type=int, default=None, help="Best trials to keep (default 3).")
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of lines.")
@handle_errors
def cleanup(study: str, storage: str | None, artifacts: str | None, keep_best: int | None,
            dry_run: bool, as_json: bool) -> None:
    """Delete artifacts of pruned and failed trials now (never running ones or the best K).

    \b
    Example:
      advisor sweep cleanup digits-mlp --dry-run
    """
    from advisor.sweep.service import cleanup_stored_study

    report = cleanup_stored_study(study, storage_url=storage, artifacts_url=artifacts,
                                  keep_best=keep_best, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps({"dry_run": report.dry_run, "bytes_freed": report.bytes_freed,
                               "deleted": [vars(d) for d in report.deleted],
                               "errors": list(report.errors)}, indent=2))
        return
    verb = "would delete" if dry_run else "deleted"
    for d in report.deleted:
        click.echo(f"{verb} trial {d.trial_number} {d.filename or d.artifact_id} "
                   f"({d.bytes_freed:,} bytes)")
    for message in report.errors:
        click.echo(f"warning: {message}", err=True)
    click.echo(f"{verb} {len(report.deleted)} artifacts, {report.bytes_freed:,} bytes")
