"""How the throughput model's accuracy grows with the number of probes.

The ``advisor model evaluate`` protocol of ``bench_throughput.py`` (shipped Lambda data,
leave-one-workload-out inside one software generation, R = 10, seed 0, library default
hyper-parameters) for K = 1, 2, 3, 5, 8 and 11 probes. K = 11 probes every other accelerator
of a workload but one (12 or 13 are measured per workload; targets with fewer than K others
are skipped), so its row is what the model does with nearly all of a workload's own
measurements, still held out (no fit to the evaluated workload).

Run: python benchmarks/bench_probe_count.py   (writes benchmarks/results/probe_count.md)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_table  # noqa: E402
from bench_throughput import GENERATIONS, price_table, run, write_bench  # noqa: E402

from advisor.throughput import (
    MedianRatioModel,
    TransferModel,
)

PROBE_COUNTS = (1, 2, 3, 5, 8, 11)


def uncalibrated() -> TransferModel:
    """Library defaults without the interval calibration (same predictions, faster fits)."""
    return TransferModel(calibrate=False)


def main() -> None:
    """Print the table and write it to benchmarks/results/probe_count.md."""
    prices, _ = price_table()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for generation in GENERATIONS:
            path = write_bench(Path(tmp), generation, prices)
            for k in PROBE_COUNTS:
                cases = (("transfer model", "seen", uncalibrated, False),
                         ("transfer model", "unseen", uncalibrated, True),
                         ("median-ratio", "seen", MedianRatioModel, False))
                for model, case, factory, unseen in cases:
                    r = run(path, factory, unseen=unseen, probes=k)
                    rows.append([generation, str(k), model, case, str(int(r["n"])),
                                 f"{r['mape']:.1f}", f"{r['median_ape']:.1f}",
                                 f"{r['top1_pct']:.1f}", f"{r['mean_regret_pct']:.1f}"])
                    print(" | ".join(rows[-1]), flush=True)
    write_table("probe_count", "Throughput model accuracy against the number of probes",
                ["generation", "probes K", "model", "target", "n", "MAPE %", "median APE %",
                 "top-1 %", "mean regret %"], rows,
                ["`python benchmarks/bench_probe_count.py`: the `advisor model evaluate` "
                 "protocol (R = 10, seed 0, `--reference none`, leave-one-workload-out inside "
                 "the generation) on the BENCH.csv files and prices of `bench_throughput.py`, "
                 "library default hyper-parameters.",
                 "K = 11 leaves one accelerator of the workload unprobed: the error there is "
                 "what remains with nearly all of the workload's own measurements. A K = 3 "
                 "target near that row asks three random probes to carry about what eleven "
                 "do."])


if __name__ == "__main__":
    main()
