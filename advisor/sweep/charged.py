"""The objective as a worker runs it: the search space applied, failures one line each, and
the trial's charge recorded when it ends.

Whatever the user's objective does (returns, raises, is pruned, calls ``sys.exit()``, gets
Ctrl-C), the trial's wall time and dollars are written in one transaction as it ends
(``advisor.sweep.ledger.record_charge``), never below a charge another process recorded for
it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import optuna

from advisor.sweep.cost import trial_cost_usd
from advisor.sweep.ledger import record_charge
from advisor.sweep.objective import (
    INTERRUPTED,
    Objective,
    TrialFailure,
    checked_value,
    exit_failure,
    suggest,
)
from advisor.sweep.spec import SweepSpec
from advisor.sweep.state import TrialCharge, tag_worker
from probes.workload import first_line

__all__ = ["EndedElsewhere", "charged_objective"]


class EndedElsewhere(Exception):  # noqa: N818 - not an error of the objective
    """The trial ended while it ran: another process failed it for a late heartbeat."""


def charged_objective(objective: Objective, spec: SweepSpec, price: float, *,
                      clock: Callable[[], float], on_start: Callable[[], None],
                      errors: dict[int, str], interrupted: threading.Event,
                      ended_elsewhere: set[int], worker_id: str | None = None) -> Objective:
    """The objective that applies the search space, then records cost (and error) on the trial.

    ``errors`` receives the one-line error of each failed trial, by number;
    ``ended_elsewhere`` the numbers of trials another process failed (as stale) while they
    ran: their charge is raised to what they ran (``record_charge``), then ``EndedElsewhere``
    is raised, and Optuna refuses to record their end (``ValueError``). A return value
    that is not a number, ``sys.exit()`` and Ctrl-C (which also sets ``interrupted``) become
    a ``TrialFailure`` that Optuna records as a failed trial, so the sweep itself goes on or
    stops by its own rules. ``worker_id`` (a launched cloud worker) is recorded on each trial
    as it starts, so its instance's billed time is set against the trials it ran
    (``advisor.sweep.instances``).
    """
    share = spec.trials_per_instance

    def fail(trial: optuna.Trial, exc: BaseException) -> None:
        errors[trial.number] = str(exc) if isinstance(exc, TrialFailure) else first_line(exc)

    def run(trial: optuna.Trial) -> Any:
        on_start()
        started = clock()
        try:
            if worker_id:
                tag_worker(trial, worker_id)
            suggest(trial, spec.search_space)
            return checked_value(objective(trial))
        except optuna.TrialPruned:
            raise
        except SystemExit as exc:
            failure = exit_failure(exc)
            fail(trial, failure)
            raise failure from None
        except KeyboardInterrupt:
            interrupted.set()
            failure = TrialFailure(INTERRUPTED)
            fail(trial, failure)
            raise failure from None
        except Exception as exc:  # noqa: BLE001 - recorded, then Optuna fails the trial
            fail(trial, exc)
            raise
        except BaseException as exc:  # noqa: BLE001 - GeneratorExit, a user's own subclass
            # Optuna catches Exceptions only: any other would leave the trial RUNNING and end
            # the worker with a traceback; it fails this trial like any error instead
            failure = TrialFailure(f"objective raised {type(exc).__name__}: {first_line(exc)}")
            fail(trial, failure)
            raise failure from None
        finally:
            wall = max(clock() - started, 0.0)
            state = record_charge(trial.study, trial, TrialCharge(
                started_at_s=started, price_usd_per_hour=price, share=share, wall_s=wall,
                cost_usd=trial_cost_usd(wall, price, share), error=errors.get(trial.number)))
            if state.is_finished():  # failed as stale while it ran: charged what it ran
                ended_elsewhere.add(trial.number)
                raise EndedElsewhere(f"trial {trial.number} was failed by another process "
                                     "(its heartbeat was late) while it still ran; charged "
                                     f"for the {wall:.1f} s it ran")

    return run
