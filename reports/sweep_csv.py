"""CSV of a sweep: one row per trial with its state, objective and dollars.

Each trial's dollars are what it cost at the price recorded when it ran
(``price_usd_per_hour``), never re-priced. Columns and units are in :data:`COLUMN_DOCS`,
written beside the CSV as ``<name>.columns.md``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.sweep import SweepStatus, TrialCost
from reports.columns import column_table, write_csv

__all__ = ["COLUMNS", "COLUMN_DOCS", "sweep_rows", "write_sweep_csv"]

COLUMN_DOCS = column_table("""
study              |                   | Optuna study name
trial              |                   | trial number (0-based, in start order)
state              |                   | `complete`, `pruned`, `fail`, `running` or `waiting`
objective_value    | objective's unit  | final objective of a completed trial; last reported intermediate
                                         value of a pruned one; empty otherwise
value_kind         |                   | `final`, `last_intermediate` or empty
is_best            |                   | `true` for the best completed trial
cost_usd           | USD               | what the trial cost: wall time x price / trials sharing the
                                         instance; a running trial counts its time so far
price_usd_per_hour | USD/hour          | instance price recorded when the trial ran
wall_s             | seconds           | trial wall time as recorded by the sweep runner
started_at         | UTC, ISO 8601     | when the trial started
finished_at        | UTC, ISO 8601     | when the trial ended (empty while running)
steps_reported     | steps             | intermediate values the trial reported (pruning points)
instance           |                   | offer the trials were charged at (`local` when free)
prices_captured_at | date (YYYY-MM-DD) | capture date of the price snapshot the instance price came from
                                         (empty when the study did not record it)
params             | JSON              | the trial's hyper-parameters as a JSON object (sorted keys)
""", decimals={"cost_usd": 8, "wall_s": 3})

COLUMNS = [c.name for c in COLUMN_DOCS]

_INTRO = ("One row per trial of an `advisor sweep` study, in trial order. Numbers are plain "
          "decimals; times are UTC; empty cells mean not applicable or not recorded.")


def _iso(moment: Any) -> str:
    return moment.isoformat(timespec="seconds") if moment is not None else ""


def _row(data: SweepStatus, t: TrialCost, best: int | None) -> dict[str, Any]:
    kind = "" if t.value is None else ("last_intermediate" if t.value_is_intermediate
                                        else "final")
    return {
        "study": data.study, "trial": t.number, "state": str(t.state),
        "objective_value": "" if t.value is None else t.value, "value_kind": kind,
        "is_best": "true" if t.number == best else "false",
        "cost_usd": t.cost_usd,
        "price_usd_per_hour": "" if t.price_usd_per_hour is None else t.price_usd_per_hour,
        "wall_s": "" if t.wall_s is None else t.wall_s,
        "started_at": _iso(t.started_at), "finished_at": _iso(t.finished_at),
        "steps_reported": t.steps_reported, "instance": data.instance,
        "prices_captured_at": data.prices_captured_at.isoformat()
        if data.prices_captured_at else "",
        "params": json.dumps(dict(t.params), sort_keys=True, default=str),
    }


def sweep_rows(data: SweepStatus) -> list[dict[str, Any]]:
    """The CSV rows as dicts keyed by :data:`COLUMNS`, in trial order (figures unrounded: the
    writer rounds them as :data:`COLUMN_DOCS` says)."""
    best = data.best_trial()
    number = best.number if best else None
    return [_row(data, t, number) for t in sorted(data.trials, key=lambda t: t.number)]


def write_sweep_csv(data: SweepStatus, path: Path) -> list[Path]:
    """Write the per-trial CSV and ``<name>.columns.md`` beside it; returns both paths."""
    return write_csv(path, COLUMN_DOCS, sweep_rows(data), intro=_INTRO)
