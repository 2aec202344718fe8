"""Accuracy of the throughput model and the probe planner on the shipped Lambda data.

Builds one BENCH.csv per software generation (lambda_v0, lambda_v1) from the single-GPU rows
of ``advisor/data/reference_throughput.csv`` (accelerators with a spec in the catalog; a
workload is model/precision) and runs the ``advisor model evaluate`` protocol (K = 3,
``--reference none``: leave-one-workload-out inside the generation), with and without
``--unseen-target``, for the transfer + factorization model and the median-ratio and
nearest-workload ratio baselines.
The blend weights are chosen on one generation and reported on the other. Then: the
90% interval coverage, cross-generation, ``--reference shipped`` minus the evaluated
generation, a planner simulation and one CLI run as a check.

Prices: the catalog's on-demand price per device-hour (median over unflagged offers) where
the accelerator is priced; otherwise 2.5 x the Lambda system hardware price per GPU / 8760 h
(one-year payback with a 2.5x cloud markup, about the ratio of catalog to hardware price for
A100/H100/V100), from /work/shared/data/benchmarks/lambda_train_throughput.csv.

Run: python benchmarks/bench_throughput.py   (writes benchmarks/results/throughput.md)
"""

from __future__ import annotations

import csv
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_result  # noqa: E402

from advisor.ranking import Candidate, plan  # noqa: E402
from advisor.throughput import (  # noqa: E402
    Measurement,
    MedianRatioModel,
    NearestRatioModel,
    ReferenceRow,
    ThroughputModel,
    TransferModel,
    WorkloadFeatures,
    evaluate,
    load_reference,
    read_bench,
)
from pricing import Market, load_accelerators, shipped_catalog  # noqa: E402

LAMBDA_CSV = Path("/work/shared/data/benchmarks/lambda_train_throughput.csv")
GENERATIONS = ("lambda_v0", "lambda_v1")
PROBE_MINUTES = 10.0
HW_MARKUP = 2.5
NOTES_FILE = Path(__file__).parent / "results" / "throughput_notes.md"
TWIN_SHRINKAGE = 0.3  # chosen on the other generation by the previous version of this grid
SEEN_GRID = ((0.5, 0.0), (0.5, 0.25), (0.5, 0.5), (0.5, 0.75), (0.0, 0.5))  # factor_w, krige_w
# factor_w, spec_w, time_fit_w
UNSEEN_GRID = ((0.5, 0.0, 0.25), (0.5, 0.25, 0.25), (0.5, 0.5, 0.25), (0.5, 0.75, 0.25),
               (1.0, 0.5, 0.25), (0.5, 0.5, 0.0), (0.5, 0.5, 0.15), (0.5, 0.5, 0.35),
               (0.5, 0.5, 0.5))
# factor_weight, factor_weight_unseen, krige_weight, spec_prior_weight, time_fit_weight
Weights = tuple[float, float, float, float, float]
BASELINES = (("median-ratio", MedianRatioModel), ("nearest-ratio", NearestRatioModel))


def price_table() -> tuple[dict[str, float], dict[str, str]]:
    """Price per device-hour and where it came from, per accelerator."""
    by_acc: dict[str, list[float]] = defaultdict(list)
    for offer in shipped_catalog().offers:
        if offer.market is Market.ON_DEMAND and not offer.flagged:
            by_acc[offer.accelerator].append(offer.price_usd_per_accelerator_hour)
    prices = {a: statistics.median(v) for a, v in by_acc.items()}
    source = dict.fromkeys(prices, "catalog")
    hardware: dict[str, list[float]] = defaultdict(list)
    if LAMBDA_CSV.exists():
        with LAMBDA_CSV.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if row["system_hw_price_usd"]:
                    hardware[row["accelerator"]].append(
                        float(row["system_hw_price_usd"]) / float(row["num_accelerators"]))
    for name, values in hardware.items():
        if name not in prices:
            prices[name] = HW_MARKUP * statistics.median(values) / 8760
            source[name] = "hardware"
    return prices, source


def write_bench(folder: Path, generation: str, prices: dict[str, float], *,
                opaque: bool = False) -> Path:
    """BENCH.csv of one generation's single-GPU rows; workload ``model/precision``, or
    ``model-precision`` when ``opaque`` (no precision token: the model cannot link a
    workload to its precision twin, as for a user's own model)."""
    specs = load_accelerators()
    path = folder / f"{generation}{'-opaque' if opaque else ''}.csv"
    separator = "-" if opaque else "/"
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["workload", "accelerator", "throughput_samples_per_s", "price_usd_per_hour"])
        for r in load_reference():
            if r.generation == generation and r.accelerator_count == 1 and r.accelerator in specs:
                price = prices.get(r.accelerator)
                out.writerow([f"{r.model}{separator}{r.precision}", r.accelerator,
                              r.samples_per_second,
                              f"{price:.4f}" if price else ""])
    return path


def run_cli(path: Path, *extra: str) -> dict[str, float]:
    """``advisor model evaluate PATH --probes 3 --reference none --json EXTRA``."""
    command = [sys.executable, "-m", "cli", "model", "evaluate", str(path), "--probes", "3",
               "--reference", "none", "--json", *extra]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout))


def run(path: Path, factory: Callable[[], ThroughputModel], *, unseen: bool = False,
        reference: Sequence[ReferenceRow] = (), bench_reference: bool = True,
        probes: int = 3, errors: list[float] | None = None) -> dict[str, float]:
    """The ``advisor model evaluate`` protocol in process (K = ``probes``, R = 10, seed 0);
    ``errors``, when given, receives each prediction's error in the seed's order."""
    specs = load_accelerators()
    result = evaluate(read_bench(path, specs), accelerators=specs, model_factory=factory,
                      probes=probes, reference=reference, bench_reference=bench_reference,
                      unseen_target=unseen)
    if errors is not None:
        errors.extend(p.ape for p in result.predictions)
    return dict(result.to_dict())  # type: ignore[arg-type]


def transfer_model(weights: Weights, *, calibrate: bool = False,
                   random_state: int = 0) -> TransferModel:
    """TransferModel with (factor_weight, factor_weight_unseen, krige_weight,
    spec_prior_weight, time_fit_weight) and twin_shrinkage TWIN_SHRINKAGE."""
    return TransferModel(calibrate=calibrate, random_state=random_state,
                         factor_weight=weights[0], factor_weight_unseen=weights[1],
                         krige_weight=weights[2], spec_prior_weight=weights[3],
                         time_fit_weight=weights[4],
                         twin_shrinkage=TWIN_SHRINKAGE)


def transfer(weights: Weights, *, calibrate: bool = False) -> Callable[[], ThroughputModel]:
    """Factory of ``transfer_model``."""
    return lambda: transfer_model(weights, calibrate=calibrate)


# case, factor weight, krige (seen) or spec prior (unseen) weight, time fit weight (unseen)
Cell = tuple[str, float, float, float]


class Grid:
    """Memoised ``run`` results per generation and (case, weight, twin_shrinkage)."""

    def __init__(self, paths: dict[str, Path]) -> None:
        self.paths = paths
        self.cells: dict[str, dict[Cell, dict[str, float]]] = {g: {} for g in paths}

    def get(self, generation: str, case: str, weight: float, view: float,
            time_fit: float | None = None) -> dict[str, float]:
        """Seen: (factor_weight, krige_weight); unseen: (factor_weight_unseen,
        spec_prior_weight, time_fit_weight); the other case's weights keep the library
        defaults (with an unseen target the other priced accelerators, predicted for the
        regret, are seen ones)."""
        d = TransferModel()
        time_fit = d.time_fit_weight if time_fit is None else time_fit
        key = (case, weight, view, time_fit)
        if key not in self.cells[generation]:
            weights = ((weight, d.factor_weight_unseen, view, d.spec_prior_weight, time_fit)
                       if case == "seen"
                       else (d.factor_weight, weight, d.krige_weight, view, time_fit))
            self.cells[generation][key] = run(self.paths[generation], transfer(weights),
                                              unseen=case == "unseen")
            print(generation, key, round(self.cells[generation][key]["mape"], 2), flush=True)
        return self.cells[generation][key]

    def tuned(self, generation: str) -> Weights:
        """The blend weights with the lowest MAPE on ``generation``, seen and unseen apart."""
        weight, krige = min(SEEN_GRID, key=lambda c: self.get(generation, "seen", *c)["mape"])
        unseen, spec, time_fit = min(UNSEEN_GRID,
                                     key=lambda c: self.get(generation, "unseen", *c)["mape"])
        return weight, unseen, krige, spec, time_fit


def simulate_planner(path: Path, weights: Weights, seed: int = 0,
                     ) -> dict[str, float]:
    """Per workload: one probe on the cheapest priced accelerator, then planned probes one
    at a time (each re-predicts with all probes so far) until no probe is expected to cut
    regret by 1%; pick the best samples/$ (measured where probed)."""
    specs = load_accelerators()
    rows = read_bench(path, specs)
    rng = random.Random(seed)
    regrets, spends, counts = [], [], []
    for workload in sorted({r.workload for r in rows}):
        mine = {r.accelerator: r for r in rows if r.workload == workload and r.price_usd_per_hour}
        others = [r for r in load_reference() if r.generation == path.stem
                  and f"{r.model}/{r.precision}" != workload]
        model = transfer_model(weights, calibrate=True,
                               random_state=rng.randrange(1 << 30)).fit(others, accelerators=specs)
        probed = [min(mine, key=lambda a: mine[a].price_usd_per_hour or 0.0)]
        features = WorkloadFeatures(precision=None, name=workload)
        while True:
            shots = [Measurement(a, mine[a].samples_per_second) for a in probed]
            candidates = []
            for name, row in mine.items():
                est = model.estimate(features, specs[name], measurements=shots)
                sigma = (0.02 if name in probed else
                         math.log(est.samples_per_second_high / est.samples_per_second_low) / 3.29)
                candidates.append(Candidate(name, est.samples_per_second / (row.price_usd_per_hour or 1),
                                            sigma, name, row.price_usd_per_hour or 1))
            nxt = [s for s in plan(candidates, 1, probe_minutes=PROBE_MINUTES)
                   if s.expected_regret_cut_pct >= 1.0 and s.accelerator not in probed]
            if not nxt:
                break
            probed.append(nxt[0].accelerator)
        pick = max(candidates, key=lambda c: c.samples_per_dollar).accelerator
        value = {a: r.samples_per_second / (r.price_usd_per_hour or 1) for a, r in mine.items()}
        regrets.append(1 - value[pick] / max(value.values()))
        spends.append(sum(mine[a].price_usd_per_hour or 0 for a in probed)
                      / sum(r.price_usd_per_hour or 0 for r in mine.values()))
        counts.append(len(probed))
    return {"workloads": len(regrets), "mean_regret_pct": 100 * statistics.mean(regrets),
            "within_5pct": 100 * sum(r <= 0.05 for r in regrets) / len(regrets),
            "mean_spend_pct": 100 * statistics.mean(spends),
            "max_spend_pct": 100 * max(spends), "mean_probes": statistics.mean(counts)}


def _row(*cells: object) -> str:
    return "| " + " | ".join(f"{c:.1f}" if isinstance(c, float) else str(c) for c in cells) + " |"


def _metrics(r: dict[str, float]) -> tuple[object, ...]:
    return (int(r["n"]), r["mape"], r["median_ape"], r["top1_pct"], r["mean_regret_pct"])


def main() -> None:
    """Run everything, print the tables and write them to benchmarks/results/throughput.md."""
    prices, source = price_table()
    main_rows, tuned, extra_rows, sims = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {g: write_bench(Path(tmp), g, prices) for g in GENERATIONS}
        grid = Grid(paths)
        for generation, path in paths.items():
            other = GENERATIONS[1 - GENERATIONS.index(generation)]
            weights = grid.tuned(other)
            tuned.append((generation, other, weights))
            seen = run(path, transfer(weights, calibrate=True))
            unseen = run(path, transfer(weights, calibrate=True), unseen=True)
            main_rows += [
                _row(generation, "transfer model", "seen", *_metrics(seen),
                     f"{seen['coverage_pct']:.0f}"),
                _row(generation, "transfer model", "unseen", *_metrics(unseen),
                     f"{unseen['coverage_pct']:.0f}"),
                *[_row(generation, name, case, *_metrics(run(path, baseline,
                                                             unseen=case == "unseen")), "-")
                  for name, baseline in BASELINES for case in ("seen", "unseen")]]
            print(*main_rows[-6:], sep="\n", flush=True)
            others = [r for r in load_reference() if r.generation == other]
            extra_rows += [
                _row(generation, f"{other} only", "seen",
                     *_metrics(run(path, transfer(weights), reference=others,
                                   bench_reference=False))),
                _row(generation, f"bench + shipped minus {generation}", "seen",
                     *_metrics(run(path, transfer(weights), reference=others))),
                _row(generation, f"bench + shipped minus {generation}", "unseen",
                     *_metrics(run(path, transfer(weights), reference=others, unseen=True)))]
            opaque = write_bench(Path(tmp), generation, prices, opaque=True)
            extra_rows += [_row(generation, "bench, names without precision (no twin)", case,
                                *_metrics(run(opaque, transfer(weights), unseen=case == "unseen")))
                           for case in ("seen", "unseen")]
            print(*extra_rows[-5:], sep="\n", flush=True)
            sims.append((generation, simulate_planner(path, weights)))
        cli = run_cli(paths["lambda_v1"])
    lines = ["# Throughput model: accuracy and ranking on the shipped Lambda data", "",
             "`python benchmarks/bench_throughput.py`; `advisor model evaluate` protocol with "
             "K = 3 probes, R = 10 seeded probe sets per (workload, target), seed 0; workload = "
             "model/precision; single-GPU rows of accelerators in the spec table; "
             "leave-one-workload-out inside one software generation (`--reference none`).", "",
             "Hyper-parameters: the blend weights (factor_weight and krige_weight for seen "
             "targets, factor_weight_unseen, spec_prior_weight and time_fit_weight for unseen "
             "ones) are chosen on "
             "the *other* generation (grid below) and reported on this one; twin_shrinkage "
             f"{TWIN_SHRINKAGE} was chosen the same way by the previous version of this grid; "
             "every other hyper-parameter keeps the default set before this benchmark was run "
             "(rank 2, factor_alpha 0.1, factor_shrinkage 0.3, spec_alpha 1.0, the kriging "
             "nugget 0.003 and the spec prior's ridge 0.3 / noise 0.01 were picked by looking at "
             "both generations' MAPE for a handful of settings, so they are not held out; see "
             "the notes).", "",
             "| generation | model | target | n | MAPE % | median APE % | top-1 % | "
             "mean regret % | 90% interval coverage % |", "|---|---|---|---|---|---|---|---|---|",
             *main_rows, "",
             "Coverage: calibrated model (residual quantiles measured inside `fit` on the "
             "reference part only; for unseen targets one calibrated fit per target, with the "
             "target's rows removed before the fit).", "",
             "## Blend weights chosen on one generation, used on the other", "",
             "| reported on | tuned on | factor_weight | factor_weight_unseen | krige_weight | "
             "spec_prior_weight | time_fit_weight |", "|---|---|---|---|---|---|---|",
             *[_row(g, o, *(f"{x:g}" for x in w)) for g, o, w in tuned], "",
             "Grid (MAPE %, full model; seen: factor_weight, krige_weight; unseen: "
             "factor_weight_unseen, spec_prior_weight, time_fit_weight; a view's weight 0 = "
             "without it):", "",
             "| generation | case | factor weight | view weight | time fit weight | MAPE % | "
             "mean regret % |", "|---|---|---|---|---|---|---|",
             *[_row(g, case, f"{w:g}", f"{v:g}", f"{t:g}" if case == "unseen" else "-",
                    r["mape"], r["mean_regret_pct"])
               for g, cells in grid.cells.items() for (case, w, v, t), r in sorted(cells.items())],
             "",
             "## Other references (transfer model, weights as above)", "",
             "| evaluated on | reference | target | n | MAPE % | median APE % | top-1 % | "
             "mean regret % |", "|---|---|---|---|---|---|---|---|", *extra_rows, "",
             "`X only` = cross-generation (the other generation's shipped rows, none of the "
             "benchmark's). `bench + shipped minus G` = `--reference shipped` with the evaluated "
             "generation's shipped rows removed (otherwise the target row itself would leak). "
             "`names without precision` = the same BENCH.csv with workloads named "
             "`model-precision`: no workload can be linked to its precision twin, which is the "
             "case of a user's own model.", "",
             f"CLI check, default hyper-parameters: `advisor model evaluate lambda_v1.csv "
             f"--probes 3 --reference none --json` -> {json.dumps(cli)}", ""]
    lines += ["## Planner simulation", "",
              "One probe on the cheapest accelerator, then planned probes until none is "
              f"expected to cut regret by 1%; {PROBE_MINUTES:.0f}-minute probes; spend relative "
              "to probing every priced accelerator of the workload.", "",
              "| generation | workloads | mean probes | pick within 5% of best % | mean regret % "
              "| mean spend % | max spend % |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {g} | {s['workloads']} | {s['mean_probes']:.1f} | {s['within_5pct']:.0f} | "
              f"{s['mean_regret_pct']:.1f} | {s['mean_spend_pct']:.1f} | {s['max_spend_pct']:.1f} |"
              for g, s in sims]
    lines += ["", "## Prices used (USD per device-hour)", "",
              "catalog = median on-demand price per device-hour over unflagged offers; "
              f"hardware = {HW_MARKUP} x Lambda system price per GPU / 8760 h.", "",
              "| accelerator | $/h | source |", "|---|---|---|"]
    lines += [f"| {a} | {prices[a]:.2f} | {source[a]} |" for a in sorted(prices)]
    lines += ["", NOTES_FILE.read_text() if NOTES_FILE.exists() else ""]
    write_result("throughput", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
