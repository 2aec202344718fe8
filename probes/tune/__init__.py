"""The tuner of ``advisor probe --tune``: what each checklist knob buys on the user's own step.

- ``knobs``: the knobs as data (which apply where, what each changes) and the plan of trials;
- ``runs``: one configuration built and fed (cached batch or the real loader);
- ``shares``: how the time box is shared (the baseline's cap, the later runs' windows, the
  skip for time); pure;
- ``tuner``: ``Tuner``, which measures the baseline, each knob, the best combination and a
  profile inside the request's time box;
- ``report``: ``TuneReport``, its rows and the settings chosen;
- ``profile``: ``StepProfile``, where a step's time goes (phases and top operators).

The names below are imported on first use, so ``probes.types`` (which holds a ``TuneReport``)
does not import the tuner, and nothing here imports torch until a run is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from probes._lazy import lazy_exports

if TYPE_CHECKING:
    from probes.tune.knobs import (
        COMPILER_BACKENDS,
        KNOBS,
        Combination,
        DeviceTraits,
        Knob,
        KnobPlan,
        KnobSpec,
        LoaderKind,
        Needs,
        Skipped,
        StepConfig,
        Trial,
        WorkloadTraits,
        combine,
        knob_spec,
        plan_knobs,
    )
    from probes.tune.profile import OperatorTime, StepProfile, profile_steps
    from probes.tune.report import RowKind, RowStatus, TuneReport, TuneRow, beats, chosen_settings
    from probes.tune.runs import BuiltRun, open_run, with_loader_settings, workload_traits
    from probes.tune.tuner import Tuner, progress_text

__all__ = [
    "COMPILER_BACKENDS",
    "KNOBS",
    "BuiltRun",
    "Combination",
    "DeviceTraits",
    "Knob",
    "KnobPlan",
    "KnobSpec",
    "LoaderKind",
    "Needs",
    "OperatorTime",
    "RowKind",
    "RowStatus",
    "Skipped",
    "StepConfig",
    "StepProfile",
    "Trial",
    "TuneReport",
    "TuneRow",
    "Tuner",
    "WorkloadTraits",
    "beats",
    "chosen_settings",
    "combine",
    "knob_spec",
    "open_run",
    "plan_knobs",
    "profile_steps",
    "progress_text",
    "with_loader_settings",
    "workload_traits",
]

_HOME = {
    "COMPILER_BACKENDS": "knobs", "KNOBS": "knobs", "Combination": "knobs", "DeviceTraits": "knobs",
    "Knob": "knobs", "KnobPlan": "knobs", "KnobSpec": "knobs", "LoaderKind": "knobs",
    "Needs": "knobs", "Skipped": "knobs", "StepConfig": "knobs", "Trial": "knobs",
    "WorkloadTraits": "knobs", "combine": "knobs", "knob_spec": "knobs", "plan_knobs": "knobs",
    "OperatorTime": "profile", "StepProfile": "profile", "profile_steps": "profile",
    "RowKind": "report", "RowStatus": "report", "TuneReport": "report", "TuneRow": "report",
    "beats": "report", "chosen_settings": "report", "BuiltRun": "runs", "open_run": "runs",
    "with_loader_settings": "runs", "workload_traits": "runs", "Tuner": "tuner",
    "progress_text": "tuner",
}


__getattr__, __dir__ = lazy_exports("probes.tune", _HOME, globals(), __all__)
