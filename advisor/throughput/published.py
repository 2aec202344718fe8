"""Published training throughput: what vendors and MLPerf submitters measured, per chip.

``advisor/data/published_training.csv`` holds figures read from public sources (MLPerf
Training result logs, NVIDIA Deep Learning Examples READMEs, Habana and AWS Neuron performance
tables; ``published_training.md`` says how each was converted). Figures from different
software stacks are not comparable in absolute terms, so the useful quantity is a ratio to an
anchor accelerator measured in the same ``suite`` (one MLPerf round, one README, one vendor
table) and ``stack``: ``relative_throughput`` gives those ratios.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache
from pathlib import Path

from advisor._tables import Check, Table, first_failure, numbers, read_data_table
from advisor.errors import AdvisorError

__all__ = [
    "PUBLISHED_CSV",
    "PublishedRatio",
    "PublishedRow",
    "Stack",
    "ThroughputUnit",
    "load_published",
    "relative_throughput",
]

PUBLISHED_CSV = Path(__file__).parent.parent / "data" / "published_training.csv"

_COLUMNS = ("accelerator", "chips", "workload", "precision", "batch_per_chip", "framework",
            "stack", "suite", "value", "unit", "samples_per_second_per_chip", "source",
            "captured", "notes")


class Stack(Enum):
    """The software a published figure ran under (tuning level, not framework name)."""

    MLPERF_TUNED = "mlperf_tuned"  # vendor-optimized MLPerf Training submissions
    VENDOR_TUNED = "vendor_tuned"  # NVIDIA DLE/NGC, Habana references, Neuron tables, TPU refs
    PYTORCH_EAGER = "pytorch_eager"
    XLA = "xla"


class ThroughputUnit(Enum):
    """What ``PublishedRow.value`` counts, for the whole system of ``chips`` devices."""

    IMAGES_PER_SECOND = "images_per_second"
    SEQUENCES_PER_SECOND = "sequences_per_second"
    TOKENS_PER_SECOND = "tokens_per_second"
    MINUTES_TO_TRAIN = "minutes_to_train"


@dataclass(frozen=True, slots=True)
class PublishedRow:
    """One published figure: ``value`` in ``unit`` on ``chips`` devices of ``accelerator``.

    ``samples_per_second_per_chip`` is derived from ``value`` as the row's ``notes`` state
    (for token units, a sample is the workload's sequence); ``batch_per_chip`` is None when
    the source does not give it.
    """

    line: int
    accelerator: str
    chips: int
    workload: str
    precision: str
    batch_per_chip: float | None
    framework: str
    stack: Stack
    suite: str
    value: float
    unit: ThroughputUnit
    samples_per_second_per_chip: float
    source: str
    captured: str
    notes: str


@dataclass(frozen=True, slots=True)
class PublishedRatio:
    """``accelerator``'s per-chip throughput over ``anchor``'s, geometric mean over suites.

    ``suites`` are the suites the ratio came from; ``via`` lists the accelerators a chained
    ratio went through, nearest the anchor first (empty: measured beside the anchor).
    """

    accelerator: str
    anchor: str
    workload: str
    stack: Stack
    ratio: float
    suites: tuple[str, ...]
    via: tuple[str, ...] = ()


def _fail(path: Path, line: int, problem: str) -> AdvisorError:
    return AdvisorError(f"{path.name} line {line}: {problem}")


def _number_checks(path: Path, name: str, cells: Sequence[str], lines: Sequence[int], *,
                   when: Sequence[bool] | None = None) -> list[Check]:
    """A column of numbers: each must read (else "is not a number") and be finite and above
    zero; ``when`` limits the checks to some rows (None: all)."""
    values, parsed = numbers(cells)
    wanted = when or [True] * len(cells)
    return [
        ([w and not ok for w, ok in zip(wanted, parsed, strict=True)],
         lambda i: _fail(path, lines[i], f"{name} {cells[i]!r} is not a number")),
        ([w and not (math.isfinite(v) and v > 0) for w, v in zip(wanted, values, strict=True)],
         lambda i: _fail(path, lines[i], f"{name} {cells[i]!r} must be a finite number above "
                         "zero")),
    ]


def _choice_check(path: Path, name: str, cells: Sequence[str], lines: Sequence[int],
                  kind: type[Enum]) -> Check:
    values = {str(member.value) for member in kind}
    known = ", ".join(str(member.value) for member in kind)
    return ([cell not in values for cell in cells],
            lambda i: _fail(path, lines[i], f"{name} {cells[i]!r} is not one of: {known}"))


def _check(path: Path, table: Table, accelerators: Collection[str]) -> None:
    """Raise AdvisorError for the first bad line, checks in a row's reading order."""
    lines = range(2, len(table.lines) + 2)  # rows as records: the first is line 2
    cell = {c: table.cells(c) for c in _COLUMNS}
    chips, _ = numbers(cell["chips"])
    batch = [b.strip() for b in cell["batch_per_chip"]]
    checks: list[Check] = [
        ([a not in accelerators for a in cell["accelerator"]],
         lambda i: _fail(path, lines[i], f"accelerator {cell['accelerator'][i]!r} is not in the "
                         "shipped catalog (pricing/data/accelerators.csv); use the catalog's "
                         "name")),
        *_number_checks(path, "chips", cell["chips"], lines),
        ([c != int(c) if math.isfinite(c) else False for c in chips],
         lambda i: _fail(path, lines[i], f"chips {cell['chips'][i]!r} must be a whole number")),
        *[([not text.strip() for text in cell[name]],
           lambda i, name=name: _fail(path, lines[i], f"{name} is empty; every row names its "
                                      f"{name}"))
          for name in ("workload", "precision", "suite", "source", "captured")],
        *_number_checks(path, "batch_per_chip", batch, lines, when=[bool(b) for b in batch]),
        _choice_check(path, "stack", cell["stack"], lines, Stack),
        *_number_checks(path, "value", cell["value"], lines),
        _choice_check(path, "unit", cell["unit"], lines, ThroughputUnit),
        *_number_checks(path, "samples_per_second_per_chip",
                        cell["samples_per_second_per_chip"], lines),
    ]
    error = first_failure(checks)
    if error is not None:
        raise error


def load_published(path: Path = PUBLISHED_CSV, *,
                   accelerators: Iterable[str] | None = None) -> tuple[PublishedRow, ...]:
    """Every row of ``path``, validated; raises ``AdvisorError`` naming the first bad line.

    ``accelerators`` are the known names (default: the shipped catalog's accelerators).
    """
    return _load(path, frozenset(_catalog_names() if accelerators is None else accelerators))


@cache
def _load(path: Path, known: frozenset[str]) -> tuple[PublishedRow, ...]:
    table = read_data_table(path, _COLUMNS)
    _check(path, table, known)
    # line numbers count the header as line 1, as an editor shows them
    return tuple(
        PublishedRow(
            line=line, accelerator=r["accelerator"], chips=int(float(r["chips"])),
            workload=r["workload"], precision=r["precision"],
            batch_per_chip=float(r["batch_per_chip"]) if r["batch_per_chip"].strip() else None,
            framework=r["framework"], stack=Stack(r["stack"]), suite=r["suite"],
            value=float(r["value"]), unit=ThroughputUnit(r["unit"]),
            samples_per_second_per_chip=float(r["samples_per_second_per_chip"]),
            source=r["source"].strip(), captured=r["captured"], notes=r["notes"])
        for line, r in enumerate(table.frame[list(_COLUMNS)].to_dict("records"), start=2))


def _catalog_names() -> frozenset[str]:
    from pricing import load_accelerators

    return frozenset(load_accelerators())


def _per_suite(rows: Sequence[PublishedRow], workload: str, stack: Stack,
               precisions: Collection[str] | None = None) -> dict[str, dict[str, float]]:
    """Suite -> accelerator -> geometric-mean per-chip samples/s over the suite's rows."""
    logs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row.workload == workload and row.stack is stack and (
                precisions is None or row.precision in precisions):
            logs[row.suite][row.accelerator].append(math.log(row.samples_per_second_per_chip))
    return {suite: {name: math.exp(sum(v) / len(v)) for name, v in by_acc.items()}
            for suite, by_acc in logs.items()}


def _direct(suites: Mapping[str, Mapping[str, float]], anchor: str
            ) -> dict[str, tuple[float, tuple[str, ...]]]:
    logs: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for suite, by_acc in sorted(suites.items()):
        if anchor not in by_acc:
            continue
        for name, value in by_acc.items():
            logs[name].append((suite, math.log(value / by_acc[anchor])))
    return {name: (math.exp(sum(v for _, v in pairs) / len(pairs)),
                   tuple(s for s, _ in pairs))
            for name, pairs in logs.items()}


def relative_throughput(rows: Sequence[PublishedRow], *, workload: str, stack: Stack,
                        anchor: str, chain: bool = True,
                        precisions: Collection[str] | None = None) -> dict[str, PublishedRatio]:
    """Each accelerator's per-chip throughput on ``workload`` relative to ``anchor``, from
    the rows of ``precisions`` (the ``precision`` column's values; None: every row).

    A ratio is taken only inside one suite (same source and stack, so the software is shared)
    and averaged geometrically over the suites holding both. With ``chain``, an accelerator
    never measured beside the anchor is reached through accelerators that were, fewest hops
    first (ties: the link seen in more suites); ``via`` lists them, nearest the anchor first.
    """
    suites = _per_suite(rows, workload, stack, precisions)
    result = {name: PublishedRatio(name, anchor, workload, stack, ratio, used)
              for name, (ratio, used) in _direct(suites, anchor).items()}
    frontier = [name for name in result if name != anchor]
    while chain and frontier:
        found: dict[str, PublishedRatio] = {}
        for bridge in sorted(frontier):
            known = result[bridge]
            for name, (ratio, used) in _direct(suites, bridge).items():
                if name in result:
                    continue
                candidate = PublishedRatio(name, anchor, workload, stack, ratio * known.ratio,
                                           used + known.suites, via=(*known.via, bridge))
                best = found.get(name)
                if best is None or len(candidate.suites) > len(best.suites):
                    found[name] = candidate
        result.update(found)
        frontier = sorted(found)
    return result
