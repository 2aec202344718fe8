"""``advisor probe --tune``: what each checklist knob buys on the user's own step.

Inside the request's time box (and its dollar cap at the offer's price), which starts after the
baseline's first step as a plain probe's does, the tuner measures the baseline (the spec as
written, on one cached batch, as a plain probe does), then each applicable knob of
``probes.tune.knobs`` one at a time (the loader knobs on the real loader), then the baseline again
(a machine that changed speed meanwhile shows), then the best combination of the knobs that
beat both baselines beyond the noise, then profiles the tuned configuration. Every run is timed
by the harness's own step and steady-state rule (``probes.train_step``, ``probes.steady``) on a
freshly built model.

The box is shared as ``probes.tune.shares`` says: the baseline first, with what it needs to
settle up to a third of the box (half for a slow step; past that only to its 3rd timed step),
then every later run an even share of what is left, at least ``RUN_MIN_STEPS`` steps at the
baseline's pace; a run the box can no longer give that is not started and its row says so
(skipped for time), so on a short box the later knobs (the compiler last) are the ones left
out. Numerics-changing settings (precision, batch) are measured and reported, and enter a
combination only with ``request.allow_numerics``. With ``find_batch`` the largest-batch search
follows in a box of its own, as in a plain probe.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pricing import seconds_for_usd
from probes.batch_search import search_largest_batch
from probes.devices.seam import Device
from probes.stats import percentile, relative_halfwidth
from probes.steady import measure_steady
from probes.train_step import (
    OutOfMemory,
    fits_one_step,
    is_oom_error,
    oom_summary,
    release_memory,
    run_timed,
    young_garbage_only,
)
from probes.tune.knobs import (
    DeviceTraits,
    Knob,
    LoaderKind,
    StepConfig,
    Trial,
    knob_spec,
    plan_knobs,
)
from probes.tune.profile import profile_steps
from probes.tune.report import (
    CombinationPlan,
    RowKind,
    RowStatus,
    TuneReport,
    TuneRow,
    combination_plans,
)
from probes.tune.runs import BuiltRun, open_run, workload_traits
from probes.tune.shares import (
    MIN_TIMED_STEPS,
    RUN_MIN_STEPS,
    RunWindow,
    baseline_window_s,
    profile_reserve_s,
    run_window,
)
from probes.types import ProbeRequest, ProbeResult, ProbeStatus
from probes.workload import BuiltWorkload, build_workload, first_line

__all__ = ["Tuner", "progress_text"]

_MIN_BLOCKS = 3             # a row's interval from 9 steps on (the stopping rule wants 5 blocks)


@dataclass
class _Measured:
    row: TuneRow
    times: tuple[float, ...] = ()
    warmup_steps: int = 0


def _secs(seconds: float) -> str:
    """``12 s``, ``0.43 s``: whole seconds from 10 s on, two figures below."""
    return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.2g} s"


def _ran(config: StepConfig, measured: list[_Measured]) -> _Measured | None:
    """The measured run of ``config`` among ``measured``, if any."""
    return next((m for m in measured if m.row.config == config
                 and m.row.status is RowStatus.MEASURED), None)


def _setup_s(configs: list[StepConfig], compile_s: float) -> float:
    """The set-up seconds of running ``configs``: compiling the compiled ones."""
    return compile_s * sum(1 for c in configs if c.compiler)


def progress_text(row: TuneRow) -> str:
    """One row in a few words: ``bf16 measured 2.66x``, ``batch 64 oom``."""
    label = row.setting if row.kind in (RowKind.TRIAL, RowKind.COMBINATION) else \
        str(row.kind).replace("_", " ")
    if row.status is RowStatus.MEASURED:
        return f"{label} measured {row.speedup or 1.0:.2f}x"
    return f"{label} {str(row.status).replace('_', ' ')}"


class Tuner:
    """Tunes one request on one device. ``workload`` (tests) is deep-copied for every run;
    without it each run builds the request's recipe afresh. ``labels`` are the result's
    ``device`` and ``accelerator``. ``clock`` is injectable (seconds, monotonic).
    ``progress`` is given one line per configuration as its row is made (``bf16 measured
    2.66x (3 of up to 9)``)."""

    def __init__(self, request: ProbeRequest, device: Device, *,
                 workload: BuiltWorkload | None = None, labels: dict[str, Any] | None = None,
                 clock: Callable[[], float] = time.perf_counter, cpu_count: int | None = None,
                 min_steps: int = 15, profile_steps: int = 5,
                 progress: Callable[[str], None] | None = None) -> None:
        self.request = request
        self._progress = progress
        self._planned = 0  # runs the plan holds (combinations: at most)
        self._told = 0
        self._device = device
        self._workload = workload
        self._labels = dict(labels or {})
        self._clock = clock
        self._cpus = cpu_count or len(os.sched_getaffinity(0))
        self._min_steps = min_steps
        self._profile_steps = profile_steps
        self._deadline = 0.0
        self._reserve_s = 0.0
        self._step_s: float | None = None  # the baseline's seconds per sample
        self._baseline: StepConfig | None = None
        self._precision = request.recipe.precision
        self._last: BuiltRun | None = None  # the latest run, kept for the profile; one at most

    # -- building ---------------------------------------------------------------------
    def _fresh(self) -> BuiltWorkload:
        if self._workload is not None:
            return replace(self._workload, model=copy.deepcopy(self._workload.model))
        return build_workload(self.request.recipe)

    def _open(self, config: StepConfig) -> BuiltRun:
        return open_run(config, self._fresh(), self._device)

    # -- measuring --------------------------------------------------------------------
    def _window(self, config: StepConfig, pending_runs: int, later_setup_s: float,
                own_setup_s: float) -> RunWindow:
        """The next (later) run's window: ``probes.tune.shares.run_window`` on the box left
        after the profile's reserve, its steps predicted at the baseline's pace."""
        return run_window(self._deadline - self._reserve_s - self._clock(),
                          pending_runs=pending_runs, own_setup_s=own_setup_s,
                          later_setup_s=later_setup_s,
                          step_s=(self._step_s or 0.0) * config.batch_size)

    @staticmethod
    def _no_time(window: RunWindow, setup_s: float) -> str:
        compiling = f" after up to {_secs(setup_s)} of compiling" if setup_s else ""
        return (f"it needs about {_secs(window.needed_s)} ({RUN_MIN_STEPS} "
                f"steps at the baseline's pace){compiling} and {_secs(window.left_s)} of the "
                "box were left; give a longer --time-box")

    def _row(self, kind: RowKind, knob: Knob | None, config: StepConfig, status: RowStatus,
             **fields: Any) -> TuneRow:
        base = self._baseline or config
        numerics = (config.precision is not base.precision
                    or config.batch_size != base.batch_size)
        setting = fields.pop("setting", None) or (config.setting(knob) if knob else
                                                  config.describe())
        return TuneRow(kind, knob, setting, config, status, numerics, **fields)

    def _measure(self, kind: RowKind, knob: Knob | None, config: StepConfig, *,
                 window: RunWindow | Callable[[float, float], float], setup_s: float,
                 setting: str | None = None, note: str = "") -> _Measured:
        """One run of ``config``: build, a first (untimed) step, then warm-up and measured
        steps until stable or ``window`` + ``setup_s`` seconds from now. ``window`` is a
        later run's (not started when it does not fit), or for the baseline a function of the
        seconds the runs share and its pace: the box starts after its first step, and its
        second step (a warm-up step: the first one compiles) gives the pace."""
        if isinstance(window, RunWindow) and not window.fits:
            return _Measured(self._row(kind, knob, config, RowStatus.NO_TIME, setting=setting,
                                       note=self._no_time(window, setup_s)))
        started = self._clock()
        window_s = window.window_s if isinstance(window, RunWindow) else 0.0
        deadline = started + window_s + setup_s
        device, size = self._device, config.batch_size
        run: BuiltRun | None = None
        problem: tuple[RowStatus, str] | None = None
        self._last = None
        release_memory(device)  # the previous run's model and optimizer go first
        try:
            run = self._open(config)
            built = run
            if kind is RowKind.BASELINE:
                self._precision = run.step.precision  # tf32 without TF32 runs fp32

            def timed() -> float:
                return run_timed(lambda: built.step(built.feed()), batch_size=size,
                                 device=device, clock=self._clock,
                                 memory_limit_gib=self.request.memory_limit_gib)

            timed()  # compiling, loader workers starting, autotuning: not measured
            warm = 1
            if not isinstance(window, RunWindow):  # the baseline: as in a plain probe, the box
                box_start = self._clock()  # starts after that step
                self._deadline = box_start + self._box_s()
                pace_s, warm = timed(), 2
                window_s = window(self._deadline - self._reserve_s - box_start, pace_s)
                deadline = box_start + window_s
            steady = measure_steady(timed, clock=self._clock, deadline_s=deadline,
                                    target_rel_halfwidth=self.request.target_rel_halfwidth,
                                    min_steps=self._min_steps, min_measure_s=0.5, max_warmup=10,
                                    on_measure_start=device.reset_peak_memory)
            times = list(steady.step_times_s)
            if not isinstance(window, RunWindow):  # nothing compares without a baseline: past
                end = self._deadline - self._reserve_s  # its cap it goes on to its least steps
                while len(times) < MIN_TIMED_STEPS and self._clock() < end:
                    times.append(timed())
        except OutOfMemory as exc:
            problem = (RowStatus.OOM, str(exc))
        except Exception as exc:  # noqa: BLE001 - the user's step (or the compiler) may raise anything
            problem = ((RowStatus.OOM, f"out of memory at batch {size}: {oom_summary(str(exc))}")
                       if is_oom_error(exc) else (RowStatus.FAILED, first_line(exc)[:500]))
        if problem is not None:
            run = None
            release_memory(device)  # outside the handler: its traceback held the tensors
            return _Measured(self._row(kind, knob, config, problem[0], setting=setting,
                                       note=problem[1], run_s=self._clock() - started))
        if len(times) < MIN_TIMED_STEPS:
            had = (f"its whole window of the box ({_secs(window_s + setup_s)}"
                   if isinstance(window, RunWindow) else
                   f"the whole box ({_secs(self._box_s() - self._reserve_s)} before the profile")
            return _Measured(self._row(
                kind, knob, config, RowStatus.NOT_MEASURED, setting=setting,
                run_s=self._clock() - started,
                note=f"its first steps took {had}: {len(times)} timed after "
                     f"{steady.warmup_steps + warm - 1} of warm-up); give a longer --time-box"))
        sps = size * len(times) / sum(times)
        width = relative_halfwidth(times, min_blocks=_MIN_BLOCKS)
        base_sps = self._step_s and 1.0 / self._step_s
        row = self._row(kind, knob, config, RowStatus.MEASURED, setting=setting, note=note,
                        samples_per_second=sps,
                        rel_halfwidth=None if width == float("inf") else width,
                        speedup=sps / base_sps if base_sps else 1.0, measured_steps=len(times),
                        peak_memory_gib=device.peak_memory_gib() or None,
                        run_s=self._clock() - started)
        self._last = run
        return _Measured(row, tuple(times), steady.warmup_steps + warm)

    def _tell(self, done: _Measured) -> _Measured:
        """``done``, after one progress line about its row."""
        self._told += 1
        if self._progress is not None:
            self._progress(f"{progress_text(done.row)} ({self._told} of up to "
                           f"{max(self._planned, self._told)})")
        return done

    # -- the whole tune ---------------------------------------------------------------
    def _box_s(self) -> float:
        """The time box, shortened to what the dollar cap buys at the offer's price."""
        request = self.request
        if request.max_usd is not None and request.price_usd_per_hour > 0:
            return min(request.time_box_s,
                       seconds_for_usd(request.max_usd, request.price_usd_per_hour))
        return request.time_box_s

    def run(self) -> ProbeResult:
        """Measure, combine, profile; never raises for the workload's own faults."""
        start = self._clock()
        request = self.request
        box = self._box_s()
        self._deadline = start + box
        self._reserve_s = profile_reserve_s(box)
        try:
            traits = workload_traits(self._fresh(), request.recipe.batch_size)
        except Exception as exc:  # noqa: BLE001 - building the user's model may raise anything
            return ProbeResult.failure(request, ProbeStatus.ERROR, first_line(exc)[:500],
                                       wall_time_s=self._clock() - start, **self._labels)
        # cuDNN autotuning as the process has it once the entrypoint is imported
        baseline = StepConfig(request.recipe.precision, request.recipe.batch_size,
                              cudnn_benchmark=self._device.cudnn_benchmark())
        self._baseline = baseline
        plan = plan_knobs(DeviceTraits.of(self._device), traits, baseline, cpu_count=self._cpus)
        combos = 1 + int(request.allow_numerics) + int(traits.loader is not LoaderKind.NONE)
        compile_s = knob_spec(Knob.COMPILER).setup_s if any(
            t.knob is Knob.COMPILER for t in plan.trials) else 0.0

        def pending(trials: tuple[Trial, ...]) -> tuple[int, float]:
            setup = sum(knob_spec(t.knob).setup_s for t in trials) + combos * compile_s
            return len(trials) + combos + 2, setup  # + this run + the baseline again

        runs, setup = pending(plan.trials)
        self._planned = runs
        base = self._measure(RowKind.BASELINE, None, baseline, setup_s=0.0,
                             window=lambda free_s, step_s: baseline_window_s(
                                 free_s, later_setup_s=setup, step_s=step_s))
        self._tell(base)
        if base.row.status is not RowStatus.MEASURED:
            return self._failed(base.row, plan.skipped, start)
        assert base.row.samples_per_second is not None
        self._step_s = 1.0 / base.row.samples_per_second
        measured = [base]
        for i, trial in enumerate(plan.trials):
            runs, setup = pending(plan.trials[i + 1:])
            own = knob_spec(trial.knob).setup_s
            blocked = self._larger_than_a_failure(trial, measured)
            if blocked:
                measured.append(self._tell(_Measured(self._row(
                    RowKind.TRIAL, trial.knob, trial.config, RowStatus.NOT_MEASURED,
                    note=blocked))))
                continue
            measured.append(self._tell(self._measure(
                RowKind.TRIAL, trial.knob, trial.config, setup_s=own,
                window=self._window(trial.config, runs, setup, own))))
        # the combinations the trials so far could call for (the recheck can only take some away)
        todo = [p.config for p in self._plans(measured) if not _ran(p.config, measured)]
        measured.append(self._tell(self._measure(  # the machine's drift over the trials
            RowKind.RECHECK, None, baseline, setup_s=0.0, setting="the baseline again",
            window=self._window(baseline, len(todo) + 1, _setup_s(todo, compile_s), 0.0))))
        measured += self._combinations(measured, compile_s)
        return self._finish(measured, plan.skipped, start)

    @staticmethod
    def _larger_than_a_failure(trial: Trial, measured: list[_Measured]) -> str:
        """Why a batch rung is not tried: a smaller one ran out of memory, failed or was not
        measured (one skipped for time blocks nothing: the box decides this one too)."""
        if trial.knob is not Knob.BATCH:
            return ""
        for done in measured:
            row = done.row
            if row.knob is Knob.BATCH and row.status not in (RowStatus.MEASURED,
                                                             RowStatus.NO_TIME) \
                    and row.config.batch_size < trial.config.batch_size:
                ended = str(row.status).replace("_", " ")
                return f"not tried: batch {row.config.batch_size} already ended {ended}"
        return ""

    def _plans(self, measured: list[_Measured]) -> tuple[CombinationPlan, ...]:
        """The combinations the rows so far call for."""
        return combination_plans(tuple(m.row for m in measured),
                                 allow_numerics=self.request.allow_numerics)

    def _combinations(self, measured: list[_Measured], compile_s: float) -> list[_Measured]:
        """The combinations of ``report.combination_plans``, each measured unless a trial
        already ran its configuration (one knob won: that trial's row is the combination)."""
        plans = self._plans(measured)
        todo = [p.config for p in plans if not _ran(p.config, measured)]
        found: list[_Measured] = []
        for plan in plans:
            config, same = plan.config, _ran(plan.config, measured)
            if same is not None:
                found.append(self._tell(_Measured(replace(
                    same.row, kind=RowKind.COMBINATION, knob=None, setting=plan.setting,
                    note=plan.note or "the same configuration as its trial"))))
                continue
            todo.remove(config)
            setup = compile_s if config.compiler else 0.0
            found.append(self._tell(self._measure(
                RowKind.COMBINATION, None, config, setting=plan.setting, note=plan.note,
                setup_s=setup,
                window=self._window(config, len(todo) + 1, _setup_s(todo, compile_s), setup))))
        return found

    def _profile(self, report: TuneReport) -> TuneReport:
        """``report`` with the profile of its tuned configuration (else the baseline's),
        reusing the latest run when it is that configuration; a compiled one that would
        have to be compiled again past the box is not profiled."""
        row = report.tuned(allow_numerics=self.request.allow_numerics) or report.baseline
        run = self._last if self._last is not None and self._last.config == row.config else None
        left = self._deadline - self._clock()
        if run is None and row.config.compiler and left < knob_spec(Knob.COMPILER).setup_s:
            return report
        try:
            if run is None:
                self._last = None
                release_memory(self._device)
                run = self._open(row.config)
                run.step(run.feed())  # warm
            profile = profile_steps(run.step, run.feed, device=self._device, clock=self._clock,
                                    setting=row.setting, steps=self._profile_steps,
                                    deadline_s=self._deadline)
        except Exception:  # noqa: BLE001 - a profile is extra: its failure keeps the measurements
            return report
        return replace(report, profile=profile)

    def _largest_batch(self, measured: list[_Measured]) -> dict[str, Any]:
        """The result's largest-batch fields: from the batch trials, or from the search in
        a box of its own when the request asks for it (``find_batch``)."""
        rows = [m.row for m in measured if m.row.tries_batch]
        top = max((r for r in rows if r.status is RowStatus.MEASURED),
                  key=lambda r: r.config.batch_size)
        largest = top.config.batch_size
        failed = min((r.config.batch_size for r in rows if r.status is RowStatus.OOM
                      and r.config.batch_size > largest), default=None)
        bracket = {"largest_batch_that_fits": largest,  # only where a batch ran out of memory
                   "smallest_batch_that_failed": failed} if failed else {}
        if not self.request.find_batch:
            return bracket
        deadline = self._clock() + self.request.time_box_s

        def one_step(size: int) -> None:
            batch = run.make_batch(size)
            run_timed(lambda: run.step(batch), batch_size=size, device=self._device,
                      clock=self._clock, memory_limit_gib=self.request.memory_limit_gib)

        try:
            run = self._open(self._baseline_config)
            with young_garbage_only():
                found = search_largest_batch(
                    lambda size: fits_one_step(self._device, lambda: one_step(size)),
                    start=largest, start_fits=True, start_peak_gib=top.peak_memory_gib,
                    limit_gib=self.request.memory_limit_gib or self._device.total_memory_gib(),
                    out_of_time=lambda: self._clock() >= deadline)
        except Exception:  # noqa: BLE001 - the search is extra: its failure keeps the tune
            return bracket
        return {"largest_batch_that_fits": found.largest_fit,
                "largest_batch_peak_memory_gib": found.largest_fit_peak_gib,
                "smallest_batch_that_failed": found.smallest_failure,
                "batch_search_complete": found.complete}

    @property
    def _baseline_config(self) -> StepConfig:
        assert self._baseline is not None
        return self._baseline

    def _report(self, measured: list[_Measured], skipped: Any, start: float) -> TuneReport:
        return TuneReport(tuple(m.row for m in measured), tuple(skipped),
                          self.request.allow_numerics, self._box_s(), self._clock() - start)

    def _failed(self, row: TuneRow, skipped: Any, start: float) -> ProbeResult:
        """The baseline did not run: the probe ends as a plain probe would (oom, error,
        timeout), with the baseline's row as its tuning."""
        status = {RowStatus.OOM: ProbeStatus.OOM, RowStatus.FAILED: ProbeStatus.ERROR}.get(
            row.status, ProbeStatus.TIMEOUT)
        report = self._report([_Measured(row)], skipped, start)
        return ProbeResult.failure(self.request, status, row.note, tuning=report,
                                   wall_time_s=self._clock() - start, **self._labels)

    def _finish(self, measured: list[_Measured], skipped: Any, start: float) -> ProbeResult:
        request, base = self.request, measured[0]
        times = base.times
        width = relative_halfwidth(times)
        given = next((m.row for m in measured if m.row.knob is Knob.INPUT
                      and m.row.status is RowStatus.MEASURED), None)
        ratio = (base.row.samples_per_second / given.samples_per_second
                 if given and base.row.samples_per_second and given.samples_per_second else None)
        report = self._profile(self._report(measured, skipped, start))
        self._last = None  # frees the kept model before the batch search
        release_memory(self._device)
        batch_fields = self._largest_batch(measured)
        return ProbeResult(
            probe_id=request.probe_id, offer_key=request.offer_key,
            workload_fingerprint=request.workload_fingerprint, status=ProbeStatus.OK,
            batch_size=request.recipe.batch_size, samples_per_second=base.row.samples_per_second,
            step_time_p50_s=percentile(times, 50), step_time_p90_s=percentile(times, 90),
            measured_steps=len(times), warmup_steps=base.warmup_steps,
            rel_halfwidth=base.row.rel_halfwidth,
            stable=width < request.target_rel_halfwidth, peak_memory_gib=base.row.peak_memory_gib,
            input_bound_ratio=ratio, precision=self._precision,
            **batch_fields, tuning=replace(report, elapsed_s=self._clock() - start),
            wall_time_s=self._clock() - start, **self._labels)
