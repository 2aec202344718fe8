"""What a cloud instance needs to run the harness: a code bundle and a boot script.

The bundle is a tar.gz of the ``probes`` package and the ``pricing`` package it imports (the
harness maps the device it finds to a catalog accelerator; both are standard library only), and
the user's workload folder for an entrypoint recipe; the request sent along points ``base_dir``
at the unpacked folder.
"""

from __future__ import annotations

import io
import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from probes.errors import ProbeError
from probes.launchers.runtimes import Runtime

if TYPE_CHECKING:
    import tarfile

    from probes.types import ProbeRequest

__all__ = ["REMOTE_DIR", "boot_script", "make_bundle"]

REMOTE_DIR = "/opt/advisor-probe"
_MAX_BUNDLE_BYTES = 50 * 2**20
_PACKAGES = ("probes", "pricing")   # what the harness imports besides torch


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    name = Path(info.name).name
    if name == "__pycache__" or name.startswith(".") or name.endswith(".pyc"):
        return None
    return info


def make_bundle(request: ProbeRequest) -> tuple[bytes, ProbeRequest]:
    """The tar.gz bytes and the request as the instance should read it."""
    import tarfile  # with shutil, bz2 and lzma: only when a probe is launched

    root = Path(__file__).resolve().parents[2]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for package in _PACKAGES:
            tar.add(root / package, arcname=package, filter=_skip)
        base_dir = request.recipe.base_dir
        if request.recipe.entrypoint and base_dir:
            tar.add(base_dir, arcname="workload", filter=_skip)
    data = buffer.getvalue()
    if len(data) > _MAX_BUNDLE_BYTES:
        raise ProbeError(f"probe bundle is {len(data) / 2**20:.0f} MiB (limit 50 MiB); keep the "
                         "entrypoint's folder small (data is loaded on the instance)")
    remote = request
    if request.recipe.entrypoint and base_dir:
        remote = replace(request, recipe=replace(request.recipe, base_dir=f"{REMOTE_DIR}/workload"))
    return data, remote


def boot_script(*, fetch: list[str], upload_result: str, upload_log: str, runtime: Runtime,
                shutdown_after_s: float) -> str:
    """A bash boot script: arm the dead-man's switch, fetch, set up ``runtime``, run the
    harness with its python and device, upload, power off.

    ``fetch`` commands run in ``REMOTE_DIR`` and must leave ``bundle.tar.gz`` and
    ``request.json`` there; the upload commands read ``result.json`` and ``harness.log``.
    Setup output and a missing interpreter go to ``harness.log`` too; a failing setup line is
    logged and the script goes on, so the log is uploaded and the machine powers off.
    """
    minutes = max(1, math.ceil(shutdown_after_s / 60.0))
    setup = [f"{line} >> harness.log 2>&1 || echo 'advisor: setup step {i} failed' >> harness.log"
             for i, line in enumerate(runtime.setup, 1)]
    lines = [
        "#!/bin/bash",
        f"shutdown -h +{minutes}  # dead-man's switch: power off (and terminate) regardless",
        f"mkdir -p {REMOTE_DIR} && cd {REMOTE_DIR} || exit 1",
        *fetch,
        "tar xzf bundle.tar.gz",
        *setup,
        f"export ADVISOR_PROBE_DEVICE={runtime.device}",
        f"PY={runtime.python}",
        "command -v \"$PY\" > /dev/null || { echo \"advisor: $PY not on this image, using "
        "python3\" >> harness.log; PY=python3; }",
        f"PYTHONPATH={REMOTE_DIR} \"$PY\" -m probes.harness request.json result.json "
        ">> harness.log 2>&1",
        upload_log,
        f"[ -f result.json ] && {upload_result}",
        "shutdown -h now",
    ]
    return "\n".join(lines) + "\n"
