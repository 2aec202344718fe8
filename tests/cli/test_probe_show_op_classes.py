"""``advisor probes show``: the probe's time per step by operator class, in one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from advisor.storage import default_storage_url
from cli.main import advisor
from cli.probe_table import op_class_line
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

_CLASSES = {"matmul": 0.006, "elementwise": 0.003, "optimizer": 0.001}


def _result(device: str = "cuda:NVIDIA H100 80GB HBM3", **classes: float) -> ProbeResult:
    return ProbeResult(probe_id="ops1", offer_key="local", workload_fingerprint="fp",
                       status=ProbeStatus.OK, batch_size=32, samples_per_second=900.0,
                       measured_steps=40, device=device, op_class_seconds=classes)


@pytest.mark.parametrize(("device", "expected"), [
    # largest first, milliseconds per step and shares; which time it is
    ("cuda:NVIDIA H100 80GB HBM3", "operator classes (device time per step, profiled): "
                                   "matmul 6 ms (60%), elementwise 3 ms (30%), optimizer 1 ms (10%)"),
    ("cpu", "operator classes (CPU self time per step, profiled): "
            "matmul 6 ms (60%), elementwise 3 ms (30%), optimizer 1 ms (10%)"),
])
def test_op_class_line(device: str, expected: str) -> None:
    assert op_class_line(_result(device, **_CLASSES)) == expected


def test_op_class_line_picks_a_unit_per_class() -> None:
    line = op_class_line(_result("cpu", convolution=1.934, matmul=0.00697, other=8.6e-6))
    assert line.endswith("convolution 1.93 s (100%), matmul 6.97 ms (0%), other 8.6 µs (0%)")


def test_no_line_without_recorded_classes() -> None:
    assert op_class_line(_result()) == ""


def test_probes_show_prints_the_classes_and_json_holds_them() -> None:
    ProbeStore(default_storage_url()).record(_result(**_CLASSES))
    shown = CliRunner().invoke(advisor, ["probes", "show", "ops1"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "operator classes (device time per step, profiled): matmul 6 ms (60%)" in shown.stdout
    as_json = CliRunner().invoke(advisor, ["probes", "show", "ops1", "--json"])
    assert json.loads(as_json.stdout)["op_class_seconds"] == _CLASSES
