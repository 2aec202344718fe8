"""``advisor probe`` and ``advisor probes list|show|gc``: measure the step, keep the results."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import click
from rich.markup import escape

from advisor.storage import data_dir, default_storage_url
from cli._tune_table import print_tuning, tune_options
from cli.errors import BadInput, handle_errors
from cli.options import PositiveNumber, json_option, spec_file_argument
from cli.probe_table import op_class_line, print_warnings, probe_table
from cli.render import console, echo_json, fmt_number, printable
from probes import (
    DEFAULT_PROBE_TIME_BOX_S,
    ProbeRequest,
    ProbeResult,
    ProbeStatus,
    check_settings,
    fmt_usd_pair,
    fmt_usd_small,
    launcher_options,
)

__all__ = ["probe", "probes"]

_DEFAULT_TIME_BOX_S = DEFAULT_PROBE_TIME_BOX_S  # the time box every probe quote assumes
_TUNE_TIME_BOX_S = 300.0  # every knob, the combination and the profile share it


def _store() -> Any:
    from probes import ProbeStore

    return ProbeStore(default_storage_url())


def _launcher_factory(opts: dict[str, str | None]) -> Any:
    from probes import Launcher, make_launcher

    cache: dict[str, Launcher] = {}

    def build(name: str) -> Launcher:
        if name not in cache:
            extra = {"work_dir": data_dir() / "probe-runs"} if name == "local" else {}
            cache[name] = make_launcher(name, **launcher_options(name, opts), **extra)
        return cache[name]

    return build


def _gcp_project_option(what: str) -> Callable[[Any], Any]:
    """``--gcp-project`` (as ``gcp_project``), from $GOOGLE_CLOUD_PROJECT when not given."""
    return click.option("--gcp-project", envvar="GOOGLE_CLOUD_PROJECT", default=None,
                        help=f"{what} [env GOOGLE_CLOUD_PROJECT].")


def _result_json(result: ProbeResult) -> dict[str, Any]:
    """The stored result and its findings, judged against the device it really ran on."""
    from pricing import load_accelerators
    from probes import findings_for, result_accelerator

    accelerator = result_accelerator(result)
    spec = load_accelerators().get(accelerator) if accelerator else None
    data = result.to_dict()
    data["findings"] = [
        {"kind": str(f.kind), "advice": f.advice, "evidence": f.evidence,
         "expected_gain": f.expected_gain, "expected_speedup": f.expected_speedup}
        for f in findings_for(result, spec)
    ]
    return data


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@spec_file_argument("model_yaml", as_str=True)
@click.option("--on", "offers", multiple=True, metavar="OFFER",
              help="Where to probe: 'local' or cloud:instance_type:region[:spot] (repeatable).")
@click.option("--plan", "plan_n", type=PositiveNumber(integer=True), default=None, metavar="N",
              help="Also probe the N offers the planner picks from the ranking: the largest "
                   "expected cut in ranking regret per probe dollar (see 'advisor recommend "
                   "--suggest-probes N' to preview).")
@click.option("--max-usd", type=PositiveNumber(), default=None,
              help="Refuse to start when the estimated cost of all probes is above this "
                   "(default: probes.max_usd of the model.yaml).")
@click.option("--time-box", "time_box_s", type=PositiveNumber(minimum=1), default=None,
              help=f"Seconds of measuring per probe (boot time is extra) [default: "
                   f"{_DEFAULT_TIME_BOX_S:g}, {_TUNE_TIME_BOX_S:g} with --tune].")
@tune_options
@click.option("--find-batch", is_flag=True,
              help="Also search the largest per-device batch that fits: doubling until out of "
                   "memory (or --memory-limit-gib), then narrowing to within 2%; it gets a time "
                   "box of its own, priced in the estimate. recommend uses the result for "
                   "memory fit on that accelerator.")
@click.option("--no-input-check", is_flag=True, help="Skip the cached-batch vs loader check.")
@click.option("--memory-limit-gib", type=PositiveNumber(), default=None,
              help="Treat using more than this much memory as out of memory.")
@click.option("--aws-bucket", envvar="ADVISOR_AWS_BUCKET", default=None,
              help="S3 bucket for AWS probe bundles and results [env ADVISOR_AWS_BUCKET].")
@_gcp_project_option("GCP project for gcp probes")
@click.option("--gcp-bucket", envvar="ADVISOR_GCP_BUCKET", default=None,
              help="GCS bucket for GCP probe bundles and results [env ADVISOR_GCP_BUCKET].")
@json_option
@handle_errors
def probe(model_yaml: str, offers: tuple[str, ...], max_usd: float | None,
          time_box_s: float | None, tune: bool, allow_numerics: bool, find_batch: bool,
          no_input_check: bool, memory_limit_gib: float | None, aws_bucket: str | None,
          gcp_project: str | None, gcp_bucket: str | None, as_json: bool,
          plan_n: int | None) -> None:
    """Measure the training step of MODEL_YAML on real instances (or on this machine).

    Each probe warms up, then measures steps until samples/s is known within 2% (or the
    time box ends), checks the input pipeline against the loader your entrypoint gives, and
    is terminated, always. Results are stored and used by 'advisor recommend' as measured
    throughput of the accelerator the probe really ran on: a local probe on your own GPU
    counts for every offer with that GPU; a probe that finds another device than the
    offer's (say, the CPU on a Trainium box) ends wrong_device and is never used.

    \b
    Examples:
      advisor probe examples/mlp.yaml --on local
      advisor probe examples/mlp.yaml --on local --find-batch --json
      advisor probe examples/resnet50_tune.yaml --on local --tune
      advisor probe model.yaml --on aws:g5.xlarge:us-east-1:spot --max-usd 2 --aws-bucket my-bkt
      advisor probe model.yaml --plan 2 --max-usd 1 --aws-bucket my-bkt

    Cloud probes cost money: the estimate (time box + boot time, at the offer's price) is
    checked against --max-usd before anything starts.

    \b
    Exit status:
        0  every probe ended ok
        1  a probe did not end ok (oom, timeout, launch_failed, error,
           wrong_device); every result is still stored and printed (the
           table, or the --json document)
        3  every probe ended ok, but one did not settle: its samples/s
           95% half-width stayed over the target when the time box ended
           ('ok unsettled' in the table, "stable": false in --json); the
           result is stored and used, with its wide interval; a longer
           --time-box settles it
        2  nothing was started: bad input, a missing setting, or an
           estimate over --max-usd
      130  interrupted (Ctrl-C): the running probe was ended and recorded
           as error
    """
    from advisor.ranking import ProbeOptions, prepare_probes, probe_target
    from advisor.spec import load_workload_spec

    if allow_numerics and not tune:
        raise BadInput("--allow-numerics applies to --tune; add --tune")
    time_box_s = time_box_s or (_TUNE_TIME_BOX_S if tune else _DEFAULT_TIME_BOX_S)
    spec = load_workload_spec(model_yaml)
    cap = max_usd if max_usd is not None else spec.probes_max_usd
    if plan_n:
        offers = offers + _planned_offers(model_yaml, plan_n, time_box_s, as_json=as_json,
                                          max_usd=cap)
        if not offers:  # the planner found nothing worth probing and said so
            if as_json:
                echo_json({"model": spec.name, "workload_fingerprint": spec.fingerprint(),
                           "estimated_usd": 0.0, "spent_usd": 0.0, "probes": []})
            return
    if not offers:
        raise BadInput("give --on OFFER (repeatable) or --plan N")
    targets = [probe_target(text) for text in dict.fromkeys(offers)]
    batch = prepare_probes(spec, targets, ProbeOptions(
        time_box_s=time_box_s, find_batch=find_batch, input_check=not no_input_check,
        memory_limit_gib=memory_limit_gib, tune=tune, allow_numerics=allow_numerics))
    requests = list(batch.requests)
    opts = {"aws_bucket": aws_bucket, "gcp_project": gcp_project, "gcp_bucket": gcp_bucket}
    by_name = _launcher_factory(opts)

    def launcher_for(request: ProbeRequest) -> Any:
        return by_name(batch.launchers[request.probe_id])

    batch.check_cap(cap)  # the one cost check, before the settings: nothing is started either way
    check_settings(batch.launchers.values(), opts)
    from probes import ResultNotStored

    try:
        results = _run_with_progress(requests, launcher_for, as_json=as_json)
    except ResultNotStored as exc:  # the probe ran: exit 1, its result is in the JSON file
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(1) from None
    rows = [_result_json(r) for r in results]
    spent = sum(r.cost_usd for r in results)
    if as_json:
        echo_json({"model": spec.name, "workload_fingerprint": spec.fingerprint(),
                   "estimated_usd": round(batch.estimate_usd, 4), "spent_usd": round(spent, 4),
                   "probes": rows})
    else:
        spent_text, estimate_text = fmt_usd_pair(spent, batch.estimate_usd)
        probe_table(rows, f"probes of {spec.name} (spent ${spent_text} of an estimated "
                          f"${estimate_text})", warnings_follow=True)
        for target, result in zip(targets, results, strict=True):
            print_tuning(result, price_usd_per_hour=target.price_usd_per_hour)
        for result in results:
            print_warnings(result)
    _exit_if_any_failed(results)


_EXIT_UNSETTLED = 3  # measured, but the samples/s interval stayed wider than the target


def _exit_if_any_failed(results: list[ProbeResult]) -> None:
    """Exit 1, with one line on stderr, when any probe did not end ``ok`` (all are stored);
    else exit 3, with one line, when an ok probe did not settle (``stable`` false)."""
    failed = [r for r in results if r.status is not ProbeStatus.OK]
    if failed:
        which = ", ".join(f"{r.probe_id} {r.status}" for r in failed)
        click.echo(f"{len(failed)} of {len(results)} probes did not end ok ({which}); "
                   "their results are stored", err=True)
        click.get_current_context().exit(1)
    unsettled = [r for r in results if not r.stable]
    if unsettled:
        which = "; ".join(
            f"{r.probe_id}: samples/s ±{r.rel_halfwidth:.1%} at 95%"
            if r.rel_halfwidth is not None
            else f"{r.probe_id}: too few measured steps for an interval" for r in unsettled)
        click.echo(f"{len(unsettled)} of {len(results)} probes measured but did not settle "
                   f"({which}); stored with their wide intervals; a longer --time-box "
                   "settles them", err=True)
        click.get_current_context().exit(_EXIT_UNSETTLED)


def _planned_offers(model_yaml: str, n: int, time_box_s: float, *, as_json: bool,
                    max_usd: float | None) -> tuple[str, ...]:
    """The planner's picks from the model's ranking (printed unless --json), best first, as
    many as fit ``max_usd`` together (when none fits, the first: the cost check refuses it)."""
    from pathlib import Path

    from advisor.ranking import plan_probes, recommend_for_file

    suggestions = plan_probes(recommend_for_file(Path(model_yaml)), n, time_box_s=time_box_s)
    kept, total = [], 0.0
    for suggestion in suggestions:
        if max_usd is None or total + suggestion.probe_cost_usd <= max_usd:
            kept.append(suggestion)
            total += suggestion.probe_cost_usd
    kept = kept or suggestions[:1]
    if not as_json:
        out = console()
        for suggestion in kept:
            out.print(f"planned: {suggestion.describe()}")
        if len(kept) < len(suggestions):
            left = len(suggestions) - len(kept)
            out.print(f"planned: {left} more pick{'s' * (left != 1)} left out, over the probe "
                      f"budget of ${fmt_usd_small(max_usd or 0.0)} (--max-usd, else "
                      "probes.max_usd)")
        if not suggestions:
            out.print("planned: nothing worth probing (no probe is expected to change the pick)")
    return tuple(s.offer_key for s in kept)


def _run_with_progress(requests: list[ProbeRequest], launcher_for: Any, *,
                       as_json: bool) -> list[ProbeResult]:
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from probes import ProbeEvent, check_credentials, run_probes

    check_credentials(requests, launcher_for)  # a setting: one line, before the progress lines
    store = _store()
    err = console(stderr=True)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=err, transient=as_json) as progress:
        tasks = {r.probe_id: progress.add_task(f"{r.offer_key}: waiting", total=1)
                 for r in requests}

        def on_event(event: ProbeEvent) -> None:
            task = tasks[event.request.probe_id]
            text = f"{event.request.offer_key}: {event.stage} {event.detail}".rstrip()
            if event.stage == "progress":  # a tune's configuration: one plain line when piped
                text = f"{event.request.offer_key}: tune: {escape(printable(event.detail))}"
                if not err.is_terminal:
                    click.echo(f"tune: {printable(event.detail)}", err=True)
            if event.result is not None:
                res = event.result
                speed = (f", {fmt_number(res.samples_per_second)} samples/s"
                         if res.samples_per_second else "")
                text = (f"{event.request.offer_key}: {res.status}{speed}, "
                        f"${fmt_usd_small(res.cost_usd)}")
                progress.update(task, completed=1)
            progress.update(task, description=text)

        return run_probes(requests, launcher_for=launcher_for, store=store, on_event=on_event)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def probes() -> None:
    """List, show and garbage-collect probe results and resources.

    \b
    Examples:
      advisor probes list
      advisor probes show 3f2a9c1b7d4e --json
      advisor probes gc --dry-run --aws-region us-east-1
    """


@probes.command("list")
@click.option("--fingerprint", default=None, help="Only probes of this workload fingerprint.")
@json_option
@handle_errors
def list_probes(fingerprint: str | None, as_json: bool) -> None:
    """Every stored probe result, oldest first."""
    from pricing import shipped_catalog
    from probes import ProbeError, rechecked, sqlite_problem, stored_results

    url = default_storage_url()
    if (problem := sqlite_problem(url)) is not None:
        raise ProbeError(f"probe store: {problem}")
    # read only: listing creates no store where there is none yet
    results = stored_results(url, fingerprint)
    rows = [r.to_dict() for r in rechecked(results, shipped_catalog())] if results else []
    if as_json:
        echo_json({"probes": rows})
        return
    if not rows and fingerprint is not None:
        console().print(f"no probes match --fingerprint {escape(printable(fingerprint))}; "
                        "'advisor probes list --json' shows each probe's workload_fingerprint")
        return
    if not rows:
        console().print("no probes yet; try 'advisor probe examples/mlp.yaml --on local'")
        return
    probe_table(rows, f"{len(rows)} stored probe{'' if len(rows) == 1 else 's'}")


@probes.command("show")
@click.argument("probe_id")
@json_option
@handle_errors
def show_probe(probe_id: str, as_json: bool) -> None:
    """One probe's full result and its findings. PROBE_ID may be the first few characters of
    the id when no other probe's id starts with them."""
    from pricing import shipped_catalog
    from probes import rechecked

    store = _store()
    probe_id = store.resolve_id(probe_id)
    result = rechecked([store.get(probe_id)], shipped_catalog())[0]
    row = _result_json(result)
    if as_json:
        echo_json(row)
        return
    probe_table([row], f"probe {probe_id}", warnings_follow=True)
    from advisor.ranking import offer_price

    print_tuning(result, price_usd_per_hour=offer_price(result.offer_key))
    print_warnings(result)
    out = console()
    for key in ("workload_fingerprint", "device", "accelerator", "precision", "measured_steps",
                "warmup_steps", "stable", "utilization_pct", "largest_batch_that_fits",
                "smallest_batch_that_failed", "error", "created_at"):
        value = row[key]  # None and "" (nothing recorded) read as the table's "-"
        out.print(f"{key}: {escape(printable('-' if value is None or value == '' else value))}")
    if classes := op_class_line(result):
        out.print(escape(classes))


def _store_orphan_results(local: Any) -> list[str]:
    """Store what local probes whose 'advisor probe' died finished; their probe ids."""
    results = local.orphan_results()
    if not results:
        return []
    store = _store()
    for result in results:
        store.record(result)
    return [r.probe_id for r in results]


@probes.command("gc")
@click.option("--dry-run", is_flag=True, help="List what would be terminated, terminate nothing.")
@click.option("--aws-region", "aws_regions", multiple=True, metavar="REGION",
              help="Also look for AWS probe instances in this region (repeatable).")
@_gcp_project_option("Also look for GCP probe VMs and TPU nodes in this project")
@json_option
@handle_errors
def gc_probes(dry_run: bool, aws_regions: tuple[str, ...], gcp_project: str | None,
              as_json: bool) -> None:
    """Terminate every probe resource past its expiry (local processes always; clouds asked).

    Every probe resource is tagged advisor-probe-id and advisor-expires-at; this ends the
    ones a crashed or interrupted 'advisor probe' left behind. A local probe whose 'advisor
    probe' is gone (killed) is ended at once, and a result it finished is stored first.
    """
    from pricing import Cloud
    from pricing.snapshots import current_catalog
    from probes import Launcher, make_launcher

    if aws_regions:  # a region with no AWS offer never had a probe: a typo, not an empty list
        current_catalog(data_dir() / "snapshots").check_regions(
            aws_regions, field="--aws-region", cloud=Cloud.AWS)
    local = make_launcher("local", work_dir=data_dir() / "probe-runs")
    launchers: list[Launcher] = [local]
    if aws_regions:
        launchers.append(make_launcher("aws", regions=list(dict.fromkeys(aws_regions))))
    if gcp_project:
        launchers += [make_launcher("gcp", project=gcp_project, bucket=""),
                      make_launcher("gcp-tpu", project=gcp_project, bucket="")]
    for launcher in launchers:  # missing credentials are a setting: one line, nothing done
        launcher.check_credentials()
    stored = [] if dry_run else _store_orphan_results(local)
    now = datetime.now(UTC)
    ended = {launcher.name: launcher.gc(now, dry_run=dry_run) for launcher in launchers}
    if as_json:
        echo_json({"dry_run": dry_run, "expired": ended, "stored": stored})
        return
    if stored:
        console().print(f"local: stored the finished result of {', '.join(stored)} (its "
                        "'advisor probe' was gone)")
    verb = "would terminate" if dry_run else "terminated"
    for name, ids in ended.items():
        console().print(f"{name}: {verb} {len(ids)}" + (f": {', '.join(ids)}" if ids else ""))
