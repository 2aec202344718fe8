"""Load and query time of the full price catalog (targets: load < 200 ms, query < 20 ms).

Run: ``python benchmarks/bench_catalog.py``. Prints a table and writes
benchmarks/results/catalog.md. "Load" reads the shipped CSVs plus one refreshed snapshot
per cloud (a temp directory holding copies of the shipped rows), uncached, as a fresh
process would; "query" is one filtered query over all offers.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_result  # noqa: E402

from pricing import Cloud, Market, load_accelerators, load_catalog, shipped_catalog
from pricing.snapshots import current_catalog, write_snapshot


def _time_ms(func: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples), max(samples)


def main() -> None:
    """Time the loads and queries, print and write the table."""
    shipped = shipped_catalog()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        snapshots = Path(tmp)
        for cloud in Cloud:
            offers = [o for o in shipped.offers if o.cloud is cloud]
            write_snapshot(snapshots, cloud, offers, captured_at=datetime.now(UTC))

        def cold_load() -> object:
            load_accelerators.cache_clear()
            return load_catalog()

        def snapshot_load() -> object:
            load_accelerators.cache_clear()
            return current_catalog(snapshots)

        catalog = current_catalog(snapshots)

        def query() -> object:
            return catalog.query(clouds=[Cloud.AWS, Cloud.GCP], accelerators=["h100", "a100", "tpu-v5e"],
                                 markets=[Market.ON_DEMAND, Market.SPOT],
                                 regions=["us-east-1", "us-central1", "us-west-2", "europe-west4"])

        def query_all() -> object:
            return catalog.query()

        for name, func, target, repeat in [
            ("load shipped catalog (cold)", cold_load, 200.0, 20),
            ("load newest snapshots, all clouds (cold)", snapshot_load, 200.0, 20),
            ("filtered query (clouds, accelerators, markets, regions)", query, 20.0, 200),
            ("unfiltered query (all offers)", query_all, 20.0, 200),
        ]:
            median, worst = _time_ms(func, repeat)
            rows.append((name, median, worst, target))
    lines = [
        f"# Catalog benchmark ({len(catalog.offers)} offers, {datetime.now(UTC):%Y-%m-%d})",
        "",
        "| operation | median ms | max ms | target ms | ok |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    lines += [f"| {n} | {m:.2f} | {w:.2f} | {t:.0f} | {'yes' if m < t else 'NO'} |"
              for n, m, w, t in rows]
    write_result("catalog", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
