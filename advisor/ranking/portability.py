"""What running a PyTorch step off CUDA takes: the runtime package, the first-compile wait,
and which of the step's traced operators the backend would run on the host or fail on.

Both tables are data (``data/backend_operator_support.csv``, ``data/backend_runtimes.csv``,
described in ``data/backend_operator_support.md``), every row sourced and dated. The backend
of an accelerator comes from its vendor (``Google`` -> ``xla``, ``AWS`` -> ``neuron``,
``Habana/Intel`` -> ``hpu``); NVIDIA (CUDA) has none and needs no check.
"""

from __future__ import annotations

import csv
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from pricing import AcceleratorSpec
from pricing.records import JsonView

__all__ = ["OPERATOR_SUPPORT_CSV", "RUNTIMES_CSV", "BackendRuntime", "OperatorStatus",
           "OperatorSupport", "Portability", "backend_runtime",
           "load_backend_runtimes", "load_operator_support", "portability_checker",
           "portability_of"]

_DATA = Path(__file__).parent.parent / "data"
OPERATOR_SUPPORT_CSV = _DATA / "backend_operator_support.csv"
RUNTIMES_CSV = _DATA / "backend_runtimes.csv"
_BACKENDS = ("xla", "neuron", "hpu")
_SHOWN_OPERATORS = 6  # operators named in one line; the rest counted


class OperatorStatus(enum.StrEnum):
    """What a backend does with an aten operator."""

    FALLBACK = "fallback"  # no lowering: runs on the host CPU, tensors copied off and back
    UNSUPPORTED = "unsupported"  # fails there
    SUPPORTED = "supported"  # lowered (caveats in the row's note)

    @property
    def blocks(self) -> bool:
        """True for the statuses ``constraints.portability: strict`` rejects an offer for."""
        return self is not OperatorStatus.SUPPORTED


@dataclass(frozen=True, slots=True)
class OperatorSupport:
    """One row of the operator table: ``operator`` (aten name, no overload) on ``backend``."""

    backend: str
    operator: str
    status: OperatorStatus
    note: str
    source: str
    source_version: str
    captured: date


@dataclass(frozen=True, slots=True)
class BackendRuntime:
    """One row of the runtime table: what a PyTorch step runs through on ``backend``, and the
    first-compile wait as its source states it (``unknown (...)`` where none does)."""

    backend: str
    vendors: tuple[str, ...]
    accelerators: str
    runtime_package: str
    first_compile: str
    notes: str
    source: str
    source_version: str
    captured: date


def _rows(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """The rows of ``path`` with their line numbers; AdvisorError for a missing column."""
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in columns if c not in (reader.fieldnames or ())]
            if missing:
                raise AdvisorError(f"{path}: missing column(s) {', '.join(missing)}")
            return [(line, {k: (v or "").strip() for k, v in row.items() if k})
                    for line, row in enumerate(reader, start=2)]
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc}") from exc


def _captured(path: Path, line: int, text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise AdvisorError(f"{path}:{line}: captured must be a date like 2026-11-26, got "
                           f"{text!r}") from None


@cache
def load_operator_support(path: Path = OPERATOR_SUPPORT_CSV
                          ) -> Mapping[str, Mapping[str, OperatorSupport]]:
    """The operator table by backend, then operator. Raises AdvisorError naming the file and
    line of a bad row (unknown backend or status, no source, a repeated operator)."""
    columns = ("backend", "operator", "status", "note", "source", "source_version", "captured")
    table: dict[str, dict[str, OperatorSupport]] = {b: {} for b in _BACKENDS}
    for line, row in _rows(path, columns):
        where = f"{path}:{line}"
        if row["backend"] not in table:
            raise AdvisorError(f"{where}: backend must be one of {', '.join(_BACKENDS)}, got "
                               f"{row['backend']!r}")
        try:
            status = OperatorStatus(row["status"])
        except ValueError:
            raise AdvisorError(f"{where}: status must be one of "
                               f"{', '.join(OperatorStatus)}, got {row['status']!r}") from None
        if not row["operator"] or not row["source"] or not row["source_version"]:
            raise AdvisorError(f"{where}: operator, source and source_version are required")
        if row["operator"] in table[row["backend"]]:
            raise AdvisorError(f"{where}: {row['backend']} {row['operator']} given twice")
        table[row["backend"]][row["operator"]] = OperatorSupport(
            backend=row["backend"], operator=row["operator"], status=status, note=row["note"],
            source=row["source"], source_version=row["source_version"],
            captured=_captured(path, line, row["captured"]))
    return table


@cache
def load_backend_runtimes(path: Path = RUNTIMES_CSV) -> Mapping[str, BackendRuntime]:
    """The runtime table by backend. Raises AdvisorError naming the file and line of a bad row
    (unknown backend, a field missing, a vendor given to two backends)."""
    columns = ("backend", "vendors", "accelerators", "runtime_package", "first_compile",
               "notes", "source", "source_version", "captured")
    runtimes: dict[str, BackendRuntime] = {}
    vendors_seen: set[str] = set()
    for line, row in _rows(path, columns):
        where = f"{path}:{line}"
        if row["backend"] not in _BACKENDS or row["backend"] in runtimes:
            raise AdvisorError(f"{where}: backend must be one of {', '.join(_BACKENDS)}, each "
                               f"once, got {row['backend']!r}")
        empty = [c for c in columns if c != "notes" and not row[c]]
        if empty:
            raise AdvisorError(f"{where}: {', '.join(empty)} required")
        vendors = tuple(v.strip() for v in row["vendors"].split(";") if v.strip())
        if vendors_seen & set(vendors):
            raise AdvisorError(f"{where}: vendor(s) {', '.join(vendors_seen & set(vendors))} "
                               "already belong to another backend")
        vendors_seen.update(vendors)
        runtimes[row["backend"]] = BackendRuntime(
            backend=row["backend"], vendors=vendors, accelerators=row["accelerators"],
            runtime_package=row["runtime_package"], first_compile=row["first_compile"],
            notes=row["notes"], source=row["source"], source_version=row["source_version"],
            captured=_captured(path, line, row["captured"]))
    return runtimes


def backend_runtime(accelerator: AcceleratorSpec) -> BackendRuntime | None:
    """The non-CUDA runtime ``accelerator`` needs (by its vendor), or None (NVIDIA, CUDA)."""
    return next((r for r in load_backend_runtimes().values()
                 if accelerator.vendor in r.vendors), None)


def _names(operators: Sequence[str]) -> str:
    shown = ", ".join(operators[:_SHOWN_OPERATORS])
    more = len(operators) - _SHOWN_OPERATORS
    return shown + (f" and {more} more" if more > 0 else "")


@dataclass(frozen=True, slots=True)
class Portability(JsonView):
    """What training the step on ``accelerator`` (a non-CUDA device) takes: the
    ``runtime_package``, the ``first_compile`` wait, and the traced operators the backend
    would run on the host CPU (``fallback``) or fail on (``unsupported``);
    ``operators_traced`` is False when the step's operators could not be traced (not
    checked)."""

    accelerator: str
    backend: str
    runtime_package: str
    first_compile: str
    fallback: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    operators_traced: bool = True

    @property
    def blocked_operators(self) -> tuple[str, ...]:
        """Operators ``constraints.portability: strict`` rejects the offer for."""
        return self.unsupported + self.fallback

    def operators_line(self) -> str:
        """The operator finding in a few words."""
        if not self.operators_traced:
            return "the step's operators could not be traced, so they were not checked"
        parts = []
        if self.unsupported:
            parts.append(f"fail there: {_names(self.unsupported)}")
        if self.fallback:
            parts.append(f"fall back to the host CPU (slow): {_names(self.fallback)}")
        if not parts:
            return "none of the step's traced operators is on the shipped fallback list"
        return "operators that " + "; that ".join(parts)

    def describe(self) -> str:
        """One line: what running there takes, and the operators that would fall back or fail."""
        return (f"{self.accelerator} needs {self.runtime_package}, not CUDA: the step runs as "
                f"compiled {self.backend} graphs (first compile: {self.first_compile}); "
                f"{self.operators_line()}")

    def headline_note(self) -> str:
        """A short clause for the headline when this accelerator leads."""
        problems = len(self.blocked_operators)
        tail = (f"; {problems} operator(s) fall back or fail there" if problems else
                "" if self.operators_traced else "; its operators were not checked")
        return (f"needs {self.runtime_package} (not CUDA; first compile: "
                f"{self.first_compile}){tail}")

    def rejection_figures(self) -> dict[str, str]:
        """The figures of a ``RejectionKind.PORTABILITY`` rejection."""
        return {"backend": self.backend, "runtime_package": self.runtime_package,
                "operators": _names(self.blocked_operators)}

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``: the fields (the operator lists as ``*_operators``), the
        line and the headline clause."""
        return {"accelerator": self.accelerator, "backend": self.backend,
                "runtime_package": self.runtime_package, "first_compile": self.first_compile,
                "fallback_operators": list(self.fallback),
                "unsupported_operators": list(self.unsupported),
                "operators_traced": self.operators_traced, "text": self.describe(),
                "headline_note": self.headline_note()}


def portability_of(accelerator: AcceleratorSpec, operators: frozenset[str] | None
                   ) -> Portability | None:
    """What training on ``accelerator`` takes for a step calling ``operators`` (None: not
    traced); None for a CUDA accelerator."""
    runtime = backend_runtime(accelerator)
    if runtime is None:
        return None
    support = load_operator_support()[runtime.backend]

    def with_status(status: OperatorStatus) -> tuple[str, ...]:
        return tuple(sorted(op for op in operators or () if op in support
                            and support[op].status is status))

    return Portability(accelerator=accelerator.name, backend=runtime.backend,
                       runtime_package=runtime.runtime_package,
                       first_compile=runtime.first_compile,
                       fallback=with_status(OperatorStatus.FALLBACK),
                       unsupported=with_status(OperatorStatus.UNSUPPORTED),
                       operators_traced=operators is not None)


def portability_checker(accelerators: Mapping[str, AcceleratorSpec],
                        operators: Callable[[], frozenset[str] | None]
                        ) -> Callable[[str], Portability | None]:
    """``check(accelerator_name)``: its ``Portability`` (None for CUDA), each worked out once;
    ``operators()`` (tracing the step, seconds) is called on the first non-CUDA accelerator
    asked about, never for CUDA ones."""
    traced: list[frozenset[str] | None] = []
    found: dict[str, Portability | None] = {}

    def check(name: str) -> Portability | None:
        if name not in found:
            accelerator = accelerators[name]
            if backend_runtime(accelerator) is None:
                found[name] = None
            else:
                if not traced:
                    traced.append(operators())
                found[name] = portability_of(accelerator, traced[0])
        return found[name]

    return check

