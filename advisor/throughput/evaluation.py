"""The evaluation protocol of ``advisor model evaluate``: how far to trust the predictions.

For every workload W and every accelerator X measured for W, ``repeats`` seeded sets of
``probes`` other accelerators measured for W serve as W's probes; the reference data is every
other workload of the benchmark (plus any extra reference rows); with ``unseen_target`` every
row of X is removed from the reference first. X is predicted (APE = |pred - meas| / meas)
and, per probe set, the priced accelerators of W are ranked by samples per dollar using the
measured value for probes and predictions for the rest (regret = 1 - measured samples/$ of
the pick / best measured samples/$). Coverage is the share of held-out targets inside the
model's interval (the transfer model's 90% interval is calibrated on folds of its reference
only, never on the held-out workload).
"""

from __future__ import annotations

import math
import random
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from advisor._fields import decode_utf8
from advisor._tables import Table, TableSyntaxError, first_failure, numbers, read_table
from advisor.errors import AdvisorError
from advisor.throughput._tiers import BENCH_GENERATION
from advisor.throughput.estimate import Measurement, ThroughputModel, WorkloadFeatures
from advisor.throughput.reference import ReferenceRow
from pricing import AcceleratorSpec, PricingError, canonical_accelerator_name
from pricing.billing import samples_per_usd
from pricing.records import JsonView

__all__ = [
    "BenchRow",
    "EvaluationResult",
    "Prediction",
    "TargetAccuracy",
    "bench_reference_rows",
    "evaluate",
    "evaluate_file",
    "read_bench",
]

REQUIRED_COLUMNS = ("workload", "accelerator", "throughput_samples_per_s")
PRICE_COLUMN = "price_usd_per_hour"


@dataclass(frozen=True, slots=True)
class BenchRow:
    """One measured throughput of a workload on one accelerator (optionally priced)."""

    workload: str
    accelerator: str
    samples_per_second: float
    price_usd_per_hour: float | None = None


@dataclass(frozen=True, slots=True)
class Prediction:
    """One held-out prediction: the workload, the target, the probed accelerators, and the
    measured and predicted samples/s with the model's interval."""

    workload: str
    target: str
    probes: tuple[str, ...]
    measured: float
    predicted: float
    low: float
    high: float

    @property
    def ape(self) -> float:
        """Absolute relative error of the prediction."""
        return abs(self.predicted - self.measured) / self.measured

    @property
    def inside(self) -> bool:
        """Whether the interval holds the measured value."""
        return self.low <= self.measured <= self.high


def _accuracy(predictions: Sequence[Prediction]) -> tuple[int, float, float, float]:
    """(n, MAPE %, median APE %, % inside the interval) of ``predictions``."""
    apes = [p.ape for p in predictions]
    return (len(apes), 100 * statistics.mean(apes), 100 * statistics.median(apes),
            100 * statistics.mean(p.inside for p in predictions))


@dataclass(frozen=True, slots=True)
class TargetAccuracy(JsonView):
    """Accuracy of the predictions for one target accelerator; percentages as numbers."""

    accelerator: str
    n: int
    mape: float
    median_ape: float
    coverage_pct: float  # predictions of this target inside the model's interval

    def to_dict(self) -> dict[str, Any]:
        """Every field, NaN as null (a row of ``advisor model evaluate --by-accelerator``)."""
        return {f.name: _json_number(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class EvaluationResult(JsonView):
    """Accuracy of the predictions and quality of the ranking; percentages as numbers.
    ``predictions`` in the order the seed draws them, the same for every model (so two
    models compare prediction by prediction)."""

    n: int
    mape: float
    median_ape: float
    top1_pct: float
    mean_regret_pct: float
    coverage_pct: float = math.nan  # held-out targets inside the model's interval
    predictions: tuple[Prediction, ...] = ()

    @property
    def by_accelerator(self) -> tuple[TargetAccuracy, ...]:
        """The accuracy per target accelerator, worst MAPE first."""
        grouped: dict[str, list[Prediction]] = defaultdict(list)
        for p in self.predictions:
            grouped[p.target].append(p)
        rows = [TargetAccuracy(target, *_accuracy(ps)) for target, ps in grouped.items()]
        return tuple(sorted(rows, key=lambda r: (-r.mape, r.accelerator)))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``advisor model evaluate --json`` prints (NaN as null; with
        ``--by-accelerator`` it adds each of ``by_accelerator``'s ``to_dict``)."""
        return {k: _json_number(getattr(self, k)) for k in (
            "n", "mape", "median_ape", "top1_pct", "mean_regret_pct", "coverage_pct")}


def _json_number(value: object) -> object:
    """None for NaN (no figure), which JSON cannot say; anything else as it is."""
    return None if isinstance(value, float) and math.isnan(value) else value


def _positive(cells: Sequence[str]) -> list[bool]:
    """Per cell: does it fail to read as a finite number above zero (as ``float`` reads)?"""
    values, _ = numbers(cells)
    return [not (math.isfinite(v) and v > 0) for v in values]


def _canonical_names(cells: Sequence[str], accelerators: Mapping[str, AcceleratorSpec]
                     ) -> dict[str, str | PricingError]:
    """Each distinct accelerator cell -> its catalog name, or why it has none."""
    names: dict[str, str | PricingError] = {}
    for cell in dict.fromkeys(cells):
        try:
            names[cell] = canonical_accelerator_name(cell, accelerators)
        except PricingError as exc:
            names[cell] = exc
    return names


def _bench_rows(table: Table, accelerators: Mapping[str, AcceleratorSpec], *,
               path: Path) -> list[BenchRow]:
    """The table's rows, checked column by column; AdvisorError names the first bad line as a
    row-by-row check would (workload, accelerator, throughput, then price)."""
    frame = table.frame.rename(columns=str.strip)
    cells = {c: [v.strip() for v in frame[c].tolist()] for c in frame.columns
             if c in (*REQUIRED_COLUMNS, PRICE_COLUMN)}
    workload, accelerator = cells["workload"], cells["accelerator"]
    sps = cells["throughput_samples_per_s"]
    price = cells.get(PRICE_COLUMN, [""] * len(sps))
    names = _canonical_names(accelerator, accelerators)
    fix = {"throughput_samples_per_s": "give measured samples per second",
           PRICE_COLUMN: "give USD per hour or leave it empty"}

    def at(row: int) -> str:
        return f"{path}:{table.lines[row]}"

    def positive(column: str, column_cells: Sequence[str]) -> Callable[[int], AdvisorError]:
        return lambda row: AdvisorError(
            f"{at(row)}: column {column} must be a positive number, got "
            f"{column_cells[row]!r}; {fix[column]}")

    def unknown(row: int) -> AdvisorError:  # the name, then close matches or every name
        return AdvisorError(f"{at(row)}: column accelerator: {names[accelerator[row]]}")

    error = first_failure([
        ([not w for w in workload],
         lambda row: AdvisorError(f"{at(row)}: column workload is empty; name the workload")),
        ([not a for a in accelerator],
         lambda row: AdvisorError(f"{at(row)}: column accelerator is empty; name the "
                                  "accelerator as 'advisor pricing list' does (e.g. A100-40GB-SXM)")),
        ([isinstance(names[a], PricingError) for a in accelerator], unknown),
        (_positive(sps), positive("throughput_samples_per_s", sps)),
        ([bool(p) and bad for p, bad in zip(price, _positive(price), strict=True)],
         positive(PRICE_COLUMN, price)),
    ])
    if error is not None:
        raise error
    return [BenchRow(w, str(names[a]), float(s), float(p) if p else None)
            for w, a, s, p in zip(workload, accelerator, sps, price, strict=True)]


def read_bench(path: Path, accelerators: Mapping[str, AcceleratorSpec]) -> list[BenchRow]:
    """Parse and validate BENCH.csv (UTF-8, with or without a byte-order mark); accelerator
    names are resolved to the catalog's."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        text = decode_utf8(data)  # Excel's "CSV UTF-8" starts with a byte-order mark
    except ValueError as exc:
        raise AdvisorError(f"{path}: {exc}") from exc
    try:
        table = read_table(text)
    except TableSyntaxError as exc:
        where = f"{path}:{exc.line}" if exc.line is not None else str(path)
        cells = re.search(r"Expected (\d+) fields in line \d+, saw (\d+)", exc.detail)
        if cells is not None:  # the header's count of cells is right, the line's is not
            raise AdvisorError(f"{where}: {cells[2]} cells where the header has {cells[1]}; "
                               "remove the extra cells (or quote a cell that holds a comma)"
                               ) from exc
        raise AdvisorError(f"{where}: not valid CSV ({exc.detail}); fix the quoting of that "
                           "line") from exc
    columns = [c.strip() for c in table.columns]
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if missing:
        raise AdvisorError(f"{path}: missing column {missing[0]}; the header needs "
                           f"{', '.join(REQUIRED_COLUMNS)} (optional {PRICE_COLUMN})")
    rows = _bench_rows(table, accelerators, path=path)
    if not rows:
        raise AdvisorError(f"{path}: no rows; add one row per (workload, accelerator)")
    return rows


def bench_reference_rows(rows: Sequence[BenchRow]) -> list[ReferenceRow]:
    """Benchmark rows as single-device reference rows (each workload its own model)."""
    return [ReferenceRow(generation=BENCH_GENERATION, model=r.workload, precision="unknown",
                         accelerator=r.accelerator, accelerator_count=1,
                         batch_size_per_accelerator=0, samples_per_second=r.samples_per_second,
                         sample_unit="sample") for r in rows]


def _by_workload(rows: Sequence[BenchRow]) -> dict[str, dict[str, tuple[float, float | None]]]:
    """workload -> accelerator -> (samples/s geometric mean, price) ."""
    grouped: dict[str, dict[str, list[BenchRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        grouped[r.workload][r.accelerator].append(r)
    return {w: {a: (math.exp(statistics.mean(math.log(r.samples_per_second) for r in rs)),
                    next((r.price_usd_per_hour for r in rs if r.price_usd_per_hour), None))
                for a, rs in accs.items()} for w, accs in grouped.items()}


def _regret(measured: Mapping[str, tuple[float, float | None]], predicted: Mapping[str, float],
            ) -> tuple[float, bool] | None:
    """(regret, pick is the best) of ranking the priced accelerators by predicted samples/$."""
    priced = {a: price for a, (_, price) in measured.items() if price}
    if len(priced) < 2:
        return None
    pick = max(priced, key=lambda a: samples_per_usd(predicted[a], priced[a]))
    best = max(priced, key=lambda a: samples_per_usd(measured[a][0], priced[a]))
    value = (samples_per_usd(measured[pick][0], priced[pick])
             / samples_per_usd(measured[best][0], priced[best]))
    return 1.0 - value, pick == best


def _held_out_models(
    rows: Sequence[BenchRow],
    table: Mapping[str, Mapping[str, tuple[float, float | None]]],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    model_factory: Callable[[], ThroughputModel],
    probes: int,
    reference: Sequence[ReferenceRow],
    unseen_target: bool,
    bench_reference: bool,
) -> Iterator[tuple[str, Mapping[str, tuple[float, float | None]], dict[str, ThroughputModel]]]:
    """Per workload (leave-one-group-out over the benchmark's workloads, sorted): its measured
    accelerators and, per target with enough other accelerators to probe, the model fitted
    without the workload (and, with ``unseen_target``, without any row of the target), by
    ``cross_validate``; the reference rows are always in the training rows."""
    from advisor.throughput._held_out import fit_held_out, group_splits

    bench = bench_reference_rows(rows)
    X = [*bench, *reference]
    shipped = np.arange(len(bench), len(X))
    for workload, (train, test) in group_splits([r.workload for r in rows]):
        measured = table[workload]
        targets = [t for t in sorted(measured) if len(measured) - 1 >= probes]
        kept = train if bench_reference else train[:0]
        if unseen_target:  # one fit per target, without any row of it
            splits = [(np.array([i for i in [*kept, *shipped] if X[i].accelerator != t],
                                dtype=np.intp), test) for t in targets]
        else:  # one fit for every target
            splits = [(np.concatenate([kept, shipped]), test)] if targets else []
        if any(len(train_rows) == 0 for train_rows, _ in splits):
            raise AdvisorError(
                f"workload {workload}: no reference rows to fit the model on without it"
                f"{' and its target' if unseen_target else ''}; add rows of other workloads "
                "to the file or use --reference shipped")
        models = fit_held_out(model_factory, X, splits, accelerators=accelerators)
        yield workload, measured, (dict(zip(targets, models, strict=True)) if unseen_target
                                   else {t: models[0] for t in targets})


def evaluate(
    rows: Sequence[BenchRow],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    model_factory: Callable[[], ThroughputModel],
    probes: int,
    repeats: int = 10,
    seed: int = 0,
    reference: Sequence[ReferenceRow] = (),
    unseen_target: bool = False,
    bench_reference: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> EvaluationResult:
    """Run the protocol in the module docstring; pure given its inputs (seeded).

    ``bench_reference=False`` leaves the benchmark's other workloads out of the reference
    (to measure transfer from ``reference`` alone, e.g. another software generation).
    """
    if probes < 1:
        raise AdvisorError(f"--probes must be >= 1, got {probes}: with no probe a benchmark "
                           "row has no FLOPs to predict from")
    if repeats < 1:
        raise AdvisorError(f"--repeats must be >= 1, got {repeats}")
    table = _by_workload(rows)
    rng = random.Random(seed)
    predictions: list[Prediction] = []
    regrets: list[float] = []
    hits = 0
    for done, (workload, measured, models) in enumerate(_held_out_models(
            rows, table, accelerators=accelerators, model_factory=model_factory, probes=probes,
            reference=reference, unseen_target=unseen_target, bench_reference=bench_reference)):
        features = WorkloadFeatures(precision=None, name=workload)
        for target, model in models.items():
            pool = sorted(a for a in measured if a != target)
            for _ in range(repeats):
                chosen = rng.sample(pool, probes)
                shots = [Measurement(a, measured[a][0]) for a in chosen]
                estimate = model.estimate(features, accelerators[target], measurements=shots)
                predicted = {a: (measured[a][0] if a in chosen else model.estimate(
                    features, accelerators[a], measurements=shots).samples_per_second)
                    for a in measured if a in chosen or (a != target and measured[a][1])}
                predicted[target] = estimate.samples_per_second
                predictions.append(Prediction(
                    workload, target, tuple(chosen), measured[target][0], predicted[target],
                    estimate.samples_per_second_low, estimate.samples_per_second_high))
                outcome = _regret(measured, predicted)
                if outcome is not None:
                    regrets.append(outcome[0])
                    hits += outcome[1]
        if progress is not None:
            progress(done + 1, len(table))
    if not predictions:
        raise AdvisorError(f"no workload has more than {probes} accelerators measured; lower "
                           "--probes or add rows")
    n, mape, median_ape, coverage_pct = _accuracy(predictions)
    return EvaluationResult(
        n=n, mape=mape, median_ape=median_ape,
        top1_pct=100 * hits / len(regrets) if regrets else math.nan,
        mean_regret_pct=100 * statistics.mean(regrets) if regrets else math.nan,
        coverage_pct=coverage_pct, predictions=tuple(predictions))


def _model_factories() -> dict[str, Callable[[], ThroughputModel]]:
    from advisor.throughput.baseline import MedianRatioModel, NearestRatioModel
    from advisor.throughput.transfer import TransferModel

    return {"transfer": TransferModel, "median-ratio": MedianRatioModel,
            "nearest-ratio": NearestRatioModel}


def evaluate_file(
    path: Path,
    *,
    probes: int,
    repeats: int = 10,
    seed: int = 0,
    reference: str = "shipped",
    unseen_target: bool = False,
    model: str = "transfer",
    progress: Callable[[int, int], None] | None = None,
) -> EvaluationResult:
    """``advisor model evaluate``: read BENCH.csv and run the protocol with a named model
    (``transfer``, or the ``median-ratio`` or ``nearest-ratio`` baseline) and reference
    (``shipped`` or ``none``)."""
    from advisor.throughput.reference import load_reference
    from pricing import load_accelerators

    factories = _model_factories()
    if model not in factories:
        raise AdvisorError(f"unknown model {model!r}; use one of {', '.join(factories)}")
    if reference not in ("shipped", "none"):
        raise AdvisorError(f"--reference must be shipped or none, got {reference!r}")
    accelerators = load_accelerators()
    rows = read_bench(path, accelerators)
    extra = load_reference() if reference == "shipped" else ()
    return evaluate(rows, accelerators=accelerators, model_factory=factories[model],
                    probes=probes, repeats=repeats, seed=seed, reference=extra,
                    unseen_target=unseen_target, progress=progress)
