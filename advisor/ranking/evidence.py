"""Probe results of a workload turned into evidence for ``recommend``.

A probe runs the training step on one device, so each ``ok`` result is a single-device
measurement of the accelerator it really ran on: a cloud offer's (checked again here, so a
CPU fallback stored by an older version is ``wrong_device`` and never throughput), or, for a
local probe, whatever the machine has. A local probe on an accelerator the catalog knows (the
user's own H100) is evidence for every offer with it and re-scales the predictions for the
others; one on the CPU or an unknown device informs the findings only. Probes that found the
batch limit, or ran out of memory, decide memory fit on their accelerator.

A tuned probe (``advisor probe --tune``) says in the advice what its knobs bought; with a
``TunedPolicy`` other than ``OFF`` its tuned configuration's samples/s is the measurement,
with basis ``tuned`` (``SAME_NUMERICS``: only a configuration that keeps the spec's
precision and batch; ``ANY``: numerics-changing ones too, when the tune allowed them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.ranking.offers import MeasuredMemory
from advisor.ranking.policy import TunedPolicy
from advisor.throughput import Basis, Measurement
from pricing import Catalog

if TYPE_CHECKING:  # the results' modules load where there are results (most runs have none)
    from probes import ProbeResult, TuneRow

__all__ = ["ProbeEvidence", "TunedPolicy", "evidence_from_probes"]


@dataclass(frozen=True)
class ProbeEvidence:
    """Measurements and memory limits for the ranking, advice lines, a JSON summary per probe."""

    measurements: tuple[Measurement, ...] = ()
    advice: tuple[str, ...] = ()
    probes: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    memory: Mapping[str, MeasuredMemory] = field(default_factory=dict)


def _summary(result: ProbeResult, accelerator: str | None, used: bool) -> dict[str, Any]:
    return {"probe_id": result.probe_id, "offer": result.offer_key, "status": str(result.status),
            "device": result.device, "accelerator": accelerator,
            "samples_per_second": result.samples_per_second, "batch_size": result.batch_size,
            "precision": result.precision, "used_for_ranking": used}


def _memory_limits(results: Iterable[ProbeResult]) -> dict[str, MeasuredMemory]:
    """Per accelerator: the largest batch any probe ran (and its peak), the smallest that ran
    out of memory. ``wrong_device`` results are not evidence of anything."""
    from probes import ProbeStatus, result_accelerator

    limits: dict[str, MeasuredMemory] = {}
    for result in results:
        accelerator = result_accelerator(result)
        if accelerator is None or result.status not in (ProbeStatus.OK, ProbeStatus.OOM):
            continue
        seen = limits.get(accelerator, MeasuredMemory(accelerator))
        fits: list[tuple[int, float | None]] = []
        if result.status is ProbeStatus.OK:
            fits.append((result.batch_size, result.peak_memory_gib))
        if result.largest_batch_that_fits is not None:
            fits.append((result.largest_batch_that_fits, result.largest_batch_peak_memory_gib))
        fails = [b for b in (result.smallest_batch_that_failed,
                             result.batch_size if result.status is ProbeStatus.OOM else None)
                 if b is not None]
        for batch, peak in fits:
            if seen.fits_batch is None or batch > seen.fits_batch:
                seen = MeasuredMemory(accelerator, batch, peak, seen.fails_batch, result.probe_id)
        if fails and (seen.fails_batch is None or min(fails) < seen.fails_batch):
            seen = MeasuredMemory(accelerator, seen.fits_batch, seen.fits_peak_gib, min(fails),
                                  result.probe_id)
        limits[accelerator] = seen
    return limits


def _tuned_row(result: ProbeResult, policy: TunedPolicy) -> TuneRow | None:
    """The tuned configuration ``policy`` lets replace the probe's throughput, if any."""
    if result.tuning is None or policy is TunedPolicy.OFF:
        return None
    return result.tuning.tuned(allow_numerics=policy is TunedPolicy.ANY)


def _tuning_advice(result: ProbeResult, used: TuneRow | None) -> list[str]:
    """What a tune found: its tuned configuration with the spec's numerics (and whether the
    ranking uses it), and the gains held back for changing the numerics (each needs a
    convergence check)."""
    if result.tuning is None:
        return []
    where = f"[probe {result.probe_id} on {result.offer_key}]"
    lines = []
    safe = result.tuning.tuned(allow_numerics=False)
    if safe is not None:
        uses = "; the ranking uses it" if used == safe else ""
        lines.append(f"configure the step as {safe.setting}: {safe.speedup or 1.0:.2f}x the "
                     f"spec's samples/s, same numerics{uses} {where}")
    for row in result.tuning.numerics_gains():
        uses = "; the ranking uses it" if used is not None and used.config == row.config else ""
        lines.append(f"{row.setting} measured {row.speedup or 1.0:.2f}x the spec's samples/s "
                     f"but changes the numerics: run a convergence check before using it{uses} "
                     f"{where}")
    return lines


def evidence_from_probes(results: Sequence[ProbeResult], catalog: Catalog, *,
                         policy: TunedPolicy = TunedPolicy.OFF) -> ProbeEvidence:
    """Measurements, memory limits, advice and summaries from a workload's stored probes
    (any status, oldest first): the most trustworthy ``ok`` probe per offer and device is
    throughput (its tuned configuration's, basis ``tuned``, where ``policy`` allows);
    ``wrong_device`` ones are listed and said to be unused."""
    if not results:
        return ProbeEvidence()
    from probes import ProbeStatus, findings_for, most_trustworthy, rechecked, result_accelerator

    checked = rechecked(results, catalog)
    measurements, advice, summaries = [], [], []
    for result in checked:
        if result.status is ProbeStatus.WRONG_DEVICE:
            summaries.append(_summary(result, result_accelerator(result), False))
            advice.append(f"probe {result.probe_id} on {result.offer_key} is not used: "
                          f"{result.error}; probe again once the instance runs the right runtime")
    for result in most_trustworthy(checked):
        assert result.samples_per_second is not None  # ok results always carry it
        accelerator = result_accelerator(result)
        known = accelerator is not None and accelerator in catalog.accelerators
        summaries.append(_summary(result, accelerator, known))
        tuned = _tuned_row(result, policy)
        if accelerator is not None and known:
            used = tuned.samples_per_second if tuned is not None else None
            advice.append(
                f"measured on {result.offer_key} ({accelerator}): "
                f"{used or result.samples_per_second:,.1f} samples/s at batch "
                f"{result.batch_size}, {result.precision}"
                f"{' in its tuned configuration' if used else ''} (probe {result.probe_id}, "
                f"{result.created_at:%Y-%m-%d}); the ranking uses it for every {accelerator} "
                "offer (scaled to the offer's device count)")
            measurements.append(
                Measurement(accelerator, tuned.samples_per_second, 1, Basis.TUNED,
                            rel_halfwidth=tuned.rel_halfwidth)
                if tuned is not None and tuned.samples_per_second is not None
                else Measurement(accelerator, result.samples_per_second, 1,
                                 rel_halfwidth=result.rel_halfwidth,
                                 batch_size=result.batch_size,
                                 op_class_seconds=tuple(sorted(result.op_class_seconds.items()))))
        else:
            advice.append(
                f"measured on {result.offer_key} ({result.device}): "
                f"{result.samples_per_second:,.1f} samples/s at batch {result.batch_size}, "
                f"{result.precision} (probe {result.probe_id}); the catalog sells no such "
                "device, so it informs the findings below, not the ranking")
        advice += _tuning_advice(result, tuned if known else None)
        spec = catalog.accelerators.get(accelerator) if accelerator else None
        for finding in findings_for(result, spec):
            advice.append(f"{finding.advice} ({finding.evidence}; expected: "
                          f"{finding.expected_gain}) [probe {result.probe_id} on "
                          f"{result.offer_key}]")
    return ProbeEvidence(tuple(measurements), tuple(advice), tuple(summaries),
                         _memory_limits(checked))
