"""A local probe's harness dies with the process that launched it (kill -9 included), and
``gc`` ends and stores what an orphaned probe left (issue 33)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from probe_helpers import HERE, make_request, ok_result, tiny_recipe

from probes.launchers.local import LocalLauncher

REPO = str(Path(HERE).parents[1])

PARENT = """
import sys, time
from probe_helpers import make_request, tiny_recipe
from probes.launchers.local import LocalLauncher

launcher = LocalLauncher(sys.argv[1], env={"OMP_NUM_THREADS": "1"})
handle = launcher.launch(make_request(
    "orphan", recipe=tiny_recipe(function="build_hang", started=sys.argv[2]), time_box_s=600.0,
    input_check=False))
print(handle.resource_id, flush=True)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    """Alive and not a zombie (an exited child nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _wait(predicate, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def test_the_harness_dies_within_seconds_of_a_killed_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(PARENT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((REPO, HERE))}
    child = 0
    started = tmp_path / "started"  # the harness is past its imports, building the model
    with subprocess.Popen([sys.executable, str(script), str(tmp_path / "runs"), str(started)],
                          stdout=subprocess.PIPE, env=env, text=True) as parent:
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            # waited for, not slept on: a busy machine may take longer than any fixed sleep
            assert _wait(started.exists, 120.0), "the harness never started building"
            assert _running(child)
            parent.kill()  # kill -9
            parent.wait(timeout=10)
            assert _wait(lambda: not _running(child), 5.0), "the harness outlived its parent"
        finally:
            parent.kill()
            if child and _running(child):
                os.killpg(child, signal.SIGKILL)


def test_gc_ends_an_orphan_at_once_and_returns_its_finished_result(tmp_path: Path) -> None:
    launcher = LocalLauncher(tmp_path / "runs", env={"OMP_NUM_THREADS": "1"})
    hang = launcher.launch(make_request("hang", recipe=tiny_recipe(function="build_hang"),
                                        time_box_s=600.0, input_check=False))
    done = make_request("done", recipe=tiny_recipe(function="build_hang"), time_box_s=600.0)
    finished = launcher.launch(done)
    (tmp_path / "runs" / "done" / "result.json").write_text(ok_result(done).to_json())
    # as a later 'advisor probes gc' sees them: the launching process is gone
    for folder in ("hang", "done"):
        meta = tmp_path / "runs" / folder / "meta.json"
        meta.write_text(meta.read_text().replace(f'"parent_pid": {os.getpid()}',
                                                 '"parent_pid": 999999999'))
    later = LocalLauncher(tmp_path / "runs")
    now = datetime.now(UTC)  # long before either probe expires
    assert [r.probe_id for r in later.orphan_results()] == ["done"]
    ended = later.gc(now)
    assert sorted(ended) == sorted([f"pid {hang.resource_id} (hang)",
                                    f"pid {finished.resource_id} (done)"])
    assert _wait(lambda: not _running(int(hang.resource_id)), 5.0)
    assert later.live_probe_ids() == []
    for handle in (hang, finished):
        launcher.terminate(handle)  # reaps the children this process started
