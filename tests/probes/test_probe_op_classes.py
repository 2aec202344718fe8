"""Per-operator evidence: the harness's short profile after the measured steps, summed by
operator class (``ProbeResult.op_class_seconds``), on real torch on the CPU."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import tiny_workload
import torch
from probe_helpers import FakeClock, make_request, tiny_recipe

from probes.devices import CpuDevice
from probes.harness import PROFILE_STEPS, run_probe
from probes.op_classes import OpClass
from probes.store import ProbeStore
from probes.tune.profile import op_class_seconds, profile_op_classes
from probes.types import ProbeResult, ProbeStatus
from probes.vocabulary import DeviceKind


@pytest.fixture
def one_thread() -> Iterator[None]:
    """One intra-op thread: on a shared two-core machine, waiting OpenMP threads would count
    as operator time."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _probe(clock: Any = None, *, step_s: float | None = None, **options: Any) -> ProbeResult:
    """The tiny MLP probed on this CPU; a loose target so it settles long before its box
    (unless told otherwise). ``step_s``: each step lasts that long on ``clock``."""
    workload = replace(tiny_workload.build(hidden=256, features=128, clock=clock,
                                           step_s=(step_s or 0.0, 0.0)),
                       make_loader=None)  # no loader: the measured steps may use the whole box
    extra = {"clock": clock} if clock is not None else {}
    options = {"min_measured_steps": 10, "min_measure_s": 0.1, **options}
    return run_probe(make_request(time_box_s=60.0, input_check=False, target_rel_halfwidth=1.0,
                                  recipe=tiny_recipe(batch_size=64)),
                     workload=workload, device=CpuDevice(), **extra, **options)


@pytest.mark.usefixtures("one_thread")
def test_a_cpu_probe_records_its_step_by_operator_class() -> None:
    result = _probe()
    assert result.status is ProbeStatus.OK and result.error == ""
    classes = result.op_class_seconds
    assert {"matmul", "optimizer"} <= set(classes)  # two linear layers; AdamW's step
    assert set(classes) <= {str(c) for c in OpClass}
    total = sum(classes.values())
    assert result.step_time_p90_s is not None
    # Self CPU time of the operators of one step: positive, and not above the step itself
    # (a generous factor: the profiled steps are other steps than the measured ones).
    assert 0 < total <= 5 * result.step_time_p90_s


class _Broken:
    """Stands in for the autograd profiler: it cannot start."""

    def __init__(self, **_: Any) -> None:
        pass

    def __enter__(self) -> None:
        raise RuntimeError("profiler already running in this process")

    def __exit__(self, *_: object) -> None:
        return None


def test_a_failing_profiler_leaves_the_classes_out_and_the_probe_ok(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.autograd.profiler, "profile", _Broken)
    result = _probe(clock=FakeClock(tick=0.005))
    assert result.status is ProbeStatus.OK
    assert result.samples_per_second is not None and result.samples_per_second > 0
    assert result.op_class_seconds == {}
    assert "operator profile failed: RuntimeError: profiler already running" in result.error


def test_no_profile_is_taken_once_the_box_is_spent() -> None:
    # Steps of 1 s on this clock, and a minimum measuring time past the 60 s box: the
    # measured steps use the whole box.
    clock = FakeClock()
    result = _probe(clock=clock, step_s=1.0, min_measure_s=1000.0)
    assert result.status is ProbeStatus.OK and result.measured_steps >= 3
    assert result.op_class_seconds == {} and result.error == ""


def test_profile_steps_zero_takes_none() -> None:
    result = _probe(clock=FakeClock(tick=0.005), profile_steps=0)
    assert result.status is ProbeStatus.OK and result.op_class_seconds == {}


def test_profile_op_classes_starts_no_step_past_the_deadline() -> None:
    ran: list[int] = []
    clock = FakeClock()
    classes = profile_op_classes(lambda: ran.append(1), device=CpuDevice(), clock=clock,
                                 steps=PROFILE_STEPS, deadline_s=clock.now - 1.0)
    assert classes == {} and ran == []


class _XlaDevice(CpuDevice):
    """A CPU standing in for a TPU: the profiler would see tracing there, not device time."""

    kind = DeviceKind.XLA


def test_profile_op_classes_takes_none_where_it_cannot_see_device_time() -> None:
    ran: list[int] = []
    classes = profile_op_classes(lambda: ran.append(1), device=_XlaDevice(), clock=FakeClock(),
                                 steps=PROFILE_STEPS, deadline_s=float("inf"))
    assert classes == {} and ran == []


@pytest.mark.parametrize("steps", [1, PROFILE_STEPS])
def test_profile_op_classes_runs_at_most_its_steps(steps: int) -> None:
    ran: list[int] = []
    model = torch.nn.Linear(8, 8)

    def step() -> None:
        ran.append(1)
        model(torch.randn(4, 8)).sum().backward()

    classes = profile_op_classes(step, device=CpuDevice(), clock=FakeClock(),
                                 steps=steps, deadline_s=float("inf"))
    assert len(ran) == steps and "matmul" in classes


# --- summing profiler events (fakes of torch's FunctionEvent: the CUDA path, too) ---------

@dataclass
class _Kind:
    name: str


@dataclass
class _Event:
    name: str
    cpu_parent: _Event | None = None
    cpu_us: float = 0.0
    device_us: float = 0.0
    device: str = "CPU"
    is_async: bool = False

    @property
    def device_type(self) -> _Kind:
        return _Kind(self.device)

    @property
    def self_cpu_time_total(self) -> float:
        return self.cpu_us

    @property
    def self_device_time_total(self) -> float:
        return self.device_us


def _events() -> list[_Event]:
    linear = _Event("aten::linear", cpu_us=5, device_us=0)
    addmm = _Event("aten::addmm", linear, cpu_us=40, device_us=300)
    copy = _Event("aten::copy_", addmm, cpu_us=10, device_us=20)  # the bias, inside linear
    engine = _Event("autograd::engine::evaluate_function: AddmmBackward0", cpu_us=50)
    backward = _Event("AddmmBackward0", engine, cpu_us=20)
    mm = _Event("aten::mm", backward, cpu_us=60, device_us=500)
    view = _Event("aten::view", cpu_us=7)
    label = _Event("Optimizer.step#AdamW.step", cpu_us=100)
    foreach = _Event("aten::_foreach_add_", label, cpu_us=30, device_us=80)
    kernels = [_Event("sm90_gemm", device="CUDA", device_us=us) for us in (300, 20, 500, 80)]
    stray = _Event("a kernel no operator launched", device="CUDA", device_us=100)
    queued = _Event("aten::mm", is_async=True, cpu_us=1000, device_us=1000)
    return [linear, addmm, copy, engine, backward, mm, view, label, foreach, *kernels, stray,
            queued]


@pytest.mark.parametrize(("on_device", "expected"), [
    # CPU: aten operators' self CPU time under their outermost aten operator (linear holds
    # addmm and its bias copy); the optimizer's label and the autograd engine count nothing.
    (False, {"matmul": (5 + 40 + 10 + 60) / 2e6, "optimizer": 30 / 2e6}),
    # CUDA: each operator's own kernels; the kernel nothing launched counts as other.
    (True, {"matmul": (300 + 20 + 500) / 2e6, "optimizer": 80 / 2e6, "other": 100 / 2e6}),
])
def test_op_class_seconds_of_events(on_device: bool, expected: dict[str, float]) -> None:
    classes = op_class_seconds(_events(), on_device=on_device, steps=2)
    assert classes == pytest.approx(expected)


def test_op_class_seconds_round_trip_through_the_store(tmp_path: Path) -> None:
    result = ProbeResult(
        probe_id="p-ops", offer_key="local", workload_fingerprint="fp", status=ProbeStatus.OK,
        batch_size=8, samples_per_second=100.0, measured_steps=10,
        op_class_seconds={"matmul": 0.012, "elementwise": 0.003, "optimizer": 0.0015})
    assert ProbeResult.from_json(result.to_json()) == result
    store = ProbeStore(f"sqlite:///{tmp_path / 'probes.db'}")
    try:
        store.record(result)
        assert store.get("p-ops").op_class_seconds == result.op_class_seconds
    finally:
        store.close()
