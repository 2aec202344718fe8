"""Probe harness, launchers (local, AWS, GCP) and the probe result store."""

from probes.errors import ProbeError

__all__ = ["ProbeError"]
