"""The code bundle a cloud instance unpacks: self-sufficient with only torch installed."""

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
from probes.types import ProbeResult, ProbeStatus


def _names(bundle: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        return tar.getnames()


def test_bundle_holds_the_package_and_the_workload_folder() -> None:
    bundle, remote = make_bundle(make_request())
    names = _names(bundle)
    assert "probes/harness.py" in names and "workload/tiny_workload.py" in names
    assert not any("__pycache__" in n for n in names)
    assert remote.recipe.base_dir == f"{REMOTE_DIR}/workload"


def test_boot_script_arms_the_switch_before_anything_else() -> None:
    script = boot_script(fetch=["fetch-it"], upload_result="up-r", upload_log="up-l",
                         python="/opt/py", shutdown_after_s=601)
    lines = script.splitlines()
    assert lines[1].startswith("shutdown -h +11")
    assert lines.index("fetch-it") < lines.index("up-l") < lines.index("[ -f result.json ] && up-r")
    assert lines[-1] == "shutdown -h now"


@pytest.mark.slow
def test_harness_runs_from_the_bundle_with_only_torch(tmp_path: Path) -> None:
    request = make_request(time_box_s=0.5, input_check=False)
    bundle, remote = make_bundle(request)
    with tarfile.open(fileobj=io.BytesIO(bundle), mode="r:gz") as tar:
        tar.extractall(tmp_path, filter="data")
    remote_json = remote.to_json().replace(REMOTE_DIR, str(tmp_path))
    (tmp_path / "request.json").write_text(remote_json)
    site = sysconfig.get_paths()["purelib"]
    # -S: no .pth files, so the editable install of pricing/advisor is invisible
    check = subprocess.run([sys.executable, "-S", "-c", "import pricing"], cwd=tmp_path,
                           env={"PYTHONPATH": f"{tmp_path}:{site}"}, capture_output=True)
    assert check.returncode != 0
    subprocess.run([sys.executable, "-S", "-m", "probes.harness", "request.json", "result.json"],
                   cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{site}"}, check=True,
                   timeout=120)
    result = ProbeResult.from_json((tmp_path / "result.json").read_text())
    assert result.status is ProbeStatus.OK, result.error
