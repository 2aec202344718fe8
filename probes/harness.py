"""The probe harness: time the training step on this machine's device and report a ProbeResult.

The device comes first: a request for an accelerator the machine does not have (the CPU
fallback on a Trainium box) ends ``wrong_device`` before anything is measured. Building the
model and the first step (lazy initialisation, autotuning) come next; the request's time box
starts after them and holds warm-up (excluded; over when step times stop falling), measured
steps until the samples/s estimate is stable (relative 95% half-width under the target, and
the two halves of the measured steps agreeing) or the box ends, a short operator profile
(up to ``PROFILE_STEPS`` more steps under the autograd profiler while the box lasts: device
seconds per step by operator class, ``ProbeResult.op_class_seconds``; its failure leaves them
out with a note and never fails the probe), and the input-pipeline check (cached batch vs
the workload's real loader, only when it has one). The optional largest-batch search then
gets a box of its own. Out-of-memory is a result. A request with
``tune`` is handed to the tuner (``probes.tune``) once the device is checked.

Run on an instance as ``python -m probes.harness REQUEST.json RESULT.json``; needs only torch
and this package.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from probes.batch_search import BatchSearch, search_largest_batch
from probes.devices.check import device_mismatch
from probes.devices.detect import detect_device
from probes.devices.seam import Device
from probes.errors import ProbeError
from probes.stats import percentile, relative_halfwidth
from probes.steady import measure_steady
from probes.train_step import (
    OutOfMemory,
    TrainStep,
    build_train_step,
    fits_one_step,
    is_oom_error,
    oom_summary,
    release_memory,
    run_timed,
    to_device,
    young_garbage_only,
)
from probes.tune.profile import profile_op_classes
from probes.types import ProbeRequest, ProbeResult, ProbeStatus
from probes.vocabulary import DeviceKind
from probes.workload import BuiltWorkload, build_workload

__all__ = ["PROFILE_STEPS", "Harness", "OutOfMemory", "is_oom_error", "main", "oom_summary",
           "run_probe"]

Clock = Callable[[], float]
PROFILE_STEPS = 3  # steps of the operator profile after the measured ones


@dataclass
class _Measurement:
    step_times_s: list[float]
    warmup_steps: int
    utilization: list[float]
    box_end: float


class Harness:
    """Runs one ProbeRequest on one device. ``clock`` is injectable (seconds, monotonic).

    ``min_measured_steps`` and ``min_measure_s`` keep a very fast step from stopping on a
    lucky handful of samples; ``max_batch`` bounds the largest-batch search. Without a
    ``device`` the harness detects one (``prefer_device``: cpu, cuda, xla, hpu, neuron);
    ``cap_cpu_memory`` makes allocations past the memory cap fail on the CPU (for the
    harness's own process only: it caps the whole process). ``progress`` is given one line
    per tune configuration (``probes.progress``). ``profile_steps`` bounds the operator
    profile (0: none).
    """

    def __init__(
        self,
        request: ProbeRequest,
        *,
        workload: BuiltWorkload | None = None,
        device: Device | None = None,
        clock: Clock = time.perf_counter,
        min_measured_steps: int = 25,
        min_measure_s: float = 1.0,
        max_warmup_steps: int = 50,
        max_batch: int = 1 << 16,
        prefer_device: str | None = None,
        cap_cpu_memory: bool = False,
        progress: Callable[[str], None] | None = None,
        profile_steps: int = PROFILE_STEPS,
    ) -> None:
        self.request = request
        self._profile_steps = profile_steps
        self._progress = progress
        self._prefer_device = prefer_device
        self._cap_cpu_memory = cap_cpu_memory
        self._workload = workload
        self._device = device
        self._clock = clock
        self._min_steps = min_measured_steps
        self._min_measure_s = min_measure_s
        self._max_warmup = max_warmup_steps
        self._max_batch = max_batch
        self._step: TrainStep | None = None
        self._precision = request.recipe.precision

    # -- set-up -----------------------------------------------------------------------
    def _prepare(self, device: Device) -> BuiltWorkload:
        workload = self._workload or build_workload(self.request.recipe)
        self._step = build_train_step(workload.model, workload.loss_fn, device,
                                      precision=self.request.recipe.precision)
        self._precision = self._step.precision
        return workload

    def _run_step(self, batch: Any, batch_size: int, device: Device) -> float:
        step = self._step
        assert step is not None
        return run_timed(lambda: step(batch), batch_size=batch_size, device=device,
                         clock=self._clock, memory_limit_gib=self.request.memory_limit_gib)

    def _batch(self, workload: BuiltWorkload, batch_size: int, device: Device) -> Any:
        try:
            return workload.make_batch(batch_size, device.torch_device)
        except Exception as exc:
            if is_oom_error(exc):
                raise OutOfMemory(batch_size, oom_summary(str(exc))) from exc
            raise

    # -- phases -----------------------------------------------------------------------
    def _measure(self, batch: Any, device: Device, fraction: float) -> _Measurement:
        """Warm-up then measured steps. The time box starts after the first step (lazy
        initialisation, autotuning); measuring may use ``fraction`` of it."""
        size = self.request.recipe.batch_size
        self._run_step(batch, size, device)
        box_start = self._clock()
        run = measure_steady(
            lambda: self._run_step(batch, size, device), clock=self._clock,
            deadline_s=box_start + fraction * self.request.time_box_s,
            target_rel_halfwidth=self.request.target_rel_halfwidth,
            min_steps=self._min_steps, min_measure_s=self._min_measure_s,
            max_warmup=self._max_warmup - 1, on_measure_start=device.reset_peak_memory,
            utilization_pct=device.utilization_pct)
        return _Measurement(list(run.step_times_s), run.warmup_steps + 1,
                            list(run.utilization_pct), box_start + self.request.time_box_s)

    def _input_ratio(self, workload: BuiltWorkload, cached: Any, device: Device,
                     deadline: float) -> float | None:
        """Time of steps on the workload's real loader over the same number of steps on one
        cached batch, interleaved in rounds of five so drift hits both sides alike (at least
        one round, up to four while the box lasts); None without a loader."""
        if workload.make_loader is None:
            return None
        size = self.request.recipe.batch_size
        make_loader = workload.make_loader
        loader_iter: Iterator[Any] = iter(make_loader(size))

        def next_batch() -> Any:
            nonlocal loader_iter
            try:
                return next(loader_iter)
            except StopIteration:
                loader_iter = iter(make_loader(size))
                return next(loader_iter)

        # One untimed step first: a DataLoader starts its worker processes on the first batch.
        self._run_step(to_device(next_batch(), device.torch_device), size, device)
        cached_s = loader_s = 0.0
        rounds = 0
        while rounds < 4 and (rounds < 1 or self._clock() < deadline):
            start = self._clock()
            for _ in range(5):
                self._run_step(cached, size, device)
            cached_s += self._clock() - start
            start = self._clock()
            for _ in range(5):
                self._run_step(to_device(next_batch(), device.torch_device), size, device)
            loader_s += self._clock() - start
            rounds += 1
        return loader_s / cached_s if cached_s > 0 else None

    def _op_classes(self, batch: Any, device: Device, deadline: float) -> tuple[dict[str, float], str]:
        """Device seconds per step by operator class over up to ``profile_steps`` more steps,
        none started past ``deadline``; a profile that fails gives none and a note (it is extra:
        the measurement stands)."""
        step = self._step
        assert step is not None
        try:
            return profile_op_classes(lambda: step(batch), device=device, clock=self._clock,
                                      steps=self._profile_steps, deadline_s=deadline), ""
        except Exception as exc:  # noqa: BLE001 - the profiler or the user's step may raise anything
            if is_oom_error(exc):
                release_memory(device)
            return {}, f"operator profile failed: {type(exc).__name__}: {exc}"[:500]

    def _search(self, workload: BuiltWorkload, device: Device, *, fits: bool,
                peak_gib: float | None) -> BatchSearch:
        """The largest-batch search from the request's batch, in a time box of its own."""
        deadline = self._clock() + self.request.time_box_s
        with young_garbage_only():
            return search_largest_batch(
                lambda size: fits_one_step(device, lambda: self._run_step(
                    self._batch(workload, size, device), size, device)),
                start=self.request.recipe.batch_size, start_fits=fits, start_peak_gib=peak_gib,
                limit_gib=self.request.memory_limit_gib or device.total_memory_gib(),
                max_batch=self._max_batch, out_of_time=lambda: self._clock() >= deadline)

    # -- the whole probe --------------------------------------------------------------
    def _device_or_failure(self, start: float) -> Device | ProbeResult:
        request = self.request
        try:
            device = self._device or detect_device(self._prefer_device)
        except ProbeError as exc:  # a runtime that was asked for is not there
            status = ProbeStatus.WRONG_DEVICE if request.accelerator else ProbeStatus.ERROR
            expected = f"the offer has {request.accelerator}, but " if request.accelerator else ""
            return ProbeResult.failure(request, status, f"{expected}{exc}",
                                       wall_time_s=self._clock() - start)
        problem = device_mismatch(request.accelerator, device.accelerator, _device_label(device))
        if problem is not None:
            return ProbeResult.failure(request, ProbeStatus.WRONG_DEVICE, problem,
                                       device=_device_label(device),
                                       accelerator=device.accelerator,
                                       wall_time_s=self._clock() - start)
        if device.kind == DeviceKind.CPU and self._cap_cpu_memory:
            _cap_address_space(request.memory_limit_gib)
        return device

    def run(self) -> ProbeResult:
        """Run every phase and return the result; never raises for the workload's own faults."""
        start = self._clock()
        request = self.request
        device = self._device_or_failure(start)
        if isinstance(device, ProbeResult):
            return device
        base = {"device": _device_label(device), "accelerator": device.accelerator}
        if request.tune:  # every knob, one at a time, inside the same box
            from probes.tune.tuner import Tuner

            return Tuner(request, device, workload=self._workload, labels=base,
                         clock=self._clock, progress=self._progress).run()
        try:
            workload = self._prepare(device)
        except Exception as exc:  # noqa: BLE001 - building the user's model may raise anything
            text = str(exc).splitlines()[0][:500] if str(exc) else type(exc).__name__
            if is_oom_error(exc):
                return ProbeResult.failure(
                    request, ProbeStatus.OOM,
                    f"building the model ran out of memory: {oom_summary(str(exc))}",
                    wall_time_s=self._clock() - start, **base)
            return ProbeResult.failure(request, ProbeStatus.ERROR,
                                       text if isinstance(exc, ProbeError)
                                       else f"{type(exc).__name__}: {text}",
                                       wall_time_s=self._clock() - start, **base)
        base["precision"] = self._precision
        oom = ""
        try:
            batch = self._batch(workload, request.recipe.batch_size, device)
            meas = self._measure(batch, device, 0.85 if workload.make_loader else 1.0)
        except OutOfMemory as exc:
            oom = str(exc)
        except Exception as exc:  # noqa: BLE001 - the user's step may raise anything
            return ProbeResult.failure(request, ProbeStatus.ERROR,
                                       f"{type(exc).__name__}: {exc}"[:2000],
                                       wall_time_s=self._clock() - start, **base)
        if oom:  # out of the handler: its traceback no longer holds the step's tensors
            release_memory(device)
            found = (self._search(workload, device, fits=False, peak_gib=None)
                     if request.find_batch else None)
            return ProbeResult.failure(request, ProbeStatus.OOM, oom,
                                       wall_time_s=self._clock() - start,
                                       **_search_fields(found), **base)
        return self._finish(workload, device, batch, meas, start, base)

    def _finish(self, workload: BuiltWorkload, device: Device, batch: Any, meas: _Measurement,
                start: float, base: dict[str, Any]) -> ProbeResult:
        request = self.request
        times = meas.step_times_s
        peak = device.peak_memory_gib()
        if len(times) < 3:
            return ProbeResult.failure(
                request, ProbeStatus.TIMEOUT,
                f"time box of {request.time_box_s:g} s ended after {len(times)} measured steps "
                f"(warm-up took {meas.warmup_steps} steps); give a longer --time-box",
                warmup_steps=meas.warmup_steps, measured_steps=len(times),
                wall_time_s=self._clock() - start, **base)
        halfwidth = relative_halfwidth(times)
        ratio: float | None = None
        found: BatchSearch | None = None
        op_classes, note = self._op_classes(batch, device, meas.box_end)
        try:
            if request.input_check:
                ratio = self._input_ratio(workload, batch, device, meas.box_end)
        except OutOfMemory:
            release_memory(device)
        except Exception as exc:  # noqa: BLE001 - the user's loader may raise anything
            note = "; ".join(filter(None, (
                note, f"input check failed: {type(exc).__name__}: {exc}"[:2000])))
        if note:
            base = {**base, "error": note}
        if request.find_batch:
            found = self._search(workload, device, fits=True, peak_gib=peak)
        return ProbeResult(
            probe_id=request.probe_id, offer_key=request.offer_key,
            workload_fingerprint=request.workload_fingerprint, status=ProbeStatus.OK,
            batch_size=request.recipe.batch_size,
            samples_per_second=request.recipe.batch_size * len(times) / sum(times),
            step_time_p50_s=percentile(times, 50), step_time_p90_s=percentile(times, 90),
            measured_steps=len(times), warmup_steps=meas.warmup_steps,
            rel_halfwidth=halfwidth if halfwidth != float("inf") else None,
            stable=halfwidth < request.target_rel_halfwidth,
            peak_memory_gib=peak if peak else None,
            utilization_pct=statistics.fmean(meas.utilization) if meas.utilization else None,
            input_bound_ratio=ratio, op_class_seconds=op_classes, **_search_fields(found),
            wall_time_s=self._clock() - start, **base,
        )


def _device_label(device: Device) -> str:
    """``cpu``, or the runtime and the device's own name (``cuda:NVIDIA H100 80GB HBM3``)."""
    return device.name if device.kind == DeviceKind.CPU else f"{device.kind}:{device.name}"


def _search_fields(found: BatchSearch | None) -> dict[str, Any]:
    if found is None:
        return {}
    return {"largest_batch_that_fits": found.largest_fit,
            "largest_batch_peak_memory_gib": found.largest_fit_peak_gib,
            "smallest_batch_that_failed": found.smallest_failure,
            "batch_search_complete": found.complete}


def run_probe(request: ProbeRequest, **options: Any) -> ProbeResult:
    """Run ``request`` here and return its result (keyword options go to ``Harness``)."""
    return Harness(request, **options).run()


def _cap_address_space(limit_gib: float | None) -> None:
    """On cpu, make allocations past the cap fail (so they become ``oom``, not a dead host)."""
    import resource

    from probes.devices.cpu import meminfo_gib

    cap = limit_gib if limit_gib is not None else (meminfo_gib("MemAvailable") or 0.0) * 0.9
    if cap <= 0:
        return
    current = 0
    with contextlib.suppress(OSError), open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                current = int(line.split()[1]) * 1024
    limit = current + int(cap * 2**30)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def main(argv: list[str] | None = None) -> int:
    """``python -m probes.harness REQUEST.json RESULT.json``: exit 0 whenever a result was written."""
    import os

    from probes.parent_watch import exit_with_parent, parent_pid_from_env, writing_result
    from probes.progress import PROGRESS_ENV, progress_writer

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m probes.harness REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    exit_with_parent(parent_pid_from_env())  # a local probe: ends with its launcher
    with open(args[0]) as handle:
        request = ProbeRequest.from_json(handle.read())
    if request.recipe.base_dir:  # DataLoader workers started by spawn import the entrypoint too
        sys.path.insert(0, request.recipe.base_dir)
    result = run_probe(request, prefer_device=os.environ.get("ADVISOR_PROBE_DEVICE") or None,
                       cap_cpu_memory=True,
                       progress=progress_writer(os.environ.get(PROGRESS_ENV)))
    tmp = args[1] + ".tmp"
    with writing_result(), open(tmp, "w") as handle:
        handle.write(result.to_json())
        handle.flush()
        os.replace(tmp, args[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
