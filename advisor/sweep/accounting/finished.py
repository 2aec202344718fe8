"""Answer a rerun of a finished sweep from its stored totals, without Optuna or the objective.

Rerunning ``advisor sweep sweep.yaml`` after its budget was spent used to import the
objective (torch, scikit-learn...) and open the study through Optuna only to find that no
trial may start: seconds of work to say "done". ``finished_sweep`` reads the study's totals
from the default SQLite file with the standard library (read-only, one query per table) and
applies the same caps as the gate (``advisor.sweep.accounting.budget``). It answers only when that is
certain: SQLite storage, no running trial, every finished trial charged; otherwise it returns
None and the sweep runs as usual (which also fails and charges trials of dead workers).

Whether the caps stop the sweep is the budget gate's own answer (``BudgetGate.for_sweep``,
``advisor.sweep.accounting.budget``) on the stored totals: the finished trials' charges plus the
instance time billed beyond them (``advisor.sweep.accounting.instances``), so a rerun and a worker agree.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from advisor.formatting import fmt_money
from advisor.storage import plain_sqlite_file
from advisor.sweep.accounting.budget import BudgetGate, expected_trial_usd
from advisor.sweep.accounting.instances import overhead_usd
from advisor.sweep.accounting.records import COST_ATTR, PRICE_ATTR, WORKER_ATTR, instances_of, read_settings
from advisor.sweep.spec.outcomes import StopReason, TrialStatus, render_stop_reason
from advisor.sweep.spec.sweep_spec import SweepSpec

__all__ = ["FinishedSweep", "finished_sweep"]

_FINISHED = tuple(s for s in TrialStatus if s.ended)


@dataclass(frozen=True)
class FinishedSweep:
    """A stored sweep that no trial may join: why, and what it holds (dollars in USD)."""

    study: str
    stop: StopReason
    trials: int
    pruned: int
    failed: int
    spent_usd: float
    best_value: float | None
    best_trial: int | None

    @property
    def stop_reason(self) -> str:
        """Why no trial may start, as a sentence."""
        return render_stop_reason(self.stop)

    def summary(self) -> str:
        """One line: the study, why it is finished, its trials and best value."""
        best = ("no completed trial" if self.best_value is None
                else f"best {self.best_value:.6g} (trial {self.best_trial})")
        return (f"sweep {self.study} is already finished ({self.stop_reason}): "
                f"{self.trials} trial{'' if self.trials == 1 else 's'}, {self.pruned} pruned, "
                f"{self.failed} failed, "
                f"{fmt_money(self.spent_usd)} spent, {best}")


@dataclass(frozen=True)
class _Totals:
    """The stored totals the gate reads (``advisor.sweep.accounting.budget.Totals``): no running trial."""

    trials_started: int
    spent_usd: float
    expected_trial_usd: float
    running_elapsed_s: tuple[float, ...] = ()


@dataclass
class _Stored:
    """What the study holds: its trials' charges by state (None: not charged) and by launched
    worker, its completed trials' values, its direction and its user attributes."""

    costs: dict[str, list[float | None]] = field(default_factory=dict)
    usd_by_worker: dict[str, float] = field(default_factory=dict)
    values: list[tuple[int, float]] = field(default_factory=list)
    direction: str = "MINIMIZE"
    attrs: dict[str, Any] = field(default_factory=dict)

    def of(self, *states: TrialStatus) -> list[float | None]:
        """The charges of the trials in ``states``."""
        return [c for s in states for c in self.costs.get(s.stored, [])]

    def totals(self, *, now_s: float) -> _Totals:
        """The totals of its finished trials (all charged) and launched worker instances."""
        finished = [c or 0.0 for c in self.of(*_FINISHED)]
        complete = [c or 0.0 for c in self.of(TrialStatus.COMPLETE)]
        overhead = overhead_usd(instances_of(self.attrs), self.usd_by_worker, now_s=now_s)
        return _Totals(len(self.of(*_FINISHED, TrialStatus.RUNNING)), math.fsum(finished) + overhead,
                       expected_trial_usd(max(complete, default=None),
                                          max(finished, default=None)))


def _read(conn: sqlite3.Connection, study: str) -> _Stored | None:
    row = conn.execute("SELECT study_id FROM studies WHERE study_name = ?", (study,)).fetchone()
    if row is None:
        return None
    study_id = int(row[0])
    stored = _Stored()
    for state, cost_json, worker_json in conn.execute(
            "SELECT t.state, c.value_json, w.value_json FROM trials t "
            "LEFT JOIN trial_user_attributes c ON c.trial_id = t.trial_id AND c.key = ? "
            "LEFT JOIN trial_user_attributes w ON w.trial_id = t.trial_id AND w.key = ? "
            "WHERE t.study_id = ?", (COST_ATTR, WORKER_ATTR, study_id)):
        cost = json.loads(cost_json) if cost_json is not None else None
        cost = float(cost) if isinstance(cost, int | float) else None
        stored.costs.setdefault(str(state), []).append(cost)
        if worker_json is not None:
            worker = str(json.loads(worker_json))
            stored.usd_by_worker[worker] = stored.usd_by_worker.get(worker, 0.0) + (cost or 0.0)
    stored.values = [(int(n), float(v)) for n, v in conn.execute(
        "SELECT t.number, v.value FROM trials t JOIN trial_values v ON v.trial_id = t.trial_id "
        "WHERE t.study_id = ? AND t.state = ? AND v.objective = 0 "
        "AND v.value IS NOT NULL", (study_id, TrialStatus.COMPLETE.stored))]
    direction = conn.execute("SELECT direction FROM study_directions WHERE study_id = ? "
                             "AND objective = 0", (study_id,)).fetchone()
    stored.direction = str(direction[0]) if direction else "MINIMIZE"
    stored.attrs = {str(k): json.loads(v) for k, v in conn.execute(
        "SELECT key, value_json FROM study_user_attributes WHERE study_id = ?", (study_id,))}
    return stored


def finished_sweep(spec: SweepSpec, url: str, *, now_s: float | None = None) -> FinishedSweep | None:
    """The stored study of ``spec`` at ``url`` when its caps already stop it, else None.

    None also when unsure (not SQLite, no such file or study, a running or uncharged
    trial, every trial failed, a price that cannot be read, any database error): the caller
    then runs the sweep as usual, which reports those. ``now_s`` (Unix seconds, default now)
    is when running worker instances are billed to. Never writes.
    """
    path = plain_sqlite_file(url)
    if path is None or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                               timeout=1.0)
        try:
            stored = _read(conn, spec.study)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError, OSError):
        return None
    if stored is None or stored.of(TrialStatus.RUNNING) or None in stored.of(*_FINISHED):
        return None
    price_usd_per_hour = read_settings(stored.attrs).price_usd_per_hour
    if price_usd_per_hour is None and PRICE_ATTR in stored.attrs:
        return None  # unsure of the gate's worst case: let the full path answer
    totals = stored.totals(now_s=time.time() if now_s is None else now_s)
    failed = len(stored.of(TrialStatus.FAIL))
    if failed == totals.trials_started:
        return None
    gate = BudgetGate.for_sweep(spec, price_usd_per_hour or 0.0)  # no price: trials are free
    reason = gate.stop_reason(totals)
    if reason is None:
        return None
    best = (min if stored.direction == "MINIMIZE" else max)(stored.values, key=lambda nv: nv[1],
                                                            default=None)
    return FinishedSweep(spec.study, reason, totals.trials_started, len(stored.of(TrialStatus.PRUNED)),
                         failed, totals.spent_usd, best[1] if best else None,
                         best[0] if best else None)
