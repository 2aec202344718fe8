"""Map the accelerator names clouds report to the catalog's canonical names."""

from __future__ import annotations

from pricing.accelerators import canonical_accelerator_name, load_accelerators
from pricing.errors import UnknownNameError

__all__ = ["canonical_or_none", "device_memory_gib"]

# (reported name, per-device memory above this many GiB) -> canonical name
_BY_MEMORY: dict[str, tuple[float, str]] = {
    "v100": (20.0, "V100-32GB-SXM2"),
    "a100": (50.0, "A100-80GB-SXM"),
}


def canonical_or_none(name: str, memory_gib: float | None = None) -> str | None:
    """The canonical accelerator name, or None when the catalog has no spec for it."""
    squashed = "".join(ch for ch in name.lower() if ch.isalnum())
    rule = _BY_MEMORY.get(squashed)
    if rule is not None and memory_gib is not None and memory_gib > rule[0]:
        return rule[1]
    try:
        return canonical_accelerator_name(name)
    except UnknownNameError:
        return None


def device_memory_gib(canonical: str, reported_gib: float | None) -> float:
    """Per-device memory: the cloud's figure, unless missing or implausible (>1.5x datasheet)."""
    datasheet = load_accelerators()[canonical].memory_gib
    if reported_gib is None or reported_gib <= 0 or reported_gib > 1.5 * datasheet:
        return datasheet
    return round(reported_gib, 2)
