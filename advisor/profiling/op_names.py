"""The aten operators one training step of a workload calls, for checking them against what a
non-CUDA backend (torch_xla, torch-neuronx, Gaudi's bridge) can run.

One step at batch 1 (forward under autocast at the workload's precision, backward, AdamW's
per-tensor update as on a non-CUDA device), traced on fake tensors with the CPU's dispatch (no
memory, no compute) under a dispatch mode that records the name of every ``aten`` operator:
the overload packet without namespace or overload (``convolution``, ``add_``,
``grid_sampler_2d``), as the operators reach a backend after autograd. Cached by the spec's
fingerprint beside the other profiles; a cold profile records them in its own pass (with CUDA's
semantics: the names are the same but for the multi-tensor optimizer's ``_foreach_`` ops,
recorded as their per-tensor op), so this trace runs only for a profile cached without them.
The built-in examples' sets are shipped (``_spec_files``).

Torch is imported only inside the tracing function; a cached or shipped set is read without it.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, cast

from advisor._time_limit import time_limit
from advisor.errors import AdvisorError
from advisor.profiling.fake_step import FakeStep, preload_torch
from advisor.profiling.op_profile import trace_with
from advisor.spec import Precision, WorkloadSpec
from pricing.files import write_cache
from probes import WorkloadRecipe

__all__ = ["NameCollector", "cached_step_op_names", "load_op_names", "op_names_json",
           "step_op_names", "store_op_names", "trace_op_names"]

_CACHE_VERSION = 1
_TRACE_BATCH = 1
_NAMESPACE = "aten::"
_FOREACH = "_foreach_"
# Traced sets by (fingerprint, folder the entrypoint imports from): a process asks once.
_MEMO: dict[tuple[str, str | None], frozenset[str]] = {}


def _recorder() -> Any:
    """A ``TorchDispatchMode`` collecting operator names while ``recording``; built lazily so
    this module imports without torch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class NameRecorder(TorchDispatchMode):  # type: ignore[misc,no-untyped-call]
        def __init__(self) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.recording = False
            self.names: set[str] = set()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            if self.recording:
                name = str(func.name())
                if name.startswith(_NAMESPACE):
                    name = name.removeprefix(_NAMESPACE).split(".")[0]
                    # a multi-tensor optimizer's op is its per-tensor op on a backend
                    self.names.add(name.removeprefix(_FOREACH))
            return func(*args, **(kwargs or {}))

    return NameRecorder()


class NameCollector:
    """Collects the aten operator names of every step ``run_fake_steps`` runs (enter ``mode()``
    among its observers and pass ``on_phase``): the separate CPU trace below, or the cold
    profile's one pass (``step_trace``), which then stores them with the profile. Raises
    ImportError without torch."""

    def __init__(self) -> None:
        self._recorder = _recorder()

    def mode(self) -> AbstractContextManager[Any]:
        """The dispatch mode that records names while a step runs."""
        return cast("AbstractContextManager[Any]", self._recorder)

    def on_phase(self, step: int, phase: str, _state: FakeStep) -> None:
        """Record from the set-up step on, leaving out making batches."""
        self._recorder.recording = step >= 1 and phase not in ("batch", "done")

    def result(self) -> frozenset[str]:
        """The names recorded so far."""
        return frozenset(self._recorder.names)


def trace_op_names(recipe: WorkloadRecipe, precision: Precision) -> frozenset[str]:
    """The aten operator names of one training step of ``recipe`` at ``precision`` (the set-up
    step and one steady step, both at batch 1, on fake CPU tensors).

    Raises AdvisorError when torch is missing or the step does not run on fake tensors.
    """
    return trace_with(NameCollector, "tracing the step's operators", recipe, precision,
                      (_TRACE_BATCH,), device="cpu", foreach=False).result()


def step_op_names(spec: WorkloadSpec) -> frozenset[str] | None:
    """The aten operator names one training step of ``spec`` calls, cached by its fingerprint
    (or shipped); None when torch is missing, the step does not trace, or tracing takes longer
    than ``profile.timeout_s`` (nothing is cached then). A process traces each spec once."""
    from advisor.profiling._spec_files import recipe_for

    key = (spec.fingerprint(), spec.source_dir)
    cached = _MEMO.get(key) or cached_step_op_names(spec)
    if cached is not None:
        _MEMO[key] = cached
        return cached
    limit = spec.profile.timeout_s
    preload_torch()
    try:
        with time_limit(limit, f"tracing the step's operators took more than {limit:g} s"):
            names = trace_op_names(recipe_for(spec, samples_per_device=_TRACE_BATCH),
                                   spec.precision)
    except AdvisorError:
        return None
    store_op_names(spec, names)
    return names


def store_op_names(spec: WorkloadSpec, names: frozenset[str]) -> None:
    """Keep ``names`` as the operator names of ``spec`` (in this process and on disk)."""
    _MEMO[(spec.fingerprint(), spec.source_dir)] = names
    path = _cache_file(spec)
    if path is not None:
        write_cache(path, op_names_json(names))


def op_names_json(names: frozenset[str]) -> str:
    """The JSON a set of operator names is cached (and shipped) as."""
    return json.dumps({"version": _CACHE_VERSION, "names": sorted(names)})


def cached_step_op_names(spec: WorkloadSpec) -> frozenset[str] | None:
    """The cached operator names of ``spec``, else the shipped ones (built-in examples), or
    None when there are none (or they are stale)."""
    from advisor.profiling._spec_files import cached_or_shipped

    return cached_or_shipped(spec, _cache_file(spec), ".opnames.json", load_op_names)


def _cache_file(spec: WorkloadSpec) -> Path | None:
    from advisor.storage import profile_cache_dir

    try:
        return profile_cache_dir() / f"{spec.fingerprint()}.opnames.json"
    except OSError:  # an unwritable ADVISOR_HOME: the profile has said so once already
        return None


def load_op_names(path: Path) -> frozenset[str] | None:
    """A cached set of operator names, or None when missing, stale or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
        return None
    names = data.get("names")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return frozenset(names)
