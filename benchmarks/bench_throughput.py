"""Accuracy of the throughput model and the probe planner on the shipped Lambda data.

Builds one BENCH.csv per software generation (lambda_v0, lambda_v1) from the single-GPU rows
of ``advisor/data/reference_throughput.csv`` (accelerators with a spec in the catalog; a
workload is model/precision), runs ``advisor model evaluate --probes 3 --reference none``
on each (leave-one-workload-out inside the generation), with and without
``--unseen-target``, for the transfer model and the median-ratio baseline; then
cross-generation (reference = the other generation only) and a planner simulation.

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
from pathlib import Path

from advisor.evaluate import evaluate, read_bench
from advisor.planner import Candidate, plan
from advisor.reference import load_reference
from advisor.throughput import Measurement, WorkloadFeatures
from advisor.transfer import TransferModel
from pricing import Market, load_accelerators, shipped_catalog

LAMBDA_CSV = Path("/work/shared/data/benchmarks/lambda_train_throughput.csv")
RESULT = Path(__file__).parent / "results" / "throughput.md"
GENERATIONS = ("lambda_v0", "lambda_v1")
PROBE_MINUTES = 10.0
HW_MARKUP = 2.5


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


def write_bench(folder: Path, generation: str, prices: dict[str, float]) -> Path:
    """BENCH.csv of one generation's single-GPU rows."""
    specs = load_accelerators()
    path = folder / f"{generation}.csv"
    with path.open("w", newline="") as handle:
        out = csv.writer(handle)
        out.writerow(["workload", "accelerator", "throughput_samples_per_s", "price_usd_per_hour"])
        for r in load_reference():
            if r.generation == generation and r.accelerator_count == 1 and r.accelerator in specs:
                price = prices.get(r.accelerator)
                out.writerow([f"{r.model}/{r.precision}", r.accelerator, r.samples_per_second,
                              f"{price:.4f}" if price else ""])
    return path


def run_cli(path: Path, *extra: str) -> dict[str, float]:
    """``advisor model evaluate PATH --probes 3 --reference none --json EXTRA``."""
    command = [sys.executable, "-m", "cli", "model", "evaluate", str(path), "--probes", "3",
               "--reference", "none", "--json", *extra]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout))


def cross_generation(path: Path, other: str) -> dict[str, float]:
    """Reference = the other generation only (same public models, other software)."""
    specs = load_accelerators()
    reference = [r for r in load_reference() if r.generation == other]
    result = evaluate(read_bench(path, specs), accelerators=specs,
                      model_factory=lambda: TransferModel(calibrate=False), probes=3,
                      reference=reference, bench_reference=False)
    return dict(result.to_dict())  # type: ignore[arg-type]


def simulate_planner(path: Path, seed: int = 0) -> dict[str, float]:
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
        model = TransferModel(random_state=rng.randrange(1 << 30)).fit(others, specs)
        probed = [min(mine, key=lambda a: mine[a].price_usd_per_hour or 0.0)]
        features = WorkloadFeatures(precision=None, name=workload)
        while True:
            shots = [Measurement(a, mine[a].samples_per_second) for a in probed]
            candidates = []
            for name, row in mine.items():
                est = model.predict(features, specs[name], measurements=shots)
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


def main() -> None:
    """Run everything, print the tables and write them to benchmarks/results/throughput.md."""
    prices, source = price_table()
    lines = ["# Throughput model: accuracy and ranking on the shipped Lambda data", "",
             "`python benchmarks/bench_throughput.py`; K = 3 probes, 10 seeded probe sets per "
             "(workload, target), workload = model/precision, single-GPU rows, "
             "leave-one-workload-out inside one software generation (`--reference none`).", "",
             "| generation | model | target | n | MAPE % | median APE % | top-1 % | mean regret % |",
             "|---|---|---|---|---|---|---|---|"]
    cross, sims = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for generation in GENERATIONS:
            path = write_bench(Path(tmp), generation, prices)
            for model in ("transfer", "median-ratio"):
                for unseen in (False, True):
                    extra = ["--model", model] + (["--unseen-target"] if unseen else [])
                    r = run_cli(path, *extra)
                    lines.append(f"| {generation} | {model} | {'unseen' if unseen else 'seen'} | "
                                 f"{r['n']} | {r['mape']:.1f} | {r['median_ape']:.1f} | "
                                 f"{r['top1_pct']:.1f} | {r['mean_regret_pct']:.1f} |")
                    print(lines[-1], flush=True)
            other = GENERATIONS[1 - GENERATIONS.index(generation)]
            cross.append((generation, other, cross_generation(path, other)))
            sims.append((generation, simulate_planner(path)))
    lines += ["", "## Cross-generation (reference = the other generation only, transfer model)",
              "", "| evaluated on | reference | n | MAPE % | median APE % | top-1 % | "
              "mean regret % |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {g} | {o} | {r['n']} | {r['mape']:.1f} | {r['median_ape']:.1f} | "
              f"{r['top1_pct']:.1f} | {r['mean_regret_pct']:.1f} |" for g, o, r in cross]
    lines += ["", "## Planner simulation", "",
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
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(text)


if __name__ == "__main__":
    main()
