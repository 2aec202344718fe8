"""Per-device memory a runtime takes beyond the training step's tensors, as data.

``data/runtime_overhead.csv`` has one row per item (the CUDA context, cuBLAS workspaces, the
caching allocator's slack, ...) with the runtime and accelerator vendor it applies to, a fixed
``overhead_gib`` and an ``overhead_fraction`` of the step's traced peak, what it is, where the
figure comes from and when it was captured. The rows of a vendor add up; a vendor without rows
gets the ``*`` rows. Vendors are spelled as in ``pricing/data/accelerators.csv``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path

from advisor.errors import AdvisorError

__all__ = ["RUNTIMES", "SHIPPED_OVERHEAD", "OverheadItem", "RuntimeOverhead",
           "load_runtime_overheads", "overhead_for_accelerator", "overhead_for_vendor"]

SHIPPED_OVERHEAD = Path(__file__).parent.parent / "data" / "runtime_overhead.csv"
# The runtimes a probe can run on (``pricing.devices.RUNTIMES``), and ``*`` for any other.
RUNTIMES = ("cuda", "xla", "hpu", "neuron", "*")
_ANY = "*"
_RUNTIME_NAMES = {"cuda": "CUDA runtime", "xla": "TPU runtime", "hpu": "Gaudi runtime",
                  "neuron": "Neuron runtime", _ANY: "runtime"}


@dataclass(frozen=True, slots=True)
class OverheadItem:
    """One row of the table: ``overhead_gib`` plus ``overhead_fraction`` of the traced peak."""

    runtime: str
    vendor: str
    overhead_gib: float
    overhead_fraction: float
    what: str
    source: str
    captured_at: date


@dataclass(frozen=True, slots=True)
class RuntimeOverhead:
    """The memory one device's runtime needs besides the step: the sum of a vendor's rows."""

    runtime: str
    items: tuple[OverheadItem, ...]

    def gib(self, peak_gib: float) -> float:
        """GiB to add to a step whose peak is ``peak_gib``."""
        return sum(i.overhead_gib + i.overhead_fraction * peak_gib for i in self.items)

    @property
    def name(self) -> str:
        """``CUDA runtime``, ``TPU runtime``, ...: how messages name it."""
        return _RUNTIME_NAMES.get(self.runtime, f"{self.runtime} runtime")

    def describe(self) -> str:
        """``0.56 GiB + 3% of the peak``: the rule in a few words."""
        fixed = sum(i.overhead_gib for i in self.items)
        fraction = sum(i.overhead_fraction for i in self.items)
        return f"{fixed:.2g} GiB" + (f" + {fraction:.0%} of the peak" if fraction else "")


@cache
def load_runtime_overheads(path: Path = SHIPPED_OVERHEAD) -> dict[str, RuntimeOverhead]:
    """The table by vendor (``*`` for any other). Raises AdvisorError naming the file and line
    of a bad row."""
    rows: dict[str, list[OverheadItem]] = {}
    with path.open(newline="") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                item = OverheadItem(
                    runtime=row["runtime"].strip(), vendor=row["vendor"].strip(),
                    overhead_gib=float(row["overhead_gib"]),
                    overhead_fraction=float(row["overhead_fraction"]), what=row["what"].strip(),
                    source=row["source"].strip(),
                    captured_at=date.fromisoformat(row["captured_at"].strip()))
            except (KeyError, ValueError, AttributeError) as exc:
                raise AdvisorError(f"{path}:{line}: bad runtime overhead row ({exc})") from exc
            if item.runtime not in RUNTIMES or not item.source or item.overhead_gib < 0 \
                    or not 0 <= item.overhead_fraction < 1:
                raise AdvisorError(f"{path}:{line}: runtime must be one of {', '.join(RUNTIMES)}, "
                                   "overheads non-negative (fraction below 1) and source given")
            rows.setdefault(item.vendor, []).append(item)
    if _ANY not in rows:
        raise AdvisorError(f"{path}: needs a '*' row for accelerators of other vendors")
    return {vendor: RuntimeOverhead(items[0].runtime, tuple(items))
            for vendor, items in rows.items()}


def overhead_for_vendor(vendor: str | None) -> RuntimeOverhead:
    """The shipped overhead of an accelerator ``vendor`` (``NVIDIA``); the ``*`` rows for a
    vendor the table does not know, or None."""
    table = load_runtime_overheads()
    return table.get(vendor or _ANY, table[_ANY])


def overhead_for_accelerator(accelerator: str) -> RuntimeOverhead:
    """The shipped overhead of ``accelerator``'s vendor, looked up in the shipped accelerator
    specs; the ``*`` rows for an accelerator they do not know."""
    from pricing import load_accelerators

    spec = load_accelerators().get(accelerator)
    return overhead_for_vendor(spec.vendor if spec else None)
