"""CSV of a recommendation: one row per offer, ranked first, then rejected with the reason."""

from __future__ import annotations

import csv
from pathlib import Path

from advisor.ranking import Recommendation
from advisor.serialize import estimate_row, rejection_row

__all__ = ["COLUMNS", "write_recommendation_csv"]

COLUMNS = [
    "rank", "status", "offer", "cloud", "region", "instance_type", "accelerator",
    "accelerator_count", "market", "price_usd_per_hour", "samples_per_second",
    "samples_per_second_low", "samples_per_second_high", "samples_per_dollar", "run_hours",
    "run_cost_usd", "memory_needed_gib_per_device", "accelerator_memory_gib", "basis",
    "price_observed_at", "price_source", "prices_captured_at", "reason",
]


def write_recommendation_csv(rec: Recommendation, path: Path) -> None:
    """Write every ranked offer (status ``ranked``) and rejected offer (``rejected``)."""
    captured = rec.prices_captured_at.isoformat()
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n",
                                extrasaction="ignore")
        writer.writeheader()
        for i, est in enumerate(rec.ranked, start=1):
            writer.writerow({"rank": i, "status": "ranked", "prices_captured_at": captured,
                             **estimate_row(est)})
        for rej in rec.rejected:
            writer.writerow({"status": "rejected", "prices_captured_at": captured,
                             **rejection_row(rej)})
