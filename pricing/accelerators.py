"""Accelerator specs, and the names people type for them.

Two resolvers, for two jobs:

- ``canonical_accelerator_name`` maps a name to ONE accelerator (``a100`` -> ``A100-40GB-SXM``),
  for places that need a single spec (a bench row, a cloud's reported GPU name).
- ``matching_accelerators`` maps a name to every accelerator it stands for when filtering:
  a family (``A100``, ``H100``, ``V100``, ``A100-80GB``, ``TPU``, ``Trainium``) matches all its
  variants, an exact canonical name (``H100-SXM``, ``Gaudi``) matches just itself.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Iterable, Sequence
from functools import cache
from pathlib import Path

from pricing.errors import UnknownNameError
from pricing.types import AcceleratorSpec

__all__ = [
    "SHIPPED_DATA_DIR",
    "canonical_accelerator_name",
    "did_you_mean",
    "load_accelerators",
    "matching_accelerators",
    "optional_float",
]

SHIPPED_DATA_DIR = Path(__file__).parent / "data"

# Names people type -> the ONE canonical accelerator they most likely mean.
_ALIASES = {
    "v100": "V100-16GB-SXM2", "v10032gb": "V100-32GB-SXM2",
    "a100": "A100-40GB-SXM", "a10040gb": "A100-40GB-SXM", "a10080gb": "A100-80GB-SXM",
    "h100": "H100-SXM", "h100sxm5": "H100-SXM", "h100pcie": "H100-PCIe",
    "gaudi1": "Gaudi", "gaudihl205": "Gaudi", "trainium": "Trainium1", "trn1": "Trainium1",
    "trn2": "Trainium2", "tpuv5litepod": "TPU-v5e", "v5e": "TPU-v5e", "v5p": "TPU-v5p",
    "v6e": "TPU-v6e", "v4": "TPU-v4", "v3": "TPU-v3", "v2": "TPU-v2",
    "rtx6000ada": "RTX-6000-Ada", "a6000": "RTX-A6000", "2080ti": "RTX-2080Ti",
    "3090": "RTX-3090", "4090": "RTX-4090", "1080ti": "GTX-1080Ti",
}

# A word before a generation number names a family too (Trainium1, Trainium2 -> Trainium).
_GENERATION = re.compile(r"([A-Za-z]{4,})\d+")


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _parse_bool(text: str) -> bool:
    return text.strip().lower() in {"true", "1", "yes"}


def optional_float(text: str) -> float | None:
    """A CSV cell as a float; None when empty."""
    return float(text) if text.strip() else None


@cache
def load_accelerators(path: Path = SHIPPED_DATA_DIR / "accelerators.csv") -> dict[str, AcceleratorSpec]:
    """Accelerator specs by canonical name."""
    specs: dict[str, AcceleratorSpec] = {}
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            specs[row["name"]] = AcceleratorSpec(
                name=row["name"], vendor=row["vendor"], year=int(row["year"]),
                generation=row["generation"], fp32_tflops=optional_float(row["fp32_tflops"]),
                bf16_tflops=optional_float(row["bf16_tflops"]), memory_gib=float(row["memory_gib"]),
                memory_bandwidth_gbs=float(row["memory_bandwidth_gbs"]),
                interconnect=row["interconnect"], tensor_cores=_parse_bool(row["tensor_cores"]),
                supports_bf16=_parse_bool(row["supports_bf16"]),
                training=_parse_bool(row["training"]), source=row["source"],
            )
    return specs


def _families_of(canonical: str) -> list[str]:
    """The family names a canonical name belongs to: its leading ``-`` parts (``A100`` and
    ``A100-80GB`` for ``A100-80GB-SXM``) and the word before a generation number."""
    parts = canonical.split("-")
    families = ["-".join(parts[:end]) for end in range(1, len(parts))]
    generation = _GENERATION.fullmatch(canonical)
    if generation:
        families.append(generation.group(1))
    return families


def _families(names: Sequence[str]) -> dict[str, tuple[str, list[str]]]:
    """Squashed family name -> (family name as shown, its members in ``names`` order)."""
    families: dict[str, tuple[str, list[str]]] = {}
    for name in names:
        for family in _families_of(name):
            families.setdefault(_squash(family), (family, []))[1].append(name)
    return families


def _names(known: Iterable[str] | None) -> list[str]:
    return list(known) if known is not None else list(load_accelerators())


def canonical_accelerator_name(name: str, known: Iterable[str] | None = None) -> str:
    """Resolve a user's accelerator name (``a100``, ``H100``, ``tpu-v5e``) to ONE catalog name.

    Raises UnknownNameError with close matches when nothing fits.
    """
    names = _names(known)
    by_squash = {_squash(n): n for n in names}
    squashed = _squash(name)
    if squashed in by_squash:
        return by_squash[squashed]
    if squashed in _ALIASES and _ALIASES[squashed] in names:
        return _ALIASES[squashed]
    raise _unknown(name, names, None, one=True)


def matching_accelerators(
    name: str, known: Iterable[str] | None = None, *, field: str | None = None,
) -> tuple[str, ...]:
    """Every catalog accelerator a filter name stands for, in catalog order.

    An exact canonical name matches itself; a family (``A100``, ``H100``, ``A100-80GB``,
    ``TPU``) matches all its variants; an alias (``h100sxm5``, ``v5e``) its one accelerator.
    Raises UnknownNameError (prefixed by ``field``) with close matches or the valid names.
    """
    names = _names(known)
    squashed = _squash(name)
    exact = [n for n in names if _squash(n) == squashed]
    if exact:
        return (exact[0],)
    family = _families(names).get(squashed)
    if family is not None:
        return tuple(family[1])
    if squashed in _ALIASES and _ALIASES[squashed] in names:
        return (_ALIASES[squashed],)
    raise _unknown(name, names, field)


def _unknown(name: str, names: Sequence[str], field: str | None, *,
             one: bool = False) -> UnknownNameError:
    """The error for a name that resolves to nothing; ``one``: where ONE accelerator is needed
    (``canonical_accelerator_name``), which takes no family but the few with an alias."""
    prefix = f"{field}: " if field else ""
    exact = {_squash(n) for n in names}
    by_family = _families(names)
    if one and len(members := by_family.get(_squash(name), ("", []))[1]) > 1:
        return UnknownNameError(f"{prefix}accelerator {name!r} is a family of {len(members)} "
                                f"({', '.join(members)}); name one of them")
    families = sorted(shown for key, (shown, members) in by_family.items()
                      if len(members) > 1 and "-" not in shown and key not in exact
                      and (not one or _ALIASES.get(key) in names))
    hint = did_you_mean(name, [*families, *names]) or (
        f"; use one of {', '.join(sorted(names))}" if one else
        f"; use a family ({', '.join(families)}) or one of {', '.join(sorted(names))}")
    return UnknownNameError(f"{prefix}unknown accelerator {name!r}{hint}")


def did_you_mean(name: str, choices: Sequence[str]) -> str:
    """``"; did you mean a, b?"`` with up to three close choices, or ``""`` when none is close."""
    by_lower = {c.lower(): c for c in choices}
    close = [by_lower[c] for c in difflib.get_close_matches(name.lower(), by_lower, n=3, cutoff=0.5)]
    if not close:
        close = [c for c in choices if _squash(name) in _squash(c)][:3]
    return f"; did you mean {', '.join(close)}?" if close else ""
