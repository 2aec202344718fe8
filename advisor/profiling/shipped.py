"""The profiles shipped for the built-in examples, and how they are made.

``advisor/data/profiles/<fingerprint>.json``, ``.ops.json`` and ``.opnames.json`` are the
profile, operator mix and operator names of every ``examples/*.yaml`` whose model is a
built-in, traced afresh: the JSON a first run caches, looked up after the user's cache
(``_spec_files.shipped_profile_file``). ``index.json`` says which example each fingerprint is
and the torch version that traced them. ``python -m advisor.throughput.shipped_artifacts``
writes them (with the shipped throughput model); it needs torch and a source checkout.
"""

from __future__ import annotations

import json
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.profiling._spec_files import SHIPPED_PROFILES_DIR
from advisor.profiling.op_names import op_names_json
from advisor.profiling.op_profile import op_mix_json
from advisor.profiling.profile import measure_workload, profile_json
from advisor.spec import WorkloadSpec, load_workload_spec

__all__ = ["EXAMPLES_DIR", "INDEX_JSON", "REGENERATE_COMMAND", "SUFFIXES",
           "builtin_example_specs", "traced_files", "write_shipped_profiles"]

REGENERATE_COMMAND = "python -m advisor.throughput.shipped_artifacts"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent.parent / "examples"
INDEX_JSON = SHIPPED_PROFILES_DIR / "index.json"
SUFFIXES = (".json", ".ops.json", ".opnames.json")  # profile, operator mix, operator names


def builtin_example_specs(folder: Path = EXAMPLES_DIR) -> dict[str, WorkloadSpec]:
    """The specs of ``folder/*.yaml`` whose model is a built-in, by file name. AdvisorError
    where there is no such folder (an installed package: regenerate from a checkout)."""
    if not folder.is_dir():
        raise AdvisorError(f"no examples folder at {folder}: run {REGENERATE_COMMAND} in a "
                           "source checkout")
    specs = {path.name: load_workload_spec(path) for path in sorted(folder.glob("*.yaml"))}
    return {name: spec for name, spec in specs.items() if spec.model.builtin is not None}


def traced_files(spec: WorkloadSpec) -> dict[str, str]:
    """The JSON of a fresh trace of ``spec`` by file suffix (``SUFFIXES``): what a first run
    caches. AdvisorError where the one pass over the step does not finish (a built-in must
    trace: fix the tracer) or torch is missing."""
    profile, traced = measure_workload(spec)
    if traced is None or traced.op_mix is None or traced.op_names is None:
        problem = (traced.problem if traced is not None else "") or "no operator mix or names"
        raise AdvisorError(f"{spec.name}: one pass over its training step did not finish "
                           f"({problem}); nothing to ship")
    return {".json": profile_json(profile), ".ops.json": op_mix_json(traced.op_mix),
            ".opnames.json": op_names_json(traced.op_names)}


def write_shipped_profiles(specs: dict[str, WorkloadSpec],
                           folder: Path = SHIPPED_PROFILES_DIR) -> list[Path]:
    """Trace ``specs`` (by example file name) into ``folder``, replacing the JSON files there,
    and write its ``index.json``; the paths written."""
    import torch

    traced = {spec.fingerprint(): traced_files(spec) for spec in specs.values()}
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.json"):
        old.unlink()
    written = []
    for fingerprint, files in traced.items():
        for suffix, text in files.items():
            path = folder / f"{fingerprint}{suffix}"
            path.write_text(text + "\n")
            written.append(path)
    index = {"torch": torch.__version__,
             "examples": {spec.fingerprint(): name for name, spec in sorted(specs.items())}}
    path = folder / INDEX_JSON.name
    path.write_text(json.dumps(index, indent=1) + "\n")
    return [*written, path]
