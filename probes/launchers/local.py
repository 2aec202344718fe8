"""The local launcher: the harness in a subprocess on this machine (offer key ``local``).

Each probe gets a folder under ``work_dir`` with the request, the result, a log, the
harness's progress lines (``progress.log``, ``probes.progress``) and
``meta.json`` (pid, process start time, expiry, and the launching process's pid and start
time) that ``gc`` reads to find strays. The child runs in its own session so terminate ends it
and anything it started; it also ends itself once its launcher is gone
(``probes.parent_watch``), and ``gc`` ends at once a probe whose launcher is gone, handing
back a result it finished (:meth:`LocalLauncher.orphan_results`) for the store.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

from probes.errors import ProbeError
from probes.launchers.base import Launcher, LaunchFailed, LaunchHandle, log_tail
from probes.parent_watch import PARENT_PID_ENV
from probes.progress import PROGRESS_ENV, ProgressReader
from probes.types import ProbeRequest, ProbeResult

__all__ = ["LocalLauncher"]


def _start_ticks(pid: int) -> str:
    """The process start time from /proc (guards against pid reuse); '' when unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _pid_alive(pid: int, ticks: str) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    if ticks and _start_ticks(pid) not in ("", ticks):
        return False
    try:  # a zombie has exited: it cannot write a result any more
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


class LocalLauncher(Launcher):
    """Runs ``python -m probes.harness`` in a subprocess; costs nothing.

    ``python`` is the interpreter to use (this one by default); ``env`` adds environment
    variables for the child (e.g. ``ADVISOR_PROBE_DEVICE=cpu``).
    """

    name = "local"
    boot_overhead_s = 5.0

    def __init__(self, work_dir: str | Path, *, python: str = sys.executable,
                 env: dict[str, str] | None = None, **options: Any) -> None:
        options.setdefault("poll_interval_s", 0.1)
        options.setdefault("grace_s", 30.0)
        super().__init__(**options)
        self.work_dir = Path(work_dir)
        _check_work_dir(self.work_dir)
        self.python = python
        self.env = dict(env or {})
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._progress: dict[str, ProgressReader] = {}

    def _dir(self, probe_id: str) -> Path:
        return self.work_dir / probe_id

    def launch(self, request: ProbeRequest) -> LaunchHandle:
        folder = self._dir(request.probe_id)
        try:
            folder.mkdir(parents=True, exist_ok=False)
        except OSError as exc:
            raise LaunchFailed(f"local probe {request.probe_id}: cannot create {folder}: {exc}"
                               ) from exc
        (folder / "request.json").write_text(request.to_json())
        env = {**os.environ, **self.env}
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        env[PARENT_PID_ENV] = str(os.getpid())  # the harness ends with this process
        env[PROGRESS_ENV] = str(folder / "progress.log")
        started = self.clock()
        try:
            with open(folder / "harness.log", "wb") as log:
                proc = subprocess.Popen(
                    [self.python, "-m", "probes.harness", str(folder / "request.json"),
                     str(folder / "result.json")],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=env, start_new_session=True,
                )
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise LaunchFailed(f"local probe {request.probe_id}: cannot start {self.python}: "
                               f"{exc}") from exc
        expires = self.expiry_for(request)
        meta = {"pid": proc.pid, "ticks": _start_ticks(proc.pid), "probe_id": request.probe_id,
                "expires_at": expires.timestamp(), "parent_pid": os.getpid(),
                "parent_ticks": _start_ticks(os.getpid())}
        (folder / "meta.json").write_text(json.dumps(meta))
        self._procs[request.probe_id] = proc
        self._progress[request.probe_id] = ProgressReader(folder / "progress.log")
        return LaunchHandle(request.probe_id, self.name, str(proc.pid), "local", started, expires,
                            {"folder": str(folder)})

    def poll(self, handle: LaunchHandle) -> ProbeResult | None:
        path = self._dir(handle.probe_id) / "result.json"
        if not path.exists():
            return None
        return ProbeResult.from_json(path.read_text())

    def progress(self, handle: LaunchHandle) -> list[str]:
        """Lines the harness appended to the probe folder's ``progress.log`` since the last
        call (a tune: one a configuration)."""
        reader = self._progress.get(handle.probe_id)
        return reader.new_lines() if reader is not None else []

    def is_alive(self, handle: LaunchHandle) -> bool:
        proc = self._procs.get(handle.probe_id)
        if proc is not None:
            return proc.poll() is None
        meta = self._meta(self._dir(handle.probe_id))
        return meta is not None and _pid_alive(int(meta["pid"]), str(meta["ticks"]))

    def failure_detail(self, handle: LaunchHandle) -> str:
        try:
            return log_tail((self._dir(handle.probe_id) / "harness.log").read_bytes())
        except OSError:
            return ""

    def terminate(self, handle: LaunchHandle) -> None:
        self._kill(handle.probe_id)
        self._progress.pop(handle.probe_id, None)
        shutil.rmtree(self._dir(handle.probe_id), ignore_errors=True)

    def _kill(self, probe_id: str) -> None:
        proc = self._procs.pop(probe_id, None)
        meta = self._meta(self._dir(probe_id))
        pid = proc.pid if proc is not None else (int(meta["pid"]) if meta else None)
        if pid is None:
            return
        if proc is None and meta and not _pid_alive(pid, str(meta["ticks"])):
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
            if proc is None:
                break
            try:
                proc.wait(timeout=5.0)
                break
            except subprocess.TimeoutExpired:
                continue

    @staticmethod
    def _meta(folder: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((folder / "meta.json").read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _tagged(self) -> list[tuple[Path, dict[str, Any]]]:
        if not self.work_dir.is_dir():
            return []
        found = []
        for folder in sorted(self.work_dir.iterdir()):
            meta = self._meta(folder)
            if meta is not None:
                found.append((folder, meta))
        return found

    def live_probe_ids(self) -> list[str]:
        return [str(m["probe_id"]) for _, m in self._tagged()
                if _pid_alive(int(m["pid"]), str(m["ticks"]))]

    @staticmethod
    def _orphaned(meta: dict[str, Any]) -> bool:
        """The process that launched the probe is gone (nobody will store its result)."""
        parent = meta.get("parent_pid")
        return parent is not None and not _pid_alive(int(parent), str(meta.get("parent_ticks",
                                                                                 "")))

    def orphan_results(self) -> list[ProbeResult]:
        """Results that probes whose launcher is gone finished writing, never stored by it
        (``advisor probes gc`` stores them before ending the probes)."""
        found = []
        for folder, meta in self._tagged():
            path = folder / "result.json"
            if self._orphaned(meta) and path.is_file():
                with contextlib.suppress(OSError, ValueError, ProbeError):
                    found.append(ProbeResult.from_json(path.read_text()))
        return found

    def gc(self, now: datetime, *, dry_run: bool = False) -> list[str]:
        """End every probe past its expiry and, at once, every probe whose launcher is gone."""
        ended = []
        for folder, meta in self._tagged():
            if float(meta["expires_at"]) >= now.timestamp() and not self._orphaned(meta):
                continue
            ended.append(f"pid {meta['pid']} ({meta['probe_id']})")
            if not dry_run:
                self._kill(str(meta["probe_id"]))
                shutil.rmtree(folder, ignore_errors=True)
        return ended


def _check_work_dir(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise ProbeError(f"probe work directory {path} is a file; remove it or set ADVISOR_HOME")
