"""Probe results of a workload turned into evidence for ``recommend``.

A probe runs the training step on one device of an offer, so each ``ok`` result is a
single-device measurement of that offer's accelerator. The local probe (offer ``local``,
this machine's CPU) matches no cloud offer: it is reported, and its findings (input-bound,
largest batch, ...) still apply to the training loop wherever it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.throughput import Measurement
from pricing import Catalog
from probes.findings import findings_for
from probes.types import ProbeResult

__all__ = ["ProbeEvidence", "evidence_from_probes"]

LOCAL_OFFER = "local"


@dataclass(frozen=True)
class ProbeEvidence:
    """Measurements for the throughput model, advice lines, and a JSON summary per probe."""

    measurements: tuple[Measurement, ...] = ()
    advice: tuple[str, ...] = ()
    probes: tuple[dict[str, Any], ...] = field(default_factory=tuple)


def _accelerator_of(offer_key: str, catalog: Catalog) -> str | None:
    """The accelerator of ``cloud:instance_type[:region[:market]]``, if the catalog has it."""
    parts = offer_key.split(":")
    if len(parts) < 2:
        return None
    cloud, instance_type = parts[0], parts[1]
    return next((o.accelerator for o in catalog.offers
                 if str(o.cloud) == cloud and o.instance_type == instance_type), None)


def evidence_from_probes(results: list[ProbeResult], catalog: Catalog) -> ProbeEvidence:
    """Measurements, advice and summaries from the newest ``ok`` probe per offer."""
    measurements, advice, summaries = [], [], []
    for result in results:
        if result.samples_per_second is None:
            continue
        accelerator = None if result.offer_key == LOCAL_OFFER else _accelerator_of(
            result.offer_key, catalog)
        summary = {"probe_id": result.probe_id, "offer": result.offer_key,
                   "accelerator": accelerator or result.device,
                   "samples_per_second": result.samples_per_second,
                   "batch_size": result.batch_size, "precision": result.precision,
                   "used_for_ranking": accelerator is not None}
        summaries.append(summary)
        if accelerator is not None:
            measurements.append(Measurement(accelerator, result.samples_per_second, 1))
        else:
            advice.append(
                f"measured on {result.offer_key} ({result.device}): "
                f"{result.samples_per_second:,.1f} samples/s at batch {result.batch_size}, "
                f"{result.precision} (probe {result.probe_id}); no cloud offer has this device, "
                "so it informs the findings below, not the ranking")
        spec = catalog.accelerators.get(accelerator) if accelerator else None
        for finding in findings_for(result, spec):
            advice.append(f"{finding.advice} ({finding.evidence}; expected: "
                          f"{finding.expected_gain}) [probe {result.probe_id} on "
                          f"{result.offer_key}]")
    return ProbeEvidence(tuple(measurements), tuple(advice), tuple(summaries))
