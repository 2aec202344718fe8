"""Dollar accounting: trial cost, shared instances, and the cap with an injected clock."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState

from advisor.sweep.accounting.budget import BudgetGate, cost_of
from advisor.sweep.accounting.ledger import Ledger, ledger_from_trials
from advisor.sweep.accounting.records import COST_ATTR, SHARE_ATTR, STARTED_ATTR, STOP_REASON_ATTR, WALL_ATTR
from advisor.sweep.run.runner import run_worker
from advisor.sweep.spec import BudgetSpec, parse_sweep_spec
from advisor.sweep.spec.outcomes import StopKind, StopReason
from pricing import billing

optuna.logging.set_verbosity(optuna.logging.WARNING)


class FakeClock:
    """Seconds that only move when a test (or a fake objective) says so."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def _kind(reason: StopReason | None) -> StopKind | None:
    return None if reason is None else reason.kind


@pytest.mark.parametrize(("wall_s", "price", "share", "usd"), [
    (3600, 2.0, 1, 2.0),   # one hour at $2/h
    (1800, 2.0, 1, 1.0),   # half an hour
    (3600, 2.0, 4, 0.5),   # four trials share the instance
    (0, 9.0, 1, 0.0),      # no time, no cost
])
def test_trial_cost(wall_s: float, price: float, share: int, usd: float) -> None:
    assert billing.usd(wall_s, price, share) == pytest.approx(usd)


def test_trial_cost_rejects_bad_share() -> None:
    with pytest.raises(ValueError, match="share"):
        billing.usd(1, 1, 0)


def _spec(tmp_path: Path, **budget: float) -> object:
    return parse_sweep_spec({
        "study": "cap", "entrypoint": "m:f", "storage": f"sqlite:///{tmp_path / 'b.db'}",
        "sampler": "random", "pruner": "none", "price_usd_per_hour": 3600.0,  # $1 per second
        "heartbeat_s": 1,  # a trial dying now is found dead within 3 s: $3 of worst case
        "budget": budget,
    })


@pytest.fixture(autouse=True)
def _no_real_time_staleness(monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeats run on the real clock, these trials on a fake one: on a machine stalled
    for the 2 s grace (a busy CI host), Optuna would fail a running trial as stale and charge
    it real seconds. The storage's grace is made long; the budget's arithmetic still counts
    ``stale_after_s(heartbeat_s)`` of worst case, which is what these tests check."""
    import advisor.sweep.run.database as database

    monkeypatch.setattr(database, "grace_period_s", lambda _heartbeat_s: 3600)


def _run(tmp_path: Path, durations: list[float], max_usd: float, share: int = 1) -> optuna.Study:
    clock = FakeClock()
    spec = replace(_spec(tmp_path, max_usd=max_usd, max_trials=len(durations)),  # type: ignore[type-var]
                   trials_per_instance=share)

    def objective(trial: optuna.Trial) -> float:
        clock.now += durations[trial.number % len(durations)]
        return 0.0

    run_worker(spec, clock=clock, objective=objective)  # type: ignore[arg-type]
    return optuna.load_study(study_name="cap", storage=f"sqlite:///{tmp_path / 'b.db'}")


def test_cap_stops_before_passing_max_usd(tmp_path: Path) -> None:
    study = _run(tmp_path, [10.0] * 20, max_usd=55.0)
    costs = [t.user_attrs[COST_ATTR] for t in study.trials]
    # a sixth: $50 spent + its worst case $10 + $3 found dead late = $63 > $55
    assert costs == [pytest.approx(10.0)] * 5
    assert study.user_attrs[STOP_REASON_ATTR].startswith("dollar cap: $")


def test_shared_instance_divides_each_trial_cost(tmp_path: Path) -> None:
    study = _run(tmp_path, [10.0] * 4, max_usd=1000.0, share=2)  # two trials at once
    assert len(study.trials) == 4
    for trial in study.trials:
        assert trial.user_attrs[SHARE_ATTR] == 2
        assert trial.user_attrs[COST_ATTR] == pytest.approx(trial.user_attrs[WALL_ATTR] / 2)


@settings(max_examples=8, deadline=None)
@given(durations=st.lists(st.floats(0.1, 5.0), min_size=1, max_size=12),
       max_usd=st.floats(0.5, 20.0))
def test_overshoot_at_most_the_running_trial(tmp_path_factory: pytest.TempPathFactory,
                                             durations: list[float], max_usd: float) -> None:
    folder = tmp_path_factory.mktemp("cap")
    study = _run(folder, durations * 3, max_usd=max_usd)
    costs = [t.user_attrs[COST_ATTR] for t in study.trials]
    spent = sum(costs)
    # one worker: the only trial in flight when the cap is crossed is the last one
    assert spent - max_usd <= (costs[-1] if costs else 0.0) + 1e-9
    assert sum(costs[:-1]) <= max_usd + 1e-9


def _trial(state: TrialState, cost: float | None = None, started: float | None = None
           ) -> optuna.trial.FrozenTrial:
    attrs: dict[str, float] = {}
    if cost is not None:
        attrs[COST_ATTR] = cost
    if started is not None:
        attrs[STARTED_ATTR] = started
    value = 0.0 if state is TrialState.COMPLETE else None
    return optuna.trial.create_trial(state=state, value=value, user_attrs=attrs)


def _ledger(trials: list[optuna.trial.FrozenTrial], now_s: float) -> Ledger:
    return ledger_from_trials(trials, price_usd_per_hour=3600.0, now_s=now_s)


def test_gate_counts_running_trials_at_their_worst_case() -> None:
    clock = FakeClock()
    gate = BudgetGate(BudgetSpec(max_usd=40.0), price_usd_per_hour=3600.0, clock=clock,
                      stale_after_s=3.0)  # dying now, a trial is charged up to 3 s more
    trials = [_trial(TrialState.COMPLETE, cost=4.0),
              _trial(TrialState.RUNNING, started=clock.now - 10)]  # ran 10 s: $10 + $3
    ledger = _ledger(trials, clock.now)
    assert gate.worst_case_usd(ledger) == pytest.approx(7.0)  # one more: $4 + $3
    assert gate.in_flight_usd(ledger) == pytest.approx(13.0)
    assert gate.stop_reason(ledger) is None  # 4 + 13 + 7 = 24 <= 40
    trials.append(_trial(TrialState.RUNNING, started=clock.now - 14))  # + $17
    assert _kind(gate.stop_reason(_ledger(trials, clock.now))) is StopKind.DOLLAR_CAP  # 41 > 40


def test_gate_counts_running_trials_at_their_expected_cost() -> None:
    clock = FakeClock()
    gate = BudgetGate(BudgetSpec(max_usd=30.0), price_usd_per_hour=3600.0, clock=clock)
    trials = [_trial(TrialState.COMPLETE, cost=4.0),
              _trial(TrialState.RUNNING, started=clock.now - 10),  # ran 10 s: $10 > expected $4
              _trial(TrialState.RUNNING, started=clock.now - 1)]   # ran 1 s: expected $4
    ledger = _ledger(trials, clock.now)
    assert ledger.spent_usd == pytest.approx(4.0)
    assert gate.in_flight_usd(ledger) == pytest.approx(14.0)
    assert gate.stop_reason(ledger) is None  # 4 + 14 + 4 = 22 <= 30
    trials.append(_trial(TrialState.RUNNING, started=clock.now - 9))
    assert _kind(gate.stop_reason(_ledger(trials, clock.now))) is StopKind.DOLLAR_CAP  # 4+23+4 > 30


def test_cost_of_falls_back_to_timestamps_for_heartbeat_failed_trials() -> None:
    trial = _trial(TrialState.FAIL)
    wall = (trial.datetime_complete - trial.datetime_start).total_seconds()  # type: ignore[operator]
    assert cost_of(trial, price_usd_per_hour=3600.0) == pytest.approx(wall)


def test_gate_stops_on_trials_and_hours() -> None:
    clock = FakeClock()
    gate = BudgetGate(BudgetSpec(max_trials=2, max_hours=1.0), price_usd_per_hour=0.0,
                      clock=clock)
    assert gate.stop_reason(_ledger([_trial(TrialState.COMPLETE)], clock.now)) is None
    two = _ledger([_trial(TrialState.COMPLETE)] * 2, clock.now)
    assert _kind(gate.stop_reason(two)) is StopKind.MAX_TRIALS
    clock.now += 3600
    assert _kind(gate.stop_reason(Ledger())) is StopKind.MAX_HOURS
