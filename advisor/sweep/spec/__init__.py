"""What a sweep is asked to do: ``sweep.yaml`` parsed and validated (``sweep_spec``), its
search space, sampler and pruner (``search_space``, ``sampling``), and the words its ending
is told in (``outcomes``: trial states and stop reasons). Pure values; nothing here imports
the other two parts of the sweep (``accounting``, ``run``).

The names of ``sweep_spec`` are re-exported here; ``sampling`` (which imports Optuna) is not.
"""

from __future__ import annotations

from advisor.sweep.spec.sweep_spec import (
    DEFAULT_MAX_CONSECUTIVE_FAILURES,
    BudgetSpec,
    CleanupSpec,
    CleanupState,
    Direction,
    Distribution,
    ParamSpec,
    PrunerKind,
    PrunerSpec,
    SamplerKind,
    SamplerSpec,
    SweepSpec,
    load_sweep_spec,
    parse_sweep_spec,
)

__all__ = [
    "DEFAULT_MAX_CONSECUTIVE_FAILURES",
    "BudgetSpec",
    "CleanupSpec",
    "CleanupState",
    "Direction",
    "Distribution",
    "ParamSpec",
    "PrunerKind",
    "PrunerSpec",
    "SamplerKind",
    "SamplerSpec",
    "SweepSpec",
    "load_sweep_spec",
    "parse_sweep_spec",
]
