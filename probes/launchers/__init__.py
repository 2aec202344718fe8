"""Launchers by name: ``local``, ``aws``, ``gcp``, ``gcp-tpu`` and ``fake``.

Each module is imported only when its launcher is asked for, so cloud SDKs stay unloaded.
"""

from __future__ import annotations

import importlib
from typing import Any

from probes.errors import ProbeError
from probes.launchers.base import (
    TAG_EXPIRES,
    TAG_MANAGED,
    TAG_PROBE_ID,
    Launcher,
    LaunchFailed,
    LaunchHandle,
    probe_tags,
)

__all__ = [
    "LAUNCHERS",
    "TAG_EXPIRES",
    "TAG_MANAGED",
    "TAG_PROBE_ID",
    "LaunchFailed",
    "LaunchHandle",
    "Launcher",
    "launcher_class",
    "make_launcher",
    "probe_tags",
]

# name -> (module, class)
LAUNCHERS: dict[str, tuple[str, str]] = {
    "local": ("probes.launchers.local", "LocalLauncher"),
    "aws": ("probes.launchers.aws", "AwsLauncher"),
    "gcp": ("probes.launchers.gcp", "GcpLauncher"),
    "gcp-tpu": ("probes.launchers.gcp_tpu", "GcpTpuLauncher"),
    "fake": ("probes.launchers.fake", "FakeLauncher"),
}


def launcher_class(name: str) -> type[Launcher]:
    """The launcher class registered as ``name``; ProbeError lists the known names."""
    if name not in LAUNCHERS:
        raise ProbeError(f"unknown launcher {name!r}; known are {', '.join(sorted(LAUNCHERS))}")
    module_name, class_name = LAUNCHERS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    assert isinstance(cls, type) and issubclass(cls, Launcher)
    return cls


def make_launcher(name: str, **options: Any) -> Launcher:
    """An instance of the launcher ``name`` built with ``options``."""
    return launcher_class(name)(**options)
