"""Workload spec, profile, throughput model, ranking and sweeps."""

from advisor.errors import AdvisorError, SpecError

__all__ = ["AdvisorError", "SpecError"]
