"""How long the reports take: 5,000-offer recommendation and 2,000-trial sweep, HTML + CSV.

Run: ``python benchmarks/bench_reports.py``. Inputs are synthetic (seeded), built the way the
ranking and the sweep status build them. Also times headless Chromium opening the HTML
(network blocked) when chromium is installed.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _table import write_table  # noqa: E402

from advisor.ranking import CostEstimate, Recommendation, Rejection, RejectionKind  # noqa: E402
from advisor.sweep import SweepStatus as SweepReportData  # noqa: E402
from advisor.sweep import TrialCost  # noqa: E402
from advisor.throughput import Basis, ThroughputEstimate  # noqa: E402
from pricing import Cloud, InstanceOffer, Market  # noqa: E402
from reports.pdf import OFFLINE_FLAGS, find_chromium  # noqa: E402
from reports.recommendation import write_recommendation_report  # noqa: E402
from reports.sweep import write_sweep_report  # noqa: E402

ACCELERATORS = [("A100-40GB-SXM", 40.0, 4.1), ("H100-SXM", 80.0, 9.8), ("A10G", 24.0, 1.0),
                ("T4", 16.0, 0.53), ("L4", 24.0, 0.8), ("V100-16GB-SXM2", 16.0, 3.06)]


def synthetic_recommendation(n_offers: int, rng: random.Random) -> Recommendation:
    """``n_offers`` offers, 80% ranked (mixed basis), 20% rejected with varied reasons."""
    ranked, rejected = [], []
    for i in range(n_offers):
        name, mem, price1 = rng.choice(ACCELERATORS)
        count = rng.choice([1, 2, 4, 8])
        market = rng.choice(list(Market))
        price = price1 * count * (0.35 if market is Market.SPOT else 1.0) * rng.uniform(0.8, 1.3)
        offer = InstanceOffer(
            cloud=rng.choice(list(Cloud)), region=f"region-{i % 40}", zone=None,
            instance_type=f"type{i}.{count}x", accelerator=name, accelerator_count=count,
            vcpus=8 * count, memory_gib=64.0 * count, accelerator_memory_gib=mem, market=market,
            price_usd_per_hour=round(price, 4), source="synthetic", observed_at=date(2025, 3, 1))
        if i % 5 == 0:
            rejected.append(rng.choice([
                Rejection(offer, RejectionKind.MEMORY, {
                    "needed_gib": mem + 3, "batch": 64, "basis": "traced step",
                    "step_gib": mem + 2, "overhead_gib": 1.0, "runtime": "CUDA runtime",
                    "memory_gib": mem, "short_gib": 3.0}),
                Rejection(offer, RejectionKind.REGION),
                Rejection(offer, RejectionKind.BUDGET, {"run_cost_usd": price * 900,
                                                        "budget_usd": 3000, "spot": ""})]))
            continue
        sps = price1 * 300 * count * rng.uniform(0.7, 1.3)
        hours = 1e8 / sps / 3600 + 0.25
        price = offer.price_usd_per_hour
        ranked.append(CostEstimate(
            offer, ThroughputEstimate(sps, sps * 0.7, sps * 1.4, rng.choice(list(Basis))),
            sps * 3600 / price, hours, hours * price, 12.0,
            run_cost_usd_low=(1e8 / (sps * 1.4) / 3600 + 0.25) * price,
            run_cost_usd_high=(1e8 / (sps * 0.7) / 3600 + 0.25) * price))
    ranked.sort(key=lambda e: (-e.samples_per_dollar, e.offer.key))
    return Recommendation("synthetic", date(2025, 3, 1), tuple(ranked), tuple(rejected),
                          assumptions=("synthetic inputs",), advice=("none",))


def synthetic_sweep(n_trials: int, rng: random.Random) -> SweepReportData:
    """``n_trials`` trials: 50% complete, 40% pruned, 10% failed; 4 at a time."""
    origin = datetime(2025, 3, 1, tzinfo=UTC)
    trials = []
    for i in range(n_trials):
        state = rng.choices(["complete", "pruned", "fail"], [5, 4, 1])[0]
        minutes = {"complete": 30.0, "pruned": 8.0, "fail": 2.0}[state] * rng.uniform(0.8, 1.2)
        start = origin + timedelta(minutes=i * 5)
        value = rng.uniform(0.2, 1.0) if state != "fail" else None
        trials.append(TrialCost(
            i, state, value, minutes / 60 * 1.006, start, start + timedelta(minutes=minutes),
            minutes * 60, 1.006, 10 if state == "complete" else 3, state == "pruned",
            {"lr": rng.uniform(1e-4, 1e-1), "batch_size": rng.choice([64, 128, 256])}))
    return SweepReportData("synthetic", "minimize", "aws:g5.xlarge:us-east-1:on-demand", 1.006,
                           tuple(trials), budget_usd=1000.0, saved_by_pruning_usd=123.0,
                           bytes_cleaned=10**10)


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _chromium_s(html: Path, work: Path) -> str:
    binary = find_chromium()
    if binary is None:
        return "no chromium"
    start = time.perf_counter()
    subprocess.run([binary, *OFFLINE_FLAGS, f"--user-data-dir={work / 'profile'}",
                    "--window-size=1280,2000", f"--screenshot={work / 'shot.png'}",
                    html.resolve().as_uri()], capture_output=True, timeout=120, check=True)
    return f"{time.perf_counter() - start:.2f}"


def _measure(label: str, write: Callable[[Path], object], out: Path, html: str,
             work: Path) -> list[str]:
    """One table row: best of three ``write(out)``, the HTML's size, Chromium's time on it."""
    seconds = min(_timed(lambda: write(out)) for _ in range(3))
    size = (out / html).stat().st_size
    return [label, f"{seconds:.2f}", f"{size / 1e6:.1f}", _chromium_s(out / html, work)]


def main() -> None:
    """Time both reports at the issue's sizes and at a small size; write the table."""
    rng = random.Random(7)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for n in (500, 5000):
            rec = synthetic_recommendation(n, rng)
            rows.append(_measure(f"recommendation, {n:,} offers",
                                 partial(write_recommendation_report, rec),
                                 work / f"rec{n}", "recommendation.html", work))
        for n in (200, 2000):
            data = synthetic_sweep(n, rng)
            rows.append(_measure(f"sweep, {n:,} trials",
                                 partial(write_sweep_report, data),
                                 work / f"sweep{n}", "sweep.html", work))
    write_table("reports", "Report rendering time",
                ["report", "HTML + CSV written (s, best of 3)", "HTML size (MB)",
                 "headless Chromium open + screenshot (s)"], rows,
                ["target: under 5 s for 5,000 offers or 2,000 trials",
                 "synthetic seeded inputs; the machine is shared (2 cores, other jobs running)"])


if __name__ == "__main__":
    main()
