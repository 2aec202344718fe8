"""CSV of a recommendation: one row per offer, ranked first, then rejected with the reason.

Prices are the ones the ranking used (``price_usd_per_hour`` with its ``price_observed_at``
date and ``price_source``), never re-priced; ``prices_captured_at`` is the catalog snapshot's
capture date. Columns and units are documented in :data:`COLUMN_DOCS`, written beside the CSV
as ``<name>.columns.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from advisor.ranking import Recommendation, estimate_rows, rejection_rows
from reports.baseline import Savings
from reports.columns import column_table, write_csv

__all__ = ["COLUMNS", "COLUMN_DOCS", "recommendation_rows", "write_recommendation_csv"]

COLUMN_DOCS = column_table("""
rank                         |                   | place in the ranking's order (1 = first); empty for
                                                   rejected offers. The order is `rank_by`'s: by default
                                                   the highest `samples_per_dollar_low` (the low end of
                                                   the range) first, with `--rank-by estimate` the
                                                   highest `samples_per_dollar`; ties by
                                                   `samples_per_dollar`, then `offer`
status                       |                   | `ranked` (meets every constraint) or `rejected` (see
                                                   `reason`)
offer                        |                   | offer key `cloud:instance_type:region:market`
cloud                        |                   | aws, gcp or azure
region                       |                   | cloud region
instance_type                |                   | the cloud's instance type name
accelerator                  |                   | accelerator model (catalog name)
accelerator_count            | devices           | accelerators per instance
market                       |                   | `on-demand` or `spot`
price_usd_per_hour           | USD/hour          | instance price the ranking used, as observed on
                                                   `price_observed_at` (not re-priced later)
samples_per_second           | samples/s         | training throughput estimate, whole instance
samples_per_second_low       | samples/s         | low end of the throughput interval
samples_per_second_high      | samples/s         | high end of the throughput interval
samples_per_dollar           | samples/USD       | samples_per_second x 3600 / price_usd_per_hour, on spot
                                                   divided by 1 + spot_overhead_fraction
samples_per_dollar_low       | samples/USD       | the same at samples_per_second_low and, on spot, the
                                                   pessimistic overhead spot_overhead_fraction_high (the
                                                   conservative figure the ranking orders by)
samples_per_dollar_high      | samples/USD       | the same at samples_per_second_high and, on spot, the
                                                   band's low overhead
rank_by                      |                   | what orders `rank`: `conservative`
                                                   (`samples_per_dollar_low`) or `estimate`
                                                   (`samples_per_dollar`); empty for rejected offers
run_hours                    | hours             | whole training run, with start-up and spot restart
                                                   overhead; on a rejected row, the figure its reason
                                                   quotes (over the deadline), else empty
run_hours_low                | hours             | the run at the high end of the throughput interval
                                                   and, on spot, the band's low overhead (the fast end)
run_hours_high               | hours             | the run at samples_per_second_low and, on spot,
                                                   spot_overhead_fraction_high (the slow end); empty if
                                                   the run would never finish
run_cost_usd                 | USD               | run_hours x price_usd_per_hour; on a rejected row, the
                                                   figure its reason quotes (over the budget), else empty
run_cost_usd_low             | USD               | run_hours_low x price_usd_per_hour (the headline's
                                                   cheap end)
run_cost_usd_high            | USD               | run_hours_high x price_usd_per_hour (the headline's
                                                   dear end); empty if the run would never finish
on_demand_price_usd_per_hour | USD/hour          | on-demand price of the same instance (cloud, type,
                                                   region); empty for a spot offer whose instance the
                                                   ranking has no on-demand offer of
spot_interruption_band       |                   | spot: the instance type's monthly interruption band
                                                   (e.g. `5-10%/month`, AWS Spot Advisor), as the table
                                                   shows it beside `spot`
spot_band_basis              |                   | spot: `published`, or `assumed` where none is
                                                   published and the top band is taken (the table's `?`)
spot_overhead_fraction       | fraction          | spot: expected extra run time lost to interruptions
                                                   (hours per hour of uninterrupted training)
spot_overhead_fraction_high  | fraction          | spot: the pessimistic end (the band's top, or a
                                                   measured GPU preemption rate where the band is open or
                                                   unpublished); empty if the run would never finish
memory_needed_gib_per_device | GiB               | predicted peak memory per device
accelerator_memory_gib       | GiB               | memory of one device
basis                        |                   | where samples_per_second comes from: `measured` (probe of
                                                   this workload), `tuned` (probe of this workload in the
                                                   best configuration `advisor probe --tune` measured,
                                                   with `recommend --tuned`), `predicted` (model fitted on
                                                   reference data) or `prior` (accelerator without
                                                   reference data; wider interval)
price_observed_at            | date (YYYY-MM-DD) | when the price was observed
price_source                 |                   | where the price came from (catalog file or price API)
prices_captured_at           | date (YYYY-MM-DD) | capture date of the price snapshot (oldest capture among
                                                   the clouds used)
reason                       |                   | why a rejected offer was left out
reason_kind                  |                   | the rule it failed, one word per kind (`budget`,
                                                   `deadline`, `memory`, `region`, ...), as `--json` names it
saved_vs_baseline_usd        | USD               | top pick only (with a baseline): what it saves on the
                                                   run against the baseline, like for like unless
                                                   compare_market is `any` (the report's headline figure)
saved_vs_baseline_usd_low    | USD               | low end of that saving (both throughput intervals)
saved_vs_baseline_usd_high   | USD               | high end of that saving; never more than the baseline's
                                                   run cost
spot_discount_saved_usd      | USD               | the spot discount's share, apart from the saving (empty
                                                   when pick and baseline are in one market)
baseline_offer               |                   | the offer the saving is measured against
compare_market               |                   | `same` (both sides on demand where one is spot) or `any`
""", decimals=6)  # every figure to 6 decimals, so the file reads well and diffs stay stable

COLUMNS = [c.name for c in COLUMN_DOCS]

_INTRO = ("One row per offer of an `advisor recommend` ranking: ranked offers first, in the "
          "ranking's order (`rank`, ordered as `rank_by` says), then rejected ones with the "
          "reason. Numbers are plain decimals (dot separator, no thousands separator, no "
          "exponent); empty cells mean not applicable.")

# The figures a rejection's reason quotes that are also columns (deadline: hours, budget: cost).
_QUOTED_FIGURES = ("run_hours", "run_cost_usd")


def _saving_cells(saved: Savings | None) -> dict[str, Any]:
    """The top pick's saving against the baseline, as the report states it (no baseline: none)."""
    if saved is None:
        return {}
    return {"saved_vs_baseline_usd": saved.run_saved_usd,
            "saved_vs_baseline_usd_low": saved.run_saved_usd_low,
            "saved_vs_baseline_usd_high": saved.run_saved_usd_high,
            "spot_discount_saved_usd": saved.spot_discount_usd,
            "baseline_offer": saved.baseline.offer.key,
            "compare_market": str(saved.compare_market)}


def recommendation_rows(rec: Recommendation, *,
                        saved: Savings | None = None) -> Iterator[dict[str, Any]]:
    """The CSV rows as dicts keyed by :data:`COLUMNS` (missing keys are empty cells; figures
    unrounded: the writer rounds them as :data:`COLUMN_DOCS` says), made one at a time as they
    are written; the top pick's row carries ``saved`` (its saving against the
    report's baseline) when given."""
    captured = rec.prices_captured_at.isoformat()
    rank_by = str(rec.rank_by)
    for i, estimate in enumerate(estimate_rows(rec.ranked), start=1):
        row = {"rank": i, "rank_by": rank_by, "status": "ranked", "prices_captured_at": captured,
               **estimate}
        yield {**row, **_saving_cells(saved)} if i == 1 else row
    for rejected in rejection_rows(rec.rejected, offer_cells=True):
        figures = rejected["figures"]
        yield {
            "status": "rejected", "prices_captured_at": captured, **rejected,
            **{key: figures[key] for key in _QUOTED_FIGURES if key in figures},
        }


def write_recommendation_csv(rec: Recommendation, path: Path, *,
                             saved: Savings | None = None) -> list[Path]:
    """Write every ranked offer (status ``ranked``) and rejected offer (``rejected``); the top
    pick's row carries ``saved`` when given.

    Also writes ``<name>.columns.md`` beside it; returns both paths (CSV first).
    """
    return write_csv(path, COLUMN_DOCS, recommendation_rows(rec, saved=saved), intro=_INTRO,
                     ignore_extra=True)
