"""A measurement is evidence only for the accelerator it ran on: the checks that enforce it.

The harness checks its device before measuring; the orchestrator checks every result it is
handed (a harness of an older version, a launcher that booted the wrong image); readers of
the store check stored results again, so a CPU fallback recorded as ``ok`` for a Trainium
offer by an older version ends ``wrong_device`` too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from pricing import Catalog, accelerator_for_device
from probes.types import ProbeResult, ProbeStatus

__all__ = ["checked", "device_mismatch", "rechecked", "result_accelerator"]

# Statuses that say something about the device they ran on (a launcher's timeout or error
# result never saw a device).
_MEASURED = (ProbeStatus.OK, ProbeStatus.OOM)


def result_accelerator(result: ProbeResult) -> str | None:
    """The catalog accelerator a result ran on: as recorded, else read from its device name
    (``cuda:Tesla T4`` -> ``T4``; results written before the field existed); None for the
    CPU and unknown devices."""
    if result.accelerator:
        return result.accelerator
    runtime, sep, name = result.device.partition(":")
    return accelerator_for_device(runtime, name) if sep else None


def device_mismatch(expected: str | None, found_accelerator: str | None,
                    found_device: str) -> str | None:
    """One line naming what was expected and what was found; None when they agree (or
    nothing was expected: a local probe takes whatever device the machine has)."""
    if expected is None or found_accelerator == expected:
        return None
    found = found_device if found_accelerator is None else f"{found_accelerator} ({found_device})"
    return (f"wrong device: the offer has {expected} but the probe ran on {found}; "
            "its numbers are not used as throughput")


def checked(result: ProbeResult, expected: str | None) -> ProbeResult:
    """``result``, or the same result as ``wrong_device`` when it measured on a device that is
    not ``expected`` (the measured figures stay in the record for inspection)."""
    if result.status not in _MEASURED:
        return result
    problem = device_mismatch(expected, result_accelerator(result), result.device)
    if problem is None:
        return result
    return replace(result, status=ProbeStatus.WRONG_DEVICE, error=problem, stable=False)


def _accelerators_by_type(catalog: Catalog) -> dict[tuple[str, str], str]:
    """(cloud, instance type) -> accelerator, over every region and market: from the offer
    table's columns, each distinct row once (no offer is built: 100k offers take about 12 ms)."""
    offers = catalog.offers
    clouds, types, accelerators = (offers.cloud.values, offers.instance_type.values,
                                   offers.accelerator.values)
    distinct = set(zip(offers.cloud.codes.tolist(), offers.instance_type.codes.tolist(),
                       offers.accelerator.codes.tolist(), strict=True))
    return {(clouds[c], types[t]): accelerators[a] for c, t, a in distinct}


def _lookup(offer_key: str, by_type: dict[tuple[str, str], str]) -> str | None:
    cloud, sep, rest = offer_key.partition(":")
    return by_type.get((cloud, rest.split(":", 1)[0])) if sep else None


def rechecked(results: Iterable[ProbeResult], catalog: Catalog) -> list[ProbeResult]:
    """Stored results checked again against their offers' accelerators (results stored by
    versions that did not check end ``wrong_device`` here too)."""
    results = list(results)
    if not results:
        return []
    by_type = _accelerators_by_type(catalog)  # once, not a catalog scan per result
    return [checked(r, _lookup(r.offer_key, by_type)) for r in results]
