"""The local profile of a workload, measured on this machine with no GPU: FLOPs and memory
per sample (``profile``), the peak of a training step traced on fake tensors
(``memory_trace``), its operator mix (``op_profile``), the names of the operators it calls
(``op_names``, for checking them off CUDA), the per-device runtime overhead
(``runtime_overhead``) and the built-in examples' profiles shipped with the package
(``shipped``).

The names below are imported on first use (``import advisor.profiling`` never imports torch).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor._lazy import lazy_exports

if TYPE_CHECKING:
    from advisor.profiling._spec_files import recipe_for
    from advisor.profiling.fake_step import preload_torch
    from advisor.profiling.memory_trace import trace_peak_bytes
    from advisor.profiling.op_names import step_op_names
    from advisor.profiling.op_profile import (
        COMPUTE_CLASSES,
        REFERENCE_OP_MIX_JSON,
        OpClass,
        OpCost,
        OpMix,
        op_mix_for_spec,
        reference_op_mixes,
    )
    from advisor.profiling.profile import WorkloadProfile, needs_measuring, profile_workload
    from advisor.profiling.runtime_overhead import overhead_for_accelerator, overhead_for_vendor
    from advisor.profiling.shipped import builtin_example_specs, write_shipped_profiles

__all__ = [
    "COMPUTE_CLASSES",
    "OpClass",
    "OpCost",
    "OpMix",
    "REFERENCE_OP_MIX_JSON",
    "WorkloadProfile",
    "builtin_example_specs",
    "needs_measuring",
    "op_mix_for_spec",
    "overhead_for_accelerator",
    "overhead_for_vendor",
    "preload_torch",
    "profile_workload",
    "recipe_for",
    "reference_op_mixes",
    "step_op_names",
    "trace_peak_bytes",
    "write_shipped_profiles",
]

_HOME = {
    "COMPUTE_CLASSES": "op_profile",
    "OpClass": "op_profile",
    "OpCost": "op_profile",
    "OpMix": "op_profile",
    "REFERENCE_OP_MIX_JSON": "op_profile",
    "WorkloadProfile": "profile",
    "builtin_example_specs": "shipped",
    "needs_measuring": "profile",
    "op_mix_for_spec": "op_profile",
    "overhead_for_accelerator": "runtime_overhead",
    "overhead_for_vendor": "runtime_overhead",
    "preload_torch": "fake_step",
    "profile_workload": "profile",
    "recipe_for": "_spec_files",
    "reference_op_mixes": "op_profile",
    "step_op_names": "op_names",
    "trace_peak_bytes": "memory_trace",
    "write_shipped_profiles": "shipped",
}

__getattr__, __dir__ = lazy_exports("advisor.profiling", _HOME, globals(), __all__)
