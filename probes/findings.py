"""Findings: what a probe's measurements say to change, each with evidence and expected gain.

Pure functions of a ``ProbeResult`` (and the offer's accelerator spec, when known), so
``recommend`` can print them as advice next to the ranking.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pricing import AcceleratorSpec
from probes.types import ProbeResult, ProbeStatus

__all__ = ["Finding", "FindingKind", "findings_for"]

INPUT_BOUND_RATIO = 1.2
LOW_UTILIZATION_PCT = 60.0
MEMORY_MOSTLY_EMPTY = 0.5


class FindingKind(enum.StrEnum):
    """What a finding is about."""

    INPUT_BOUND = "input-bound"
    LOW_UTILIZATION = "low-utilization"
    BF16_UNUSED = "bf16-unused"
    MEMORY_MOSTLY_EMPTY = "memory-mostly-empty"
    LARGEST_BATCH = "largest-batch"
    DOES_NOT_FIT = "does-not-fit"
    NOISY = "noisy-estimate"


@dataclass(frozen=True)
class Finding:
    """One piece of advice: ``advice`` says what to do, ``evidence`` the numbers behind it,
    ``expected_gain`` what it should buy (``expected_speedup`` as a samples/s factor when it
    can be estimated, else None)."""

    kind: FindingKind
    offer_key: str
    advice: str
    evidence: str
    expected_gain: str
    expected_speedup: float | None = None


def _noisy(result: ProbeResult) -> Finding | None:
    width = result.rel_halfwidth
    if result.stable or width is None:
        return None
    return Finding(
        FindingKind.NOISY, result.offer_key,
        advice="samples/s did not settle within the time box: stop other work on the machine "
               "(or pick a quieter one) and probe again with a longer --time-box before "
               "trusting this figure",
        evidence=f"±{width:.1%} at 95% confidence after {result.measured_steps} measured "
                 "steps, where a probe stops once within its target, ±2% by default",
        expected_gain="a figure the ranking can trust",
    )


def _input_bound(result: ProbeResult) -> Finding | None:
    ratio = result.input_bound_ratio
    if ratio is None or ratio < INPUT_BOUND_RATIO:
        return None
    return Finding(
        FindingKind.INPUT_BOUND, result.offer_key,
        advice="the input pipeline is the bottleneck: add DataLoader workers, use "
               "pin_memory=True and prefetching, or pick an instance with more vCPUs per "
               "accelerator",
        evidence=f"steps on one cached batch ran {ratio:.2f}x faster than on the real loader",
        expected_gain=f"up to {ratio:.2f}x samples/s once loading keeps up",
        expected_speedup=ratio,
    )


def _low_utilization(result: ProbeResult) -> Finding | None:
    util = result.utilization_pct
    if util is None or util >= LOW_UTILIZATION_PCT:
        return None
    return Finding(
        FindingKind.LOW_UTILIZATION, result.offer_key,
        advice="the accelerator is idle much of the time: raise the batch, overlap data "
               "transfer (non_blocking copies), or use a smaller/cheaper accelerator",
        evidence=f"mean accelerator utilization {util:.0f}% during measured steps",
        expected_gain=f"up to {100.0 / max(util, 1.0):.1f}x samples/s at full utilization, "
                      "or the same speed on a cheaper device",
        expected_speedup=100.0 / max(util, 1.0),
    )


def _bf16_unused(result: ProbeResult, accelerator: AcceleratorSpec | None) -> Finding | None:
    if accelerator is None or not accelerator.supports_bf16 or result.precision.low_precision:
        return None
    speedup = None
    if accelerator.bf16_tflops and accelerator.fp32_tflops:
        speedup = accelerator.bf16_tflops / accelerator.fp32_tflops
    gain = (f"peak matmul throughput {speedup:.1f}x higher in bf16 on {accelerator.name}; "
            "real steps gain less (memory-bound layers)" if speedup
            else "roughly half the activation memory and faster matmuls")
    return Finding(
        FindingKind.BF16_UNUSED, result.offer_key,
        advice="set precision: bf16 (torch.autocast with dtype=torch.bfloat16)",
        evidence=f"{accelerator.name} supports bf16 but the step ran in {result.precision}",
        expected_gain=gain, expected_speedup=None,
    )


def _memory(result: ProbeResult, accelerator: AcceleratorSpec | None) -> Finding | None:
    if accelerator is None or result.peak_memory_gib is None:
        return None
    used = result.peak_memory_gib / accelerator.memory_gib
    if used >= MEMORY_MOSTLY_EMPTY:
        return None
    room = max(2, int(1.0 / max(used, 1e-3) * 0.8))
    bigger = result.largest_batch_that_fits or result.batch_size * room
    return Finding(
        FindingKind.MEMORY_MOSTLY_EMPTY, result.offer_key,
        advice=f"memory is mostly empty at batch {result.batch_size}: try a per-device batch "
               f"near {bigger} (scale the learning rate with it)",
        evidence=f"peak {result.peak_memory_gib:.1f} GiB of {accelerator.memory_gib:g} GiB "
                 f"({used:.0%})",
        expected_gain="higher samples/s from a fuller device (largest where steps are short)",
    )


def _one_line(text: str, limit: int = 200) -> str:
    """The first line of ``text``, cut at ``limit`` characters (evidence is one line)."""
    lines = text.strip().splitlines()
    first = lines[0] if lines else ""
    return first if len(first) <= limit else first[:limit - 3] + "..."


def _bracket(result: ProbeResult) -> str:
    """What the search measured: the largest fit (and its peak) and the first failure."""
    fits, failed = result.largest_batch_that_fits, result.smallest_batch_that_failed
    peak = result.largest_batch_peak_memory_gib
    parts = []
    if fits is not None:
        parts.append(f"batch {fits} fits" + (f" (peak {peak:.1f} GiB)" if peak else ""))
    if failed is not None:
        parts.append(f"batch {failed} ran out of memory")
    return ", ".join(parts) or "no batch fit"


def _batch_limits(result: ProbeResult) -> Finding | None:
    fits = result.largest_batch_that_fits
    if result.status is ProbeStatus.OOM:
        where = f"; the largest that fits is {fits}" if fits else ""
        return Finding(
            FindingKind.DOES_NOT_FIT, result.offer_key,
            advice=f"batch {result.batch_size} does not fit on this offer{where}: lower the "
                   "per-device batch, use gradient accumulation, bf16, activation "
                   "checkpointing, or more accelerators",
            evidence=_one_line(result.error) or f"out of memory at batch {result.batch_size}",
            expected_gain="a run that fits at all",
        )
    if fits is None:
        return None
    if not result.batch_search_complete:
        return Finding(
            FindingKind.LARGEST_BATCH, result.offer_key,
            advice=f"batches up to at least {fits} fit (the search ended before it ran out "
                   "of memory; probe again with a longer --time-box)",
            evidence=_bracket(result),
            expected_gain="headroom for a larger batch" if fits > result.batch_size
                          else "unknown",
        )
    return Finding(
        FindingKind.LARGEST_BATCH, result.offer_key,
        advice=f"the largest per-device batch that fits is about {fits}",
        evidence=f"{_bracket(result)}: searched by doubling from batch {result.batch_size}, "
                 "then narrowing",
        expected_gain="headroom for a larger batch" if fits > result.batch_size
                      else "none: the batch is at the limit",
    )


def findings_for(result: ProbeResult, accelerator: AcceleratorSpec | None = None) -> list[Finding]:
    """Every finding the result supports, most actionable first.

    ``accelerator`` is the spec of the device the probe ran on
    (``pricing.load_accelerators()[name]``); the bf16 and memory findings need it. Failed
    probes other than ``oom`` give no findings.
    """
    if result.status is ProbeStatus.OOM:
        found = _batch_limits(result)
        return [found] if found else []
    if result.status is not ProbeStatus.OK:
        return []
    candidates = [
        _noisy(result),
        _input_bound(result),
        _low_utilization(result),
        _bf16_unused(result, accelerator),
        _memory(result, accelerator),
        _batch_limits(result),
    ]
    return [f for f in candidates if f is not None]
