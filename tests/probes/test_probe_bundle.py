"""The code bundle a cloud instance unpacks: self-sufficient with only torch installed, and the
boot script that runs it on the offer's runtime."""

from __future__ import annotations

import io
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest
from probe_helpers import make_request

from probes.launchers._bundle import REMOTE_DIR, boot_script, make_bundle
from probes.launchers.runtimes import Runtime
from probes.types import ProbeResult, ProbeStatus
from probes.vocabulary import DeviceKind

RUNTIME = Runtime(image="img", python="/opt/py", device=DeviceKind.NEURON, source="test",
                  setup=("source /opt/venv/bin/activate", "pip install 'x==1.0'"))


def _names(bundle: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        return tar.getnames()


def test_bundle_holds_the_packages_and_the_workload_folder() -> None:
    bundle, remote = make_bundle(make_request())
    names = _names(bundle)
    assert "probes/harness.py" in names and "workload/tiny_workload.py" in names
    assert "pricing/data/device_names.csv" in names     # the harness names its accelerator
    assert not any(n.startswith(("advisor/", "cli/")) for n in names)
    assert not any("__pycache__" in n for n in names)
    assert remote.recipe.base_dir == f"{REMOTE_DIR}/workload"


def _script() -> list[str]:
    return boot_script(fetch=["fetch-it"], upload_result="up-r", upload_log="up-l",
                       runtime=RUNTIME, shutdown_after_s=601).splitlines()


def _index(lines: list[str], start: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start))


def test_boot_script_arms_the_switch_before_anything_else() -> None:
    lines = _script()
    assert lines[1].startswith("shutdown -h +11")
    assert lines.index("fetch-it") < lines.index("up-l") < lines.index("[ -f result.json ] && up-r")
    assert lines[-1] == "shutdown -h now"


def test_setup_runs_after_unpacking_and_before_the_harness_into_its_log() -> None:
    lines = _script()
    unpacked, harness = lines.index("tar xzf bundle.tar.gz"), _index(lines, f"PYTHONPATH={REMOTE_DIR}")
    for step, command in enumerate(RUNTIME.setup, 1):
        at = _index(lines, command)
        assert unpacked < at < harness
        assert lines[at] == (f"{command} >> harness.log 2>&1 || echo 'advisor: setup step {step} "
                             "failed' >> harness.log")


def test_harness_runs_on_the_runtime_python_and_device() -> None:
    lines = _script()
    harness = _index(lines, f"PYTHONPATH={REMOTE_DIR}")
    assert _index(lines, "export ADVISOR_PROBE_DEVICE=neuron") < harness
    assert _index(lines, "PY=/opt/py") < _index(lines, 'command -v "$PY"') < harness
    assert "PY=python3" in lines[_index(lines, 'command -v "$PY"')]   # a missing python is logged
    assert lines[harness].endswith('"$PY" -m probes.harness request.json result.json >> harness.log 2>&1')


@pytest.mark.slow
def test_harness_runs_from_the_bundle_with_only_torch(tmp_path: Path) -> None:
    # the default box (5 s): a tiny step measures its 3 steps in it even on a loaded machine
    # (0.5 s timed out under CPU contention); the harness stops as soon as it is steady
    request = make_request(input_check=False)
    bundle, remote = make_bundle(request)
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        tar.extractall(tmp_path, filter="data")
    remote_json = remote.to_json().replace(REMOTE_DIR, str(tmp_path))
    (tmp_path / "request.json").write_text(remote_json)
    site = sysconfig.get_paths()["purelib"]
    # -S: no .pth files, so the editable install of advisor (not in the bundle) is invisible
    check = subprocess.run([sys.executable, "-S", "-c", "import advisor"], cwd=tmp_path,
                           env={"PYTHONPATH": f"{tmp_path}:{site}"}, capture_output=True)
    assert check.returncode != 0
    subprocess.run([sys.executable, "-S", "-m", "probes.harness", "request.json", "result.json"],
                   cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{site}"}, check=True,
                   timeout=120)
    result = ProbeResult.from_json((tmp_path / "result.json").read_text())
    assert result.status is ProbeStatus.OK, result.error
