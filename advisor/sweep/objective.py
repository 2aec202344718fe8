"""The user's objective: imported from ``pkg.mod:func``, and the YAML search space it samples.

An objective written for ``advisor sweep`` is a plain Optuna objective; ``suggest(trial)``
suggests every parameter of sweep.yaml's ``search_space`` (stored on the study, so any
worker and the objective itself find it).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import optuna

from advisor.errors import AdvisorError
from advisor.sweep.spec import Distribution, ParamSpec, SweepSpec
from advisor.sweep.state import read_settings
from probes.errors import ProbeError
from probes.workload import import_entrypoint  # the one line `recommend` prints too

__all__ = [
    "INTERRUPTED",
    "Objective",
    "TrialFailure",
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
