"""The state of a sweep in numbers: trials by state, best trial, dollars, pruning savings, bytes.

Savings by pruning are an estimate: a pruned trial that reported ``k`` intermediate values
when a full trial reports ``n`` ran ``k/n`` of its length, so completing it would have cost
``cost * n / k``; the saving is that minus what it cost.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from advisor.sweep.cleanup import bytes_cleaned
from advisor.sweep.cost import cost_of
from advisor.sweep.instances import overhead_usd
from advisor.sweep.ledger import usd_by_worker
from advisor.sweep.state import instances_of, read_settings, read_stop, trial_record
from advisor.sweep.stops import render_stop_reason

__all__ = ["StudyListing", "SweepStatus", "list_studies", "load_status", "pruning_savings_usd",
           "sweep_status"]


@dataclass(frozen=True)
class SweepStatus:
    """A sweep's progress and spend; ``to_json()`` gives plain types for ``--json``.

    ``spent_usd`` is the ended trials' charges plus ``instance_overhead_usd``: the instance
    time the cloud billed beyond the trials of the sweep's ``worker_instances`` launched
    workers (boot, set-up, idle, shut-down; running instances until now).
    """

    study: str
    direction: str
    instance: str
    price_usd_per_hour: float
    trials_by_state: dict[str, int]
    usd_by_state: dict[str, float]
    spent_usd: float
    saved_by_pruning_usd: float
    bytes_cleaned: int
    best_value: float | None = None
    best_params: dict[str, Any] = field(default_factory=dict)
    best_trial: int | None = None
    stop_reason: str = ""
    last_error: str = ""
    instance_overhead_usd: float = 0.0
    worker_instances: int = 0

    @property
    def finished(self) -> int:
        """Trials that reached an end state."""
        ended = ("complete", "pruned", "fail")
        return sum(n for s, n in self.trials_by_state.items() if s in ended)

    @property
    def all_failed(self) -> bool:
        """True when trials ended and every one of them failed (none completed or pruned)."""
        by = self.trials_by_state
        return by.get("fail", 0) > 0 and by.get("complete", 0) + by.get("pruned", 0) == 0

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)


def _full_length(trials: Sequence[FrozenTrial]) -> int:
    lengths = [len(t.intermediate_values) for t in trials if t.state is TrialState.COMPLETE]
    return max(lengths, default=0)


def pruning_savings_usd(trials: Sequence[FrozenTrial], costs_usd: Sequence[float]) -> float:
    """Estimated dollars pruning saved: each pruned trial's full-length cost minus its cost
    (``costs_usd``: one per trial, in order, as ``cost_of`` gives them)."""
    full = _full_length(trials)
    saved = 0.0
    for t, cost in zip(trials, costs_usd, strict=True):
        if t.state is not TrialState.PRUNED or full == 0:
            continue
        done = max(len(t.intermediate_values), 1)
        if done >= full:
            continue
        saved += cost * full / done - cost
    return saved


def sweep_status(study: optuna.Study, *, now_s: float | None = None,
                 trials: Sequence[FrozenTrial] | None = None) -> SweepStatus:
    """Summarize a study run by ``advisor sweep`` (any Optuna study works, at price 0).

    ``spent_usd`` counts ended trials and the instance overhead of launched workers; running
    trials show in ``usd_by_state`` at what they cost so far. ``last_error`` is the recorded
    error of the latest failed trial. ``trials`` replaces the study's own (a reader's view).
    """
    attrs = study.user_attrs
    settings = read_settings(attrs)
    price = settings.price_usd_per_hour or 0.0
    trials = study.get_trials(deepcopy=False) if trials is None else trials
    now = time.time() if now_s is None else now_s
    costs = [cost_of(t, price_usd_per_hour=price, share=settings.share, now_s=now)
             for t in trials]  # each once, shared as the ledger shares them
    by_state: dict[str, int] = {}
    usd: dict[str, float] = {}
    for t, cost in zip(trials, costs, strict=True):
        name = t.state.name.lower()
        by_state[name] = by_state.get(name, 0) + 1
        usd[name] = usd.get(name, 0.0) + cost
    instances = instances_of(attrs)
    overhead = overhead_usd(instances, usd_by_worker(trials, costs), now_s=now)
    errors = [trial_record(t).error for t in trials if t.state is TrialState.FAIL]
    last_error = next((e for e in reversed(errors) if e), "")
    stop = read_stop(attrs)
    best_value, best_params, best_number = None, {}, None
    if any(t.state is TrialState.COMPLETE for t in trials):
        best = study.best_trial
        best_value, best_params, best_number = best.value, dict(best.params), best.number
    return SweepStatus(
        study=study.study_name, direction=study.direction.name.lower(),
        instance=settings.instance or "local", price_usd_per_hour=price,
        trials_by_state=dict(sorted(by_state.items())),
        usd_by_state={k: round(v, 6) for k, v in sorted(usd.items())},
        spent_usd=round(sum(v for k, v in usd.items() if k != "running") + overhead, 6),
        saved_by_pruning_usd=round(pruning_savings_usd(trials, costs), 6),
        bytes_cleaned=bytes_cleaned(study), best_value=best_value, best_params=best_params,
        best_trial=best_number, stop_reason="" if stop is None else render_stop_reason(stop),
        last_error=last_error, instance_overhead_usd=round(overhead, 6),
        worker_instances=len(instances),
    )


def load_status(study_name: str, *, storage_url: str | None = None) -> SweepStatus:
    """The status of a stored study by name (raises AdvisorError naming the known studies).

    Trials of dead workers are failed first (see ``load_stored_study``).
    """
    from advisor.sweep.service import load_stored_study

    return sweep_status(load_stored_study(study_name, storage_url))


@dataclass(frozen=True)
class StudyListing:
    """One study of a storage as ``advisor sweep status`` with no name lists it: its trials
    (in all, and by state) and ``spent_usd`` as :class:`SweepStatus` counts it."""

    study: str
    direction: str
    trials: int
    trials_by_state: dict[str, int]
    spent_usd: float
    instance: str
    stop_reason: str

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return asdict(self)


def _listing(study: optuna.Study) -> StudyListing:
    if len(study.directions) > 1:  # not an advisor sweep: Optuna's own, at price 0
        by_state: dict[str, int] = {}
        for t in study.get_trials(deepcopy=False):
            by_state[t.state.name.lower()] = by_state.get(t.state.name.lower(), 0) + 1
        return StudyListing(study.study_name, "/".join(d.name.lower() for d in study.directions),
                            sum(by_state.values()), dict(sorted(by_state.items())), 0.0,
                            "local", "")
    status = sweep_status(study)
    return StudyListing(status.study, status.direction, sum(status.trials_by_state.values()),
                        status.trials_by_state, status.spent_usd, status.instance,
                        status.stop_reason)


def list_studies(*, storage_url: str | None = None) -> list[StudyListing]:
    """Every study in the storage, by name, with its trials and spend (none: empty). Read
    as stored: trials of dead workers still count as running (``load_status`` fails them)."""
    from advisor.sweep.service import open_stored_studies

    return [_listing(study) for study in open_stored_studies(storage_url)]
