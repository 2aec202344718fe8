"""Launchers by name: ``local``, ``aws``, ``gcp``, ``gcp-tpu`` and ``fake``.

Each module is imported only when its launcher is asked for, so cloud SDKs stay unloaded; the
launcher contract (``base``) only when one of its names is first read, so that importing a
module here that does not need it (``cost_check``'s dollar formats) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from probes._lazy import lazy_exports
from probes.errors import ProbeError

if TYPE_CHECKING:
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
    from probes.launchers.base import Launcher

    if name not in LAUNCHERS:
        raise ProbeError(f"unknown launcher {name!r}; known are {', '.join(sorted(LAUNCHERS))}")
    module_name, class_name = LAUNCHERS[name]
    cls = getattr(importlib.import_module(module_name), class_name)
    assert isinstance(cls, type) and issubclass(cls, Launcher)
    return cls


def make_launcher(name: str, **options: Any) -> Launcher:
    """An instance of the launcher ``name`` built with ``options``."""
    return launcher_class(name)(**options)


_HOME = {name: "base" for name in ("TAG_EXPIRES", "TAG_MANAGED", "TAG_PROBE_ID", "LaunchFailed",
                                   "LaunchHandle", "Launcher", "probe_tags")}
__getattr__, __dir__ = lazy_exports(__name__, _HOME, globals(), __all__)
