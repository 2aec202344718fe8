"""The user's objective: imported from ``pkg.mod:func``, the YAML search space it samples, and
the objective as a worker runs it (``charged_objective``).

An objective written for ``advisor sweep`` is a plain Optuna objective; ``suggest(trial)``
suggests every parameter of sweep.yaml's ``search_space`` (stored on the study, so any
worker and the objective itself find it).

Whatever the user's objective does (returns, raises, is pruned, calls ``sys.exit()``, gets
Ctrl-C), the trial's wall time and dollars are written in one transaction as it ends
(``advisor.sweep.accounting.ledger.record_charge``, a lost connection ridden out), never below
a charge another process recorded for it.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import optuna

from advisor.errors import AdvisorError
from advisor.sweep.accounting.ledger import record_charge
from advisor.sweep.accounting.records import TrialCharge, read_settings, tag_worker
from advisor.sweep.run.outage import ride_out
from advisor.sweep.spec.sweep_spec import Distribution, ParamSpec, SweepSpec
from pricing.billing import usd
from probes import ProbeError, first_line, import_entrypoint  # the one line `recommend` prints too

__all__ = [
    "INTERRUPTED",
    "EndedElsewhere",
    "Objective",
    "TrialFailure",
    "charged_objective",
    "checked_value",
    "exit_failure",
    "load_entrypoint",
    "suggest",
]

INTERRUPTED = "interrupted (Ctrl-C)"  # the recorded error of a trial stopped by Ctrl-C
Objective = Callable[[optuna.Trial], Any]
_SHOWN_CHARS = 60


class TrialFailure(AdvisorError):
    """A trial failed in a way Optuna reports badly: the objective returned no number,
    called ``sys.exit()`` or was interrupted. The message is the trial's one-line error."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 3] + "..."


def checked_value(value: object) -> float:
    """The objective's return value as a float; TrialFailure naming it when it is not a
    number (None, a string, NaN, a list...). Infinities pass, as Optuna takes them."""
    if value is None:
        raise TrialFailure("objective returned None, not a number; return the value to "
                           "optimize as a float")
    if isinstance(value, str | bytes):
        raise TrialFailure(f"objective returned {_shown(value)} (a {type(value).__name__}), "
                           "not a number; return a float")
    try:
        number = float(value)  # type: ignore[arg-type]  # numpy and torch scalars too
    except (TypeError, ValueError, OverflowError):
        raise TrialFailure(f"objective returned {_shown(value)} (a {type(value).__name__}), "
                           "not a number; return a float") from None
    if math.isnan(number):
        raise TrialFailure("objective returned NaN; return a number (report a diverged "
                           "loss as a large value, or raise optuna.TrialPruned)")
    return number


def exit_failure(exc: SystemExit) -> TrialFailure:
    """The failure of a trial whose objective called ``sys.exit``, naming its code."""
    call = "sys.exit()" if exc.code is None else f"sys.exit({_shown(exc.code)})"
    return TrialFailure(f"objective called {call}")


def suggest(trial: optuna.Trial, space: Sequence[ParamSpec] | None = None) -> dict[str, Any]:
    """Suggest every parameter of the sweep's YAML search space; returns name -> value.

    Safe to call again inside the objective (Optuna returns the same values). Without
    ``space``, the study's stored search space is used.
    """
    params = list(space) if space is not None else list(
        read_settings(trial.study.user_attrs).search_space)
    values: dict[str, Any] = {}
    for p in params:
        if p.distribution is Distribution.CATEGORICAL:
            values[p.name] = trial.suggest_categorical(p.name, list(p.choices))
        elif p.distribution is Distribution.INT:
            assert p.low is not None and p.high is not None
            values[p.name] = trial.suggest_int(p.name, int(p.low), int(p.high),
                                               step=int(p.step or 1), log=p.log)
        else:
            assert p.low is not None and p.high is not None
            values[p.name] = trial.suggest_float(p.name, p.low, p.high, step=p.step, log=p.log)
    return values


def _shape(kind: str, log: bool, choices: Sequence[Any]) -> str:
    """A parameter as Optuna fixes it for a whole study: type, log scale, choices."""
    if kind == "categorical":
        return f"categorical of {list(choices)}"
    return f"{kind} on a {'log' if log else 'linear'} scale"


def _drawn_shape(dist: optuna.distributions.BaseDistribution) -> str:
    if isinstance(dist, optuna.distributions.CategoricalDistribution):
        return _shape("categorical", False, dist.choices)
    if isinstance(dist, optuna.distributions.IntDistribution):
        return _shape("int", dist.log, ())
    if isinstance(dist, optuna.distributions.FloatDistribution):
        return _shape("float", dist.log, ())
    return type(dist).__name__


def check_search_space(study: optuna.Study, space: Sequence[ParamSpec]) -> None:
    """AdvisorError naming the first parameter of ``space`` whose type, log scale or choices
    differ from how the study's trials drew it: Optuna refuses such a suggestion, so every
    new trial would fail (and be charged). A changed range is fine (Optuna takes it)."""
    drawn: dict[str, optuna.distributions.BaseDistribution] = {}
    for trial in study.get_trials(deepcopy=False):
        drawn.update(trial.distributions)
    for p in space:
        if p.name not in drawn:
            continue
        old, new = _drawn_shape(drawn[p.name]), _shape(str(p.distribution), p.log, p.choices)
        if old != new:
            raise AdvisorError(
                f"search_space.{p.name}: {new} does not fit study {study.study_name!r}, whose "
                f"trials drew it as {old}; a study keeps each parameter's type, log scale and "
                "choices: restore them, or give this search space a new 'study' name")


def load_entrypoint(spec: SweepSpec) -> Objective:
    """Import ``pkg.mod:func`` with the sweep.yaml folder first on ``sys.path``.

    Any failure is one AdvisorError line, as ``advisor recommend`` gives for model
    entrypoints (a syntax error names the file and line).
    """
    if spec.source_dir and spec.source_dir not in sys.path:
        sys.path.insert(0, spec.source_dir)
    try:
        return import_entrypoint(spec.entrypoint,
                                 where=f"; it must be importable from "
                                       f"{spec.source_dir or 'the current folder'}")
    except ProbeError as exc:
        raise AdvisorError(str(exc)) from exc


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
    (``advisor.sweep.accounting.instances``).
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
            charge = TrialCharge(
                started_at_s=started, price_usd_per_hour=price, share=share, wall_s=wall,
                cost_usd=usd(wall, price, share), error=errors.get(trial.number))
            state = ride_out("recording a trial's charge",
                             lambda: record_charge(trial.study, trial, charge))
            if state.is_finished():  # failed as stale while it ran: charged what it ran
                ended_elsewhere.add(trial.number)
                raise EndedElsewhere(f"trial {trial.number} was failed by another process "
                                     "(its heartbeat was late) while it still ran; charged "
                                     f"for the {wall:.1f} s it ran")

    return run
