"""``advisor sweep``: run an Optuna sweep with pruning, a dollar cap and artifact cleanup."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from cli.errors import BadInput, handle_errors
from cli.options import (
    PositiveNumber,
    check_report_outputs,
    json_flag,
    json_option,
    spec_file_argument,
    storage_option,
)

if TYPE_CHECKING:
    from advisor.sweep import StopReason, StudyListing, SweepStatus

__all__ = ["sweep"]


class _SweepGroup(click.Group):
    """A group where ``advisor sweep FILE.yaml [OPTIONS]`` means ``advisor sweep run ...``.

    Its help lists the options of that hidden ``run`` command first, since they are the
    group's own in practice.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:  # noqa: ARG002
        return ["SWEEP_YAML [OPTIONS]", "|", "COMMAND [ARGS]..."]

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        run_options = [p for p in self.commands["run"].get_params(ctx)
                       if isinstance(p, click.Option)
                       and not set(p.opts) & set(ctx.help_option_names)]
        rows = [row for p in [*run_options, *self.get_params(ctx)]
                if (row := p.get_help_record(ctx)) is not None]
        with formatter.section("Options (of advisor sweep SWEEP_YAML)"):
            formatter.write_dl(rows)
        self.format_commands(ctx, formatter)


@click.group(cls=_SweepGroup, invoke_without_command=True)
@click.pass_context
def sweep(ctx: click.Context) -> None:
    """Run (or resume) an Optuna sweep that knows what every trial cost.

    \b
    Examples:
      advisor sweep examples/sweep_digits/sweep.yaml        run, or resume, the sweep
      advisor sweep sweep.yaml --json                       the final status as JSON
      advisor sweep sweep.yaml --storage sqlite:////data/sweeps.db
      advisor sweep sweep.yaml --workers 4 --storage postgresql://advisor@db/advisor
      advisor sweep sweep.yaml --workers 4 --launch         4 workers on EC2 instances
      advisor sweep worker sweep.yaml                       join from another machine
      advisor sweep status digits-mlp --json                trials, dollars, savings
      advisor sweep cleanup digits-mlp --dry-run            what cleanup would delete

    Trials are pruned by the sweep.yaml pruner, no trial starts once budget.max_usd would be
    passed, and artifacts of pruned/failed trials are deleted (never the best K). A worker
    stops after budget.max_consecutive_failures (default 5) failed trials in a row.

    A trial whose objective raises, calls sys.exit() or returns no number (None, NaN, a
    string) fails with that reason in one line; the sweep goes on. Ctrl-C fails the running
    trial as "interrupted (Ctrl-C)" (charged for its time) and stops the sweep. Rerunning a
    finished sweep says so at once, without running the objective.

    \b
    Exit status: 0 done; 1 every trial failed, or trials kept failing; 2 bad input;
    130 interrupted (Ctrl-C).
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


def _render_status(status: SweepStatus) -> None:
    from rich.table import Table

    from advisor.sweep import TrialStatus
    from cli.render import console as make_console
    from cli.render import fmt_bytes, fmt_money

    console = make_console()  # piped: $COLUMNS wide, else 140, as the README says
    console.print(f"sweep [bold]{status.study}[/] ({status.direction}), trials charged at "
                  f"{fmt_money(status.price_usd_per_hour)}/h ({status.instance})")
    table = Table()
    table.add_column("state")
    table.add_column("trials", justify="right")
    table.add_column("dollars", justify="right")
    usd = status.spend_by_state()  # unrounded, as the HTML report reads them
    for state, count in status.count_by_state().items():
        table.add_row(str(state), str(count), fmt_money(usd[state]))
    if status.worker_instances:
        table.add_row("instance overhead", "", fmt_money(status.instance_overhead_usd))
    table.add_row("total", str(sum(status.trials_by_state.values())),
                  fmt_money(sum(usd.values()) + status.instance_overhead_usd))
    console.print(table)
    if status.worker_instances:
        n = status.worker_instances
        console.print(f"instance overhead: {fmt_money(status.instance_overhead_usd)} of instance "
                      f"time billed beyond the trials on {n} worker instance{'s' * (n != 1)} "
                      "(boot, set-up, idle, shut-down; included in spent)")
    running = usd.get(TrialStatus.RUNNING, 0.0)
    if running:
        console.print(f"spent on ended trials: {fmt_money(status.spent_usd)} (running trials: "
                      f"{fmt_money(running)} so far)")
    best = status.best_trial()
    if best is not None and best.value is not None:
        console.print(f"best: trial {best.number} value {best.value:.6g} "
                      f"params {json.dumps(dict(best.params))}")
    console.print(f"saved by pruning (estimated): {fmt_money(status.saved_by_pruning_usd)}; "
                  f"artifacts cleaned: {fmt_bytes(status.bytes_cleaned)}")
    if status.stop_reason:
        console.print(f"stopped: {status.stop_reason}", markup=False)


def _progress_display(max_trials: int | None, max_usd: float | None) -> tuple[Any, Any]:
    """A progress bar on stderr, shown from the first update on (after every check passed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from cli.render import console, fmt_money

    progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[info]}"), transient=False,
                        console=console(stderr=True))
    task = progress.add_task("sweep", total=max_trials, info="starting")
    cap = f" of ${max_usd:g}" if max_usd is not None else ""

    from advisor.sweep import TrialStatus

    def update(status: SweepStatus) -> None:
        by = status.count_by_state()
        best = status.best_value
        info = (f"{fmt_money(status.spent_usd)}{cap} | pruned {by.get(TrialStatus.PRUNED, 0)} | "
                f"failed {by.get(TrialStatus.FAIL, 0)} | running "
                f"{by.get(TrialStatus.RUNNING, 0)} | best {'-' if best is None else f'{best:.4g}'}")
        progress.update(task, completed=status.finished, info=info)
        progress.start()  # no-op once started

    return progress, update


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(1)


@sweep.command("run", hidden=True)
@spec_file_argument("sweep_yaml", as_str=True)
@click.option("--workers", type=PositiveNumber(integer=True), default=None,
              help="Local worker processes (default: sweep.yaml 'workers'; >1 needs PostgreSQL).")
@storage_option("Storage URL, e.g. postgresql://USER@HOST/DB (overrides sweep.yaml 'storage' "
                "and ADVISOR_STORAGE_URL; default: a SQLite file in ADVISOR_HOME).")
@click.option("--launch", is_flag=True,
              help="Start the workers on cloud instances of the sweep's offer (AWS; needs "
                   "ADVISOR_AWS_BUCKET and a PostgreSQL storage the instances reach); they are "
                   "terminated when the study ends, the budget is reached or you press Ctrl-C.")
@json_flag("Print the final status as JSON instead of a table (no progress bar).")
@handle_errors
def run(sweep_yaml: str, workers: int | None, storage: str | None, launch: bool,
        as_json: bool) -> None:
    """Run (or resume) the sweep described by SWEEP_YAML."""
    from advisor.sweep import load_sweep_spec

    spec = load_sweep_spec(sweep_yaml)
    one_here = not (as_json or launch) and (workers if workers is not None else spec.workers) == 1
    if one_here and _say_if_finished(spec, storage):  # a finished sweep: no heavy imports
        return
    from advisor.sweep import quiet_optuna_logging

    quiet_optuna_logging()
    try:
        with _sweep_warnings_as_lines():
            outcome = _run(sweep_yaml, spec, workers=workers, storage=storage, launch=launch,
                           as_json=as_json, finished_checked=one_here)
    except KeyboardInterrupt:
        _interrupted("the sweep stopped")
    if outcome.final_cleanup is not None and outcome.final_cleanup.errors:
        for message in outcome.final_cleanup.errors:
            click.echo(f"warning: {message}", err=True)
    if _was_interrupted(outcome.stop):
        _interrupted("the sweep stopped")
    if outcome.failure:
        _fail(outcome.failure)


def _run(sweep_yaml: str, spec: Any, *, workers: int | None, storage: str | None,
         launch: bool, as_json: bool, finished_checked: bool) -> Any:
    """Run the sweep, rendering its end: JSON alone on stdout, or a progress bar and a table
    (``finished_checked``: the caller has found the study not finished already)."""
    import sys

    from advisor.sweep import run_sweep

    if as_json:
        with contextlib.redirect_stdout(sys.stderr):  # the objective's prints too
            outcome = run_sweep(sweep_yaml, workers=workers, storage_url=storage, launch=launch,
                                finished_checked=finished_checked)
        click.echo(json.dumps({**outcome.status.to_dict(), "stop_reason": outcome.stop_reason},
                              indent=2))
        return outcome
    progress, update = _progress_display(spec.budget.max_trials, spec.budget.max_usd)
    try:
        outcome = run_sweep(sweep_yaml, workers=workers, storage_url=storage, launch=launch,
                            on_progress=update, finished_checked=finished_checked)
    finally:
        if progress.live.is_started:  # stopping a bar never shown still prints a line
            progress.stop()
    if not _was_interrupted(outcome.stop):
        _render_status(outcome.status)
    return outcome


@contextlib.contextmanager
def _sweep_warnings_as_lines() -> Iterator[None]:
    """The sweep's warnings (a failed trial and its reason...) as plain lines on stderr."""

    class _Echo(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            click.echo(record.getMessage(), err=True)

    logger = logging.getLogger("advisor.sweep")
    handler = _Echo(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def _say_if_finished(spec: Any, storage: str | None) -> bool:
    """Print why the stored sweep may not run another trial, in a line; False when it may."""
    from advisor.storage import default_storage_url
    from advisor.sweep import finished_sweep

    # the URL as advisor.sweep.run.database.storage_url_of gives it, without importing Optuna
    done = finished_sweep(spec, storage or spec.storage or default_storage_url())
    if done is None:
        return False
    click.echo(done.summary())
    click.echo(f"to run more trials, raise budget.max_usd or budget.max_trials in sweep.yaml; "
               f"to see them: advisor sweep status {spec.study}")
    return True


def _was_interrupted(stop: StopReason | None) -> bool:
    from advisor.sweep import StopKind

    return stop is not None and stop.kind is StopKind.INTERRUPTED


def _interrupted(what: str) -> NoReturn:
    click.echo(f"interrupted (Ctrl-C): {what}; a running trial is recorded as failed "
               "(interrupted) and charged for its time; run the same command again to resume",
               err=True)
    raise SystemExit(130)


@sweep.command("worker")
@spec_file_argument("sweep_yaml", as_str=True)
@storage_option("Storage URL (overrides sweep.yaml 'storage').")
@json_flag("Print what the worker did as JSON (trials_run, stop_reason).")
@handle_errors
def worker(sweep_yaml: str, storage: str | None, as_json: bool) -> None:
    """Join the study of SWEEP_YAML as one more worker (any machine that reaches the database).

    \b
    Example:
      advisor sweep worker sweep.yaml --storage postgresql://advisor@db/advisor

    \b
    Exit status: 0 done; 1 trials kept failing; 2 bad input; 130 interrupted (Ctrl-C).
    """
    import sys

    from advisor.sweep import load_sweep_spec, quiet_optuna_logging, run_worker

    quiet_optuna_logging()
    spec = load_sweep_spec(sweep_yaml)
    with _sweep_warnings_as_lines():
        if as_json:
            with contextlib.redirect_stdout(sys.stderr):
                result = run_worker(spec, storage_url=storage)
        else:
            result = run_worker(spec, storage_url=storage)
    if as_json:
        click.echo(json.dumps({"study": spec.study, "trials_run": result.trials_run,
                               "stop_reason": result.stop_reason}, indent=2))
    else:
        s = "" if result.trials_run == 1 else "s"
        click.echo(f"worker done: {result.trials_run} trial{s}; {result.stop_reason}")
    if _was_interrupted(result.stop):
        _interrupted("the worker stopped")
    if result.stop.failure:
        _fail(f"worker stopped: {result.stop_reason}")


def _render_listing(listings: list[StudyListing], storage: str | None) -> None:
    from rich.markup import escape
    from rich.table import Table

    from advisor.storage import default_storage_url, shown_url
    from cli.render import console as make_console
    from cli.render import fmt_money, printable

    out = make_console()
    where = shown_url(storage or default_storage_url())
    if not listings:
        out.print(f"no studies in {printable(where)}; pass --storage URL if they live elsewhere",
                  markup=False)
        return
    table = Table()
    for name in ("study", "direction", "trials", "by state", "spent", "instance"):
        table.add_column(name, justify="right" if name in ("trials", "spent") else "left")
    for row in listings:
        states = ", ".join(f"{state} {n}" for state, n in row.trials_by_state.items())
        table.add_row(*(escape(printable(cell)) for cell in (
            row.study, row.direction, str(row.trials), states, fmt_money(row.spent_usd),
            row.instance)))
    out.print(table)
    out.print(f"{len(listings)} stud{'y' if len(listings) == 1 else 'ies'} in "
              f"{printable(where)}; one in full: advisor sweep status STUDY", markup=False)


@sweep.command("status")
@click.argument("study", required=False)
@storage_option()
@json_option
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the budget-review HTML report (charts) to this file.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write one row per trial (state, objective, dollars) to this CSV file.")
@handle_errors
def status(study: str | None, storage: str | None, as_json: bool, html_path: Path | None,
           csv_path: Path | None) -> None:
    """Trials by state, best trial, dollars by state, pruning savings and bytes cleaned; with
    no STUDY, every study in the storage (name, trials, spend).

    \b
    Examples:
      advisor sweep status                          list the studies
      advisor sweep status digits-mlp --json
      advisor sweep status digits-mlp --html review.html --csv trials.csv

    \b
    Exit status: 0 done; 2 bad input (an unknown study, a bad --storage).
    """
    from advisor.storage import default_storage_url, sqlite_file
    from advisor.sweep import load_status

    if study is None:
        if html_path is not None or csv_path is not None:
            raise BadInput("--html and --csv report one study: name it "
                           "(advisor sweep status STUDY --html FILE)")
        from advisor.sweep import list_studies

        listings = list_studies(storage_url=storage)
        if as_json:
            click.echo(json.dumps([row.to_dict() for row in listings], indent=2))
        else:
            _render_listing(listings, storage)
        return

    # the writers create missing folders; never over the study's own SQLite file
    check_report_outputs((("--html", html_path), ("--csv", csv_path)),
                         reads={"the storage's SQLite file":
                                sqlite_file(storage or default_storage_url())})
    result = load_status(study, storage_url=storage)
    if html_path is not None or csv_path is not None:
        from advisor.sweep import load_sweep_report_data
        from reports.sweep import write_sweep_html
        from reports.sweep_csv import write_sweep_csv

        data = load_sweep_report_data(study, storage_url=storage)
        if html_path is not None:
            write_sweep_html(data, html_path)
        if csv_path is not None:
            write_sweep_csv(data, csv_path)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _render_status(result)


@sweep.command("cleanup")
@click.argument("study")
@storage_option()
@click.option("--artifacts", default=None,
              help="Artifact location (default: the one the sweep recorded).")
@click.option("--keep-best", type=PositiveNumber(minimum=0, integer=True), default=None,
              help="Best trials to keep (default: the sweep.yaml's cleanup.keep_best, which "
                   "the study recorded; 3 when it has none).")
@click.option("--dry-run", is_flag=True, help="Only print what would be deleted.")
@json_flag("Print JSON instead of lines.")
@handle_errors
def cleanup(study: str, storage: str | None, artifacts: str | None, keep_best: int | None,
            dry_run: bool, as_json: bool) -> None:
    """Delete artifacts of pruned and failed trials now (never running ones or the best K).

    \b
    Example:
      advisor sweep cleanup digits-mlp --dry-run
    """
    from advisor.sweep import cleanup_stored_study
    from cli.render import fmt_bytes

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
                   f"({fmt_bytes(d.bytes_freed)})")
    for message in report.errors:
        click.echo(f"warning: {message}", err=True)
    click.echo(f"{verb} {len(report.deleted)} artifacts, {fmt_bytes(report.bytes_freed)}")
