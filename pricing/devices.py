"""Which catalog accelerator a device is, from the name its runtime reports.

A probe measurement is evidence only for the accelerator it really ran on, so the harness
names its device as the runtime reports it (``torch.cuda.get_device_name()``, the TPU device
kind, ``torch.hpu.get_device_name()``, the Neuron platform) and this module maps that name to
the catalog's name (``NVIDIA H100 80GB HBM3`` -> ``H100-SXM``).

The map is data: ``data/device_names.csv``, one rule per row. A rule matches when

- its ``runtime`` is the device's runtime (``cuda``, ``xla`` for TPUs, ``hpu`` for Gaudi,
  ``neuron`` for Trainium and Inferentia),
- its ``reported_name_pattern``, a Python regular expression, is found anywhere in the
  reported name (``re.search``, case-insensitive, the name stripped of surrounding blanks),
- and, when the caller knows the device's total memory, that memory lies within
  ``[min_memory_gib, max_memory_gib]`` (an empty bound is open). Bounds are not checked when
  the memory is unknown, so a name that says its size (``A100-SXM4-40GB``) resolves alone.

The answer is the accelerator every matching rule agrees on; no match, or rules that disagree
(the same name in two sizes and no memory to choose), is None: the caller then names the
device as reported. Pure: no I/O besides reading the shipped table once.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

from pricing.accelerators import SHIPPED_DATA_DIR, optional_float
from pricing.errors import PricingError

__all__ = ["RUNTIMES", "DeviceNameRule", "accelerator_for_device", "load_device_names"]

# The runtimes a probe can run on, besides the CPU (which is never a catalog accelerator).
RUNTIMES = ("cuda", "xla", "hpu", "neuron")


@dataclass(frozen=True, slots=True)
class DeviceNameRule:
    """One row of the device-name table: names a runtime reports for one catalog accelerator.

    ``pattern`` is searched case-insensitively in the reported name; memory bounds are total
    device memory in GiB (None: open); ``source`` says where the reported name was seen (or
    ``unverified``), ``captured_at`` when.
    """

    runtime: str
    pattern: re.Pattern[str]
    min_memory_gib: float | None
    max_memory_gib: float | None
    accelerator: str
    source: str
    captured_at: date

    def matches(self, runtime: str, reported_name: str, memory_gib: float | None) -> bool:
        """True when this rule names the device (memory bounds only checked when known)."""
        if runtime != self.runtime or not self.pattern.search(reported_name.strip()):
            return False
        if memory_gib is None:
            return True
        low = self.min_memory_gib if self.min_memory_gib is not None else float("-inf")
        high = self.max_memory_gib if self.max_memory_gib is not None else float("inf")
        return low <= memory_gib <= high


def _rule(row: dict[str, str]) -> DeviceNameRule:
    runtime = row["runtime"].strip()
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime {runtime!r} is not one of {', '.join(RUNTIMES)}")
    rule = DeviceNameRule(
        runtime=runtime, pattern=re.compile(row["reported_name_pattern"], re.IGNORECASE),
        min_memory_gib=optional_float(row["min_memory_gib"]),
        max_memory_gib=optional_float(row["max_memory_gib"]),
        accelerator=row["accelerator"].strip(), source=row["source"].strip(),
        captured_at=date.fromisoformat(row["captured_at"]),
    )
    if not rule.accelerator:
        raise ValueError("accelerator is empty")
    if (rule.min_memory_gib is not None and rule.max_memory_gib is not None
            and rule.min_memory_gib > rule.max_memory_gib):
        raise ValueError(f"min_memory_gib {rule.min_memory_gib} > max_memory_gib {rule.max_memory_gib}")
    return rule


@cache
def load_device_names(path: Path = SHIPPED_DATA_DIR / "device_names.csv") -> tuple[DeviceNameRule, ...]:
    """The device-name rules of ``path`` (the shipped table by default), in file order.

    Raises PricingError naming the file and line of a bad row (unknown runtime, bad regular
    expression, bad number or date, empty accelerator, min above max).
    """
    rules = []
    with path.open(newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                rules.append(_rule(row))
            except (KeyError, ValueError, re.error) as exc:
                raise PricingError(f"{path}:{line}: bad device-name row ({exc})") from exc
    return tuple(rules)


def accelerator_for_device(
    runtime: str, reported_name: str, memory_gib: float | None = None,
    *, rules: Iterable[DeviceNameRule] | None = None,
) -> str | None:
    """The catalog accelerator of a device its ``runtime`` reports as ``reported_name``.

    ``memory_gib`` (total device memory, when known) picks between variants that share a
    name. None for an unknown device, and for a name that stays ambiguous (see the module
    docstring). ``rules`` replaces the shipped table (for tests).
    """
    table = load_device_names() if rules is None else rules
    found = {r.accelerator for r in table if r.matches(runtime, reported_name, memory_gib)}
    return found.pop() if len(found) == 1 else None
