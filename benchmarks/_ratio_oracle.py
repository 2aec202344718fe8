"""The ceiling of one probe's transfer, measured: oracles that know the held-out ratios.

For ``bench_op_transfer.py`` (issue 28). A case is a held-out model m's reference cell on a
target A with the probe its cell on B (same generation, precision, vendor). An oracle
predicts m on A as the probe times a ratio A/B it reads off the *measured* reference cells
of the other models on that very pair, in the same generation and precision: rows the
benchmark holds out, so each is a bound, not a method:

- ``median``: the median of every other reference model's ratio (a workload-blind transfer
  that knows the pair exactly);
- ``mix-weighted``: the mean of the other models with an operator mix, each weighted
  ``exp(-(mix distance / w)^2)`` with the pair shift's width rule (``PairShift.width``);
- ``own ratio, other generation``: m's own ratio on the pair as the other Lambda generation
  (another software stack) measured it: what a perfect workload-aware transfer gets when the
  figures themselves move between runs;
- ``best other model (hindsight)``: the other model whose ratio happens to land nearest the
  truth, chosen with the truth (an upper bound on picking one sibling).

Also the spread of log(A/B) over the models per (generation, precision, pair): how much the
ratio depends on the workload.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from advisor.profiling import OpMix
from advisor.throughput._no_probe import mix_distance
from advisor.throughput.estimate import architecture_class
from pricing import AcceleratorSpec

ORACLES = ("median", "mix-weighted", "own ratio, other generation",
           "best other model (hindsight)")


class CellLike(Protocol):
    """The fields of ``bench_op_transfer.Cell`` this module reads."""

    @property
    def generation(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def precision(self) -> str: ...
    @property
    def accelerator(self) -> str: ...
    @property
    def samples_per_second(self) -> float: ...


@dataclass
class OracleCase:
    """One oracle's signed relative error on one case."""

    oracle: str
    error: float
    alike: bool
    model: str


def _ratio_logs(speeds: Mapping[tuple[str, str, str, str], float], generation: str,
                precision: str, target: str, probed: str,
                models: Sequence[str]) -> dict[str, float]:
    """Per model of ``models`` measured on both parts: log(speed on target / on probed)."""
    out = {}
    for model in models:
        on_target = speeds.get((generation, model, precision, target))
        on_probed = speeds.get((generation, model, precision, probed))
        if on_target and on_probed:
            out[model] = math.log(on_target / on_probed)
    return out


def oracle_cases(table: Sequence[CellLike], judged: set[str], specs: Mapping[str, AcceleratorSpec],
                 mixes: Mapping[str, OpMix], width: float) -> list[OracleCase]:
    """Every oracle's error on every (cell of a ``judged`` model, probe) case of ``table``."""
    speeds = {(c.generation, c.model, c.precision, c.accelerator): c.samples_per_second
              for c in table}
    models = sorted({c.model for c in table})
    out = []
    for cell in table:
        if cell.model not in judged:
            continue
        target = specs[cell.accelerator]
        own_mix = mixes.get(f"{cell.model}/{cell.precision}")
        for probe in table:
            if ((probe.generation, probe.model, probe.precision)
                    != (cell.generation, cell.model, cell.precision)
                    or probe.accelerator == cell.accelerator
                    or specs[probe.accelerator].vendor != target.vendor):
                continue
            others = [m for m in models if m != cell.model]
            logs = _ratio_logs(speeds, cell.generation, cell.precision, cell.accelerator,
                               probe.accelerator, others)
            if not logs:
                continue
            alike = architecture_class(specs[probe.accelerator]) == architecture_class(target)

            found: list[tuple[str, float]] = [("median", statistics.median(logs.values()))]
            weights = {m: math.exp(-((mix_distance(own_mix, mixes[key]) / width) ** 2))
                       for m in logs if own_mix is not None
                       and (key := f"{m}/{cell.precision}") in mixes}
            if sum(weights.values()) > 1e-9:
                found.append(("mix-weighted", sum(w * logs[m] for m, w in weights.items())
                              / sum(weights.values())))
            truth_log = math.log(cell.samples_per_second / probe.samples_per_second)
            found.append(("best other model (hindsight)",
                          min(logs.values(), key=lambda v: abs(v - truth_log))))
            for generation in sorted({c.generation for c in table} - {cell.generation}):
                own = _ratio_logs(speeds, generation, cell.precision, cell.accelerator,
                                  probe.accelerator, [cell.model])
                if own:
                    found.append(("own ratio, other generation", own[cell.model]))
            out += [OracleCase(oracle, math.exp(log_ratio - truth_log) - 1, alike, cell.model)
                    for oracle, log_ratio in found]
    return out


def ratio_spreads(table: Sequence[CellLike], specs: Mapping[str, AcceleratorSpec],
                  keep: Callable[[str], bool] = lambda _: True) -> list[float]:
    """Per (generation, precision, ordered pair of one vendor's parts) with three or more
    models kept by ``keep``: the standard deviation of log(speed A / speed B) over them."""
    by_run: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for c in table:
        if keep(c.model):
            by_run[(c.generation, c.model, c.precision)][c.accelerator] = c.samples_per_second
    pairs: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for (generation, _, precision), found in by_run.items():
        for a, speed_a in found.items():
            for b, speed_b in found.items():
                if a < b and specs[a].vendor == specs[b].vendor:
                    pairs[(generation, precision, a, b)].append(math.log(speed_a / speed_b))
    return [statistics.pstdev(logs) for logs in pairs.values() if len(logs) >= 3]
