"""What the sweep report shows, as plain values: one ``TrialCost`` per trial plus the totals.

``sweep_report_data(study)`` builds it from an Optuna study run by ``advisor sweep``: the
totals (savings by pruning, bytes cleaned, instance, price, instance overhead) come from
``advisor.sweep.status.sweep_status``, each trial's dollars from ``advisor.sweep.cost.cost_of``
(the cost recorded on the trial at the price it ran at, never re-priced). Reading never
writes: trials of dead workers are shown failed and charged as a sweep would record them
(``advisor.sweep.heartbeat.trials_seen_dead``), but the database is left as it is. Tests and
benchmarks build ``SweepReportData`` by hand.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.sweep.cost import cost_of
from advisor.sweep.heartbeat import trials_seen_dead
from advisor.sweep.service import open_stored_study
from advisor.sweep.state import read_settings, trial_record
from advisor.sweep.status import sweep_status
from advisor.sweep.timestamps import frozen_moment

__all__ = [
    "STATES",
    "SweepReportData",
    "TrialCost",
    "load_sweep_report_data",
    "sweep_report_data",
]

STATES = ("complete", "pruned", "fail", "running", "waiting")


@dataclass(frozen=True)
class TrialCost:
    """One trial: state (``complete``/``pruned``/``fail``/``running``/``waiting``), objective,
    dollars at the price it ran at, and when it ran (UTC).

    ``value`` is the final objective of a completed trial, or the last reported intermediate
    value of a pruned one (``value_is_intermediate`` then True); None otherwise.
    """

    number: int
    state: str
    value: float | None
    cost_usd: float
    started_at: datetime | None = None
    finished_at: datetime | None = None
    wall_s: float | None = None
    price_usd_per_hour: float | None = None
    steps_reported: int = 0
    value_is_intermediate: bool = False
    params: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class SweepReportData:
    """A sweep for a budget review: planned budget, every trial's cost, and the savings.

    ``instance_overhead_usd`` is the instance time billed beyond the trials of the
    ``worker_instances`` launched cloud workers (``advisor.sweep.instances``), part of spent.
    """

    study: str
    direction: str
    instance: str
    price_usd_per_hour: float
    trials: tuple[TrialCost, ...]
    budget_usd: float | None = None
    saved_by_pruning_usd: float = 0.0
    bytes_cleaned: int = 0
    stop_reason: str = ""
    prices_captured_at: date | None = None
    instance_overhead_usd: float = 0.0
    worker_instances: int = 0

    @property
    def spent_usd(self) -> float:
        """Dollars of all trials that have ended (complete, pruned, failed), plus the
        instance overhead of launched workers."""
        ended = ("complete", "pruned", "fail")
        return sum(t.cost_usd for t in self.trials if t.state in ended) + self.instance_overhead_usd

    def usd_by_state(self) -> dict[str, float]:
        """Dollars per trial state, in :data:`STATES` order, states with trials only."""
        out = dict.fromkeys(self.count_by_state(), 0.0)
        for t in self.trials:
            out[t.state] += t.cost_usd
        return out

    def count_by_state(self) -> dict[str, int]:
        """Trials per state, in :data:`STATES` order, states with trials only."""
        counts = Counter(t.state for t in self.trials)
        order = [s for s in STATES if s in counts] + sorted(set(counts) - set(STATES))
        return {s: counts[s] for s in order}

    def best_trial(self) -> TrialCost | None:
        """The completed trial with the best objective (ties: lower number)."""
        done = [t for t in self.trials if t.state == "complete" and t.value is not None
                and math.isfinite(t.value)]
        if not done:
            return None
        sign = -1.0 if self.direction == "maximize" else 1.0
        return min(done, key=lambda t: (sign * float(t.value or 0.0), t.number))


def _utc(moment: datetime | None) -> datetime | None:
    """A FrozenTrial's time (naive local time under every supported Optuna) as aware UTC."""
    return None if moment is None else frozen_moment(moment)


def _trial_cost(trial: FrozenTrial, price: float, now_s: float) -> TrialCost:
    value: float | None = None
    intermediate = False
    if trial.state is TrialState.COMPLETE and trial.values and len(trial.values) == 1:
        value = trial.values[0]
    elif trial.state is TrialState.PRUNED and trial.intermediate_values:
        value = trial.intermediate_values[max(trial.intermediate_values)]
        intermediate = True
    record = trial_record(trial)
    return TrialCost(
        number=trial.number, state=trial.state.name.lower(), value=value,
        cost_usd=cost_of(trial, price_usd_per_hour=price, now_s=now_s),
        started_at=_utc(trial.datetime_start), finished_at=_utc(trial.datetime_complete),
        wall_s=record.wall_s, price_usd_per_hour=record.price_usd_per_hour,
        steps_reported=len(trial.intermediate_values), value_is_intermediate=intermediate,
        params=dict(trial.params))


def sweep_report_data(study: optuna.Study, *, budget_usd: float | None = None,
                      now_s: float | None = None) -> SweepReportData:
    """Read a study (as run by ``advisor sweep``) into report values; writes nothing.

    ``budget_usd`` overrides the planned budget stored on the study. Trials of dead workers
    (stale heartbeat) show failed and charged up to now, as the next sweep command records them.
    """
    now = time.time() if now_s is None else now_s
    trials = trials_seen_dead(study, now_s=now)
    status = sweep_status(study, now_s=now, trials=trials)
    settings = read_settings(study.user_attrs)
    return SweepReportData(
        study=status.study, direction=status.direction, instance=status.instance,
        price_usd_per_hour=status.price_usd_per_hour,
        trials=tuple(_trial_cost(t, status.price_usd_per_hour, now) for t in trials),
        budget_usd=settings.max_usd if budget_usd is None else budget_usd,
        saved_by_pruning_usd=status.saved_by_pruning_usd, bytes_cleaned=status.bytes_cleaned,
        stop_reason=status.stop_reason, instance_overhead_usd=status.instance_overhead_usd,
        worker_instances=status.worker_instances, prices_captured_at=settings.prices_captured_at)


def load_sweep_report_data(study_name: str, *, storage_url: str | None = None,
                           budget_usd: float | None = None) -> SweepReportData:
    """Open a stored study by name and read it, writing nothing (dead workers' trials are
    shown failed and charged, in memory); AdvisorError names the known studies."""
    return sweep_report_data(open_stored_study(study_name, storage_url), budget_usd=budget_usd)
