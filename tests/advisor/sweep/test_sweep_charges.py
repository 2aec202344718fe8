"""Charges of killed trials never under-count: the rule, a model of the ledger, a real kill -9."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.trial import FrozenTrial, TrialState
from sweep_helpers import write_sweep

from advisor.sweep import load_status
from advisor.sweep.accounting.budget import BudgetGate, grace_period_s, killed_trial_end_s
from advisor.sweep.accounting.ledger import ledger_from_trials
from advisor.sweep.accounting.records import COST_ATTR, FOUND_DEAD_ATTR, STARTED_ATTR, WALL_ATTR
from advisor.sweep.run.heartbeat import stale_after_s
from advisor.sweep.spec import BudgetSpec

optuna.logging.set_verbosity(optuna.logging.WARNING)

pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used")


@pytest.mark.parametrize(("found_dead_s", "last_heartbeat_s", "heartbeat_s", "end_s"), [
    (110.0, 100.0, 2, 110.0),   # found dead long after: charged until found
    (101.0, 100.0, 2, 102.0),   # found sooner than one interval after it: heartbeat + interval
    (105.5, None, 2, 105.5),    # no heartbeat recorded: until found
    (105.5, 100.0, None, 105.5),  # interval unknown: until found
])
def test_killed_trial_end_is_the_later_of_found_dead_and_heartbeat_plus_interval(
        found_dead_s: float, last_heartbeat_s: float | None, heartbeat_s: int | None,
        end_s: float) -> None:
    assert killed_trial_end_s(found_dead_s=found_dead_s, last_heartbeat_s=last_heartbeat_s,
                              heartbeat_s=heartbeat_s) == pytest.approx(end_s)


# --- a pure model of the ledger: injected clock, no database, no sleeping ----------------------

HEARTBEAT_S = 1
GRACE_S = grace_period_s(HEARTBEAT_S)
MAX_RUN_S = 5.0          # no trial runs longer (a finished trial of this length is in the study)
TICK_S = 1.0             # the clock moves at most this much between two stale-trial checks
PRICE = 3600.0           # $1 per second
WORST_USD = MAX_RUN_S + stale_after_s(HEARTBEAT_S)  # one trial's worst-case charge


@dataclass
class _Trial:
    started_s: float
    run_s: float                     # how long it runs when nobody kills it
    died_s: float | None = None      # killed (kill -9) at
    charged_usd: float | None = None

    def last_heartbeat_stored_s(self, until_s: float) -> float:
        """Its last heartbeat before ``until_s``, as SQLite stores it: to the whole second."""
        beats = math.floor((until_s - self.started_s) / HEARTBEAT_S)
        return float(math.floor(self.started_s + beats * HEARTBEAT_S))


class _Model:
    """The ledger of one study: trials start through the real gate, run, die, get found."""

    def __init__(self, max_usd: float) -> None:
        self.now = 1_000.0
        self.trials: list[_Trial] = []
        self.gate = BudgetGate(BudgetSpec(max_usd=max_usd), price_usd_per_hour=PRICE,
                               clock=lambda: self.now, stale_after_s=stale_after_s(HEARTBEAT_S))
        self.prior = optuna.trial.create_trial(state=TrialState.COMPLETE, value=0.0,
                                               user_attrs={COST_ATTR: MAX_RUN_S})

    def _frozen(self) -> list[FrozenTrial]:
        frozen = [self.prior]
        for t in self.trials:
            if t.charged_usd is not None:
                frozen.append(optuna.trial.create_trial(
                    state=TrialState.FAIL, user_attrs={COST_ATTR: t.charged_usd}))
            else:
                frozen.append(optuna.trial.create_trial(
                    state=TrialState.RUNNING, user_attrs={STARTED_ATTR: t.started_s}))
        return frozen

    def find_dead(self) -> None:
        """What every budget check (and Optuna) does first: fail and charge stale trials."""
        for t in self.trials:
            if t.charged_usd is not None or t.died_s is None:
                continue
            heartbeat = t.last_heartbeat_stored_s(t.died_s)
            if self.now - heartbeat > GRACE_S:
                end = killed_trial_end_s(found_dead_s=self.now, last_heartbeat_s=heartbeat,
                                         heartbeat_s=HEARTBEAT_S)
                t.charged_usd = (end - t.started_s) * PRICE / 3600

    def start(self, run_s: float) -> None:
        self.find_dead()
        ledger = ledger_from_trials(self._frozen(), price_usd_per_hour=PRICE, now_s=self.now)
        if self.gate.stop_reason(ledger) is None:
            self.trials.append(_Trial(self.now, run_s))

    def kill(self, pick: int) -> None:
        alive = [t for t in self.trials if t.died_s is None and t.charged_usd is None]
        if alive:
            alive[pick % len(alive)].died_s = self.now

    def tick(self, dt_s: float) -> None:
        self.now += dt_s
        for t in self.trials:  # trials that reached their end complete, charged exactly
            if t.charged_usd is None and t.died_s is None and self.now >= t.started_s + t.run_s:
                t.died_s = t.started_s + t.run_s
                t.charged_usd = t.run_s * PRICE / 3600
        self.find_dead()

    @property
    def spent_usd(self) -> float:
        return MAX_RUN_S + sum(t.charged_usd or 0.0 for t in self.trials)


_EVENTS = st.lists(st.one_of(
    st.tuples(st.just("start"), st.floats(0.0, MAX_RUN_S)),
    st.tuples(st.just("kill"), st.integers(0, 50)),
    st.tuples(st.just("tick"), st.floats(0.0, TICK_S)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(events=_EVENTS, max_usd=st.floats(0.0, 60.0))
def test_any_interleaving_charges_at_least_the_run_time_and_keeps_the_cap(
        events: list[tuple[str, float]], max_usd: float) -> None:
    """For any interleaving of starts, kills and heartbeats (clock ticks), once every trial has
    ended and been found: each trial is charged at least the time it ran, and the total spend
    is at most ``max_usd`` plus one trial's worst case (``MAX_RUN_S + grace + interval`` of
    instance time).

    Assumptions of the model, as in a sweep: no trial runs longer than the longest finished
    one (here a prior trial of ``MAX_RUN_S``); stale trials are failed before every budget
    check and at least every ``TICK_S`` (<= one heartbeat interval); SQLite keeps heartbeats
    to the whole second. Under them the gate keeps the spend within ``max_usd`` itself, which
    is asserted too.
    """
    model = _Model(max_usd)
    for kind, arg in events:
        if kind == "start":
            model.start(float(arg))
        elif kind == "kill":
            model.kill(int(arg))
        else:
            model.tick(float(arg))
    while any(t.charged_usd is None for t in model.trials):
        model.tick(TICK_S)
    for t in model.trials:
        ran_s = (t.died_s or 0.0) - t.started_s
        assert t.charged_usd is not None and t.charged_usd >= ran_s * PRICE / 3600 - 1e-9
    assert model.spent_usd <= max(max_usd, MAX_RUN_S) + WORST_USD + 1e-9
    assert model.spent_usd <= max(max_usd, MAX_RUN_S) + 1e-9


# --- a real worker, killed with SIGKILL mid-trial ------------------------------------------------

def test_a_worker_killed_with_sigkill_is_charged_at_least_its_run_time(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:sleeper", heartbeat_s=1,
                       price_usd_per_hour=3600.0, budget={"max_trials": 3})
    code = ("import sys; from advisor.sweep import run_worker; "
            "from advisor.sweep.spec import load_sweep_spec; run_worker(load_sweep_spec(sys.argv[1]))")
    worker = subprocess.Popen([sys.executable, "-c", code, str(path)], cwd=tmp_path)
    pid_file = tmp_path / "sleeper.pid"
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists():
            assert time.monotonic() < deadline, "the worker never started the sleeping trial"
            assert worker.poll() is None, "the worker exited before its trial started"
            time.sleep(0.05)
        time.sleep(1.3)  # a couple of heartbeats (at start and 1 s), and not on a whole second
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        killed_at = time.time()
        worker.wait()
    url = f"sqlite:///{tmp_path / 'sweep.db'}"
    # its heartbeat goes stale GRACE_S after the last one: each status read fails it once it
    # is, so the first read that finds it failed is the earliest charge (the strictest check)
    deadline = time.monotonic() + 60
    while (status := load_status("t", storage_url=url)).trials_by_state != {"fail": 1}:
        assert status.trials_by_state == {"running": 1}, status.trials_by_state
        assert time.monotonic() < deadline, "the killed trial was never found dead"
        time.sleep(0.25)
    trial = optuna.load_study(study_name="t", storage=url).trials[0]
    assert trial.datetime_start is not None
    ran_s = killed_at - trial.datetime_start.timestamp()  # at least what it really ran
    assert trial.user_attrs[WALL_ATTR] >= ran_s
    assert trial.user_attrs[COST_ATTR] >= ran_s  # $1 per second
    assert trial.user_attrs[FOUND_DEAD_ATTR] >= killed_at
