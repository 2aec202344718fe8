"""Answer a rerun of a finished sweep from its stored totals, without Optuna or the objective.

Rerunning ``advisor sweep sweep.yaml`` after its budget was spent used to import the
objective (torch, scikit-learn...) and open the study through Optuna only to find that no
trial may start: seconds of work to say "done". ``finished_sweep`` reads the study's totals
from the default SQLite file with the standard library (read-only, one query per table) and
applies the same caps as the gate (``advisor.sweep.caps``). It answers only when that is
certain: SQLite storage, no running trial, every finished trial charged; otherwise it returns
None and the sweep runs as usual (which also fails and charges trials of dead workers).
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from advisor.sweep.caps import dollar_cap_reason, stale_after_s, trial_cap_reason
from advisor.sweep.spec import SweepSpec
from advisor.sweep.state import COST_ATTR, PRICE_ATTR, read_settings
from advisor.sweep.stops import StopReason, render_stop_reason

__all__ = ["FinishedSweep", "finished_sweep", "sqlite_path_of"]

_STARTED = ("COMPLETE", "PRUNED", "FAIL", "RUNNING")


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
                f"${self.spent_usd:.4f} spent, {best}")


def sqlite_path_of(url: str) -> Path | None:
    """The file of a plain ``sqlite:///PATH`` URL; None for any other URL (or in-memory)."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or "?" in url:
        return None
    path = url[len(prefix):]
    return None if path in ("", ":memory:") else Path(path)


def _read(conn: sqlite3.Connection, study: str) -> tuple[float, dict[str, list[float | None]],
                                                          list[tuple[int, float]], str] | None:
    row = conn.execute("SELECT study_id FROM studies WHERE study_name = ?", (study,)).fetchone()
    if row is None:
        return None
    study_id = int(row[0])
    costs: dict[str, list[float | None]] = {}
    for state, value_json in conn.execute(
            "SELECT t.state, a.value_json FROM trials t LEFT JOIN trial_user_attributes a "
            "ON a.trial_id = t.trial_id AND a.key = ? WHERE t.study_id = ?",
            (COST_ATTR, study_id)):
        cost = json.loads(value_json) if value_json is not None else None
        costs.setdefault(str(state), []).append(
            float(cost) if isinstance(cost, int | float) else None)
    values = [(int(n), float(v)) for n, v in conn.execute(
        "SELECT t.number, v.value FROM trials t JOIN trial_values v ON v.trial_id = t.trial_id "
        "WHERE t.study_id = ? AND t.state = 'COMPLETE' AND v.objective = 0 "
        "AND v.value IS NOT NULL", (study_id,))]
    direction = conn.execute("SELECT direction FROM study_directions WHERE study_id = ? "
                             "AND objective = 0", (study_id,)).fetchone()
    attrs = {str(k): json.loads(v) for k, v in conn.execute(
        "SELECT key, value_json FROM study_user_attributes WHERE study_id = ?", (study_id,))}
    price_usd_per_hour = read_settings(attrs).price_usd_per_hour
    if price_usd_per_hour is None and PRICE_ATTR in attrs:
        return None  # unsure of the gate's worst case: let the full path answer
    return (price_usd_per_hour or 0.0, costs, values,  # no price: trials are free
            str(direction[0]) if direction else "MINIMIZE")


def finished_sweep(spec: SweepSpec, url: str) -> FinishedSweep | None:
    """The stored study of ``spec`` at ``url`` when its caps already stop it, else None.

    None also when unsure (not SQLite, no such file or study, a running or uncharged
    trial, every trial failed, any database error): the caller then runs the sweep as usual,
    which reports those. Never writes.
    """
    path = sqlite_path_of(url)
    if path is None or not path.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                               timeout=1.0)
        try:
            read = _read(conn, spec.study)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError, OSError):
        return None
    if read is None:
        return None
    price_usd_per_hour, costs, values, direction = read
    if costs.get("RUNNING") or any(
            c is None for s in ("COMPLETE", "PRUNED", "FAIL") for c in costs.get(s, [])):
        return None
    finished = [c for s in ("COMPLETE", "PRUNED", "FAIL") for c in costs.get(s, []) if c]
    complete = [c for c in costs.get("COMPLETE", []) if c is not None]
    # The gate's worst case of one more trial: its expected cost plus the time a trial that
    # dies may run before it is found dead (advisor.sweep.cost.worst_case_trial_usd).
    expected = (max(complete) if complete else max(finished, default=0.0)) + (
        stale_after_s(spec.heartbeat_s) * price_usd_per_hour / 3600.0
        / max(spec.trials_per_instance, 1))
    spent = math.fsum(finished)
    started = sum(len(costs.get(s, [])) for s in _STARTED)
    reason = trial_cap_reason(spec.budget, trials_started=started) or dollar_cap_reason(
        spec.budget, spent_usd=spent, running_usd=0.0, expected_usd=expected)
    if reason is None or len(costs.get("FAIL", [])) == started:
        return None
    best = (min if direction == "MINIMIZE" else max)(values, key=lambda nv: nv[1],
                                                     default=None)
    return FinishedSweep(spec.study, reason, started, len(costs.get("PRUNED", [])),
                         len(costs.get("FAIL", [])), spent,
                         best[1] if best else None, best[0] if best else None)
