"""Probe requests and results: frozen records with checked invariants and a JSON round trip
(``pricing.records.Record``: the fields as they are, enums by value, times in ISO 8601).

A ``ProbeRequest`` travels to the instance as JSON; the harness answers with a
``ProbeResult`` as JSON. Both check their invariants on construction, so a result that
claims ``ok`` always carries a positive throughput and an ``oom`` always names the batch
that did not fit.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from pricing import LOCAL_OFFER_KEY, BillingRule, usd
from pricing.records import Record
from probes.errors import ProbeError
from probes.tune.report import TuneReport
from probes.vocabulary import Precision
from probes.workload import WorkloadRecipe

__all__ = [
    "LOCAL_OFFER_KEY",
    "NO_DEVICE",
    "ProbeRequest",
    "ProbeResult",
    "ProbeStatus",
]


NO_DEVICE = ""  # a result no harness wrote: the launch failed, timed out, was interrupted


class ProbeStatus(enum.StrEnum):
    """How a probe ended."""

    OK = "ok"
    OOM = "oom"
    TIMEOUT = "timeout"
    LAUNCH_FAILED = "launch_failed"
    ERROR = "error"
    WRONG_DEVICE = "wrong_device"


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _check_positive(owner: str, name: str, value: float | None, *, allow_none: bool) -> None:
    if value is None:
        if not allow_none:
            raise ProbeError(f"{owner}: {name} is required")
        return
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ProbeError(f"{owner}: {name} must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class ProbeRequest(Record):
    """One probe to run: which workload, on which offer, within what time and dollars.

    ``time_box_s`` bounds the measurement on the instance (boot time is extra);
    ``max_usd`` is the most this probe may cost; ``memory_limit_gib`` caps what the harness
    lets the step use (an allocation past it is an ``oom``), None for the device's own limit.
    ``target_rel_halfwidth`` is the relative 95% confidence half-width of samples/s at which
    measuring stops. ``accelerator`` is the catalog name of the accelerator the offer has
    (``H100-SXM``): a probe that finds another device ends ``wrong_device``; None (a local
    probe) accepts whatever device the machine has and records it. ``find_batch`` adds up to
    one more ``time_box_s`` for the largest-batch search (``max_run_s``). ``tune`` measures
    each applicable knob, then the best combination, inside the same box (``probes.tune``);
    ``allow_numerics`` lets precision and batch changes into that combination.
    """

    _error = ProbeError

    probe_id: str
    offer_key: str
    recipe: WorkloadRecipe
    workload_fingerprint: str
    time_box_s: float = 60.0
    max_usd: float | None = None
    price_usd_per_hour: float = 0.0
    find_batch: bool = False
    input_check: bool = True
    memory_limit_gib: float | None = None
    target_rel_halfwidth: float = 0.02
    accelerator: str | None = None
    tune: bool = False
    allow_numerics: bool = False
    created_at: datetime = field(default_factory=_utcnow)

    @property
    def max_run_s(self) -> float:
        """The longest the harness may run after start-up: the time box, twice with the
        largest-batch search (which has a box of its own)."""
        return self.time_box_s * (2.0 if self.find_batch else 1.0)

    def __post_init__(self) -> None:
        owner = f"probe request {self.probe_id or '?'}"
        if not self.probe_id or not all(c.isalnum() or c in "-_" for c in self.probe_id):
            raise ProbeError(f"{owner}: probe_id must be letters, digits, '-' or '_'")
        if not self.offer_key:
            raise ProbeError(f"{owner}: offer_key is required (e.g. 'local' or 'aws:g5.xlarge:us-east-1')")
        _check_positive(owner, "time_box_s", self.time_box_s, allow_none=False)
        _check_positive(owner, "max_usd", self.max_usd, allow_none=True)
        _check_positive(owner, "memory_limit_gib", self.memory_limit_gib, allow_none=True)
        _check_positive(owner, "target_rel_halfwidth", self.target_rel_halfwidth, allow_none=False)
        if self.price_usd_per_hour < 0:
            raise ProbeError(f"{owner}: price_usd_per_hour must be >= 0, got {self.price_usd_per_hour}")
        if self.recipe.batch_size < 1:
            raise ProbeError(f"{owner}: recipe.batch_size must be >= 1, got {self.recipe.batch_size}")
        if self.allow_numerics and not self.tune:
            raise ProbeError(f"{owner}: allow_numerics applies only to a tune; set tune too")


@dataclass(frozen=True)
class ProbeResult(Record):
    """What one probe measured (or why it could not).

    ``samples_per_second`` is the steady-state mean after warm-up; ``rel_halfwidth`` its
    relative 95% confidence half-width (``stable`` when under the request's target).
    ``batch_size`` is the per-device batch that was run (for ``oom``: the batch that failed).
    ``input_bound_ratio`` is cached-batch samples/s over real-loader samples/s (1 = not
    input-bound). ``peak_memory_gib`` is peak accelerator memory (process peak RSS on cpu).
    ``cost_usd`` is what the probe cost (0 locally).

    ``device`` is the device as its runtime names it (``cpu``, ``cuda:NVIDIA H100 80GB HBM3``;
    ``NO_DEVICE``, empty, when the launcher ended the probe before the harness saw one);
    ``accelerator`` its catalog name (``H100-SXM``; None for the CPU and devices the catalog
    does not know). ``wrong_device`` means the device is not the offer's accelerator: what it
    measured (if anything) is never throughput of the offer.

    ``largest_batch_that_fits`` (with ``largest_batch_peak_memory_gib``, its peak) and
    ``smallest_batch_that_failed`` bracket the memory limit; ``batch_search_complete`` says the
    bracket is tight (within 2%, or adjacent batches); else the fit is a lower bound (the
    search hit its time box or the harness's batch cap).

    ``tuning`` (a tune only) holds each knob's row, the best combination and the step
    profile; the figures above are then the baseline's (the spec as written).

    ``op_class_seconds`` is device seconds per step per operator class (``matmul``,
    ``convolution``, ``attention``, ``normalization``, ``elementwise``, ``reduction``,
    ``embedding``, ``optimizer``, ``other``) where the probe recorded them (a profiler pass
    over a few steps); empty when not recorded. Predictions for other accelerators split the
    measured step by it (``advisor.throughput._op_transfer``).
    """

    _error = ProbeError

    probe_id: str
    offer_key: str
    workload_fingerprint: str
    status: ProbeStatus
    batch_size: int
    samples_per_second: float | None = None
    step_time_p50_s: float | None = None
    step_time_p90_s: float | None = None
    measured_steps: int = 0
    warmup_steps: int = 0
    rel_halfwidth: float | None = None
    stable: bool = False
    peak_memory_gib: float | None = None
    utilization_pct: float | None = None
    input_bound_ratio: float | None = None
    precision: Precision = Precision.FP32
    device: str = "cpu"
    accelerator: str | None = None
    largest_batch_that_fits: int | None = None
    largest_batch_peak_memory_gib: float | None = None
    smallest_batch_that_failed: int | None = None
    batch_search_complete: bool = False
    wall_time_s: float = 0.0
    cost_usd: float = 0.0
    error: str = ""
    tuning: TuneReport | None = None
    op_class_seconds: dict[str, float] = field(default_factory=dict, hash=False)
    created_at: datetime = field(default_factory=_utcnow)

    def __post_init__(self) -> None:
        owner = f"probe result {self.probe_id}"
        if not isinstance(self.status, ProbeStatus):
            object.__setattr__(self, "status", ProbeStatus(self.status))
        if not isinstance(self.precision, Precision):
            object.__setattr__(self, "precision", Precision(self.precision))
        if self.batch_size < 1:
            raise ProbeError(f"{owner}: batch_size must be >= 1, got {self.batch_size}")
        if self.status is ProbeStatus.OK:
            _check_positive(owner, "samples_per_second (status ok)", self.samples_per_second,
                            allow_none=False)
            if self.measured_steps < 1:
                raise ProbeError(f"{owner}: status ok needs measured_steps >= 1")
        elif self.samples_per_second is not None:
            _check_positive(owner, "samples_per_second", self.samples_per_second, allow_none=True)
        if self.status in (ProbeStatus.ERROR, ProbeStatus.LAUNCH_FAILED,
                           ProbeStatus.WRONG_DEVICE) and not self.error:
            raise ProbeError(f"{owner}: status {self.status} needs error text")
        fits = self.largest_batch_that_fits
        if self.status is ProbeStatus.OOM and fits is not None and fits >= self.batch_size:
            raise ProbeError(
                f"{owner}: oom at batch {self.batch_size} but largest_batch_that_fits={fits}"
            )
        if fits is not None and fits < 1:
            raise ProbeError(f"{owner}: largest_batch_that_fits must be >= 1, got {fits}")
        failed = self.smallest_batch_that_failed
        if failed is not None and fits is not None and failed <= fits:
            raise ProbeError(f"{owner}: smallest_batch_that_failed={failed} must be above "
                             f"largest_batch_that_fits={fits}")
        if self.cost_usd < 0 or self.wall_time_s < 0:
            raise ProbeError(f"{owner}: cost_usd and wall_time_s must be >= 0")
        for name in ("step_time_p50_s", "step_time_p90_s", "peak_memory_gib", "input_bound_ratio",
                     "largest_batch_peak_memory_gib"):
            _check_positive(owner, name, getattr(self, name), allow_none=True)
        for op_class, seconds in self.op_class_seconds.items():
            if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0):
                raise ProbeError(f"{owner}: op_class_seconds[{op_class!r}] must be a finite "
                                 f"number >= 0, got {seconds!r}")

    def with_cost(self, *, wall_time_s: float, price_usd_per_hour: float,
                  billing: BillingRule | None = None) -> ProbeResult:
        """This result with the instance's wall time and the dollars it cost: the wall time
        as the cloud's ``billing`` rule bills it (a 20 s probe on AWS is billed 60 s), pro rata
        without a rule (this machine, or an instance that never started)."""
        billed_s = billing.billed_s(wall_time_s) if billing is not None else wall_time_s
        return replace(self, wall_time_s=wall_time_s,
                       cost_usd=usd(billed_s, price_usd_per_hour))

    @classmethod
    def failure(
        cls, request: ProbeRequest, status: ProbeStatus, error: str, **extra: Any
    ) -> ProbeResult:
        """A result for a probe that measured nothing (launch failed, timed out, crashed)."""
        extra.setdefault("precision", request.recipe.precision)
        return cls(
            probe_id=request.probe_id, offer_key=request.offer_key,
            workload_fingerprint=request.workload_fingerprint, status=status,
            batch_size=request.recipe.batch_size, error=error or str(status), **extra,
        )
