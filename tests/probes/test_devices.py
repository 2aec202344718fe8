"""The device seam under faked runtimes: which device is picked, and what it is named."""

from __future__ import annotations

import gc
import sys
import types
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

from probes.devices import (
    CpuDevice,
    CudaDevice,
    HpuDevice,
    NeuronDevice,
    XlaDevice,
    detect_device,
)
from probes.devices import cpu as devices
from probes.devices import xla as xla_devices
from probes.errors import ProbeError

_GIB = 2**30


def _fake_module(monkeypatch: pytest.MonkeyPatch, name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in attrs.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return module


class _FakeXlaModel:
    """What the harness uses of ``torch_xla.core.xla_model``, counting synchronizations."""

    def __init__(self) -> None:
        self.steps = 0

    def xla_device(self) -> torch.device:
        return torch.device("cpu")

    def xla_device_hw(self, device: torch.device) -> str:
        del device
        return "TPU"

    def mark_step(self) -> None:
        self.steps += 1

    def wait_device_ops(self) -> None:
        pass

    def get_memory_info(self, device: torch.device) -> dict[str, int]:
        del device
        return {"bytes_limit": 16 * _GIB, "bytes_used": 3 * _GIB}


@pytest.fixture
def cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with no CUDA (whatever this one has) and no TPU metadata in the environment."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("TPU_ACCELERATOR_TYPE", raising=False)


@pytest.fixture
def fake_xla(monkeypatch: pytest.MonkeyPatch, cpu_only: None) -> _FakeXlaModel:
    """torch_xla on a TPU whose runtime reports the device kind ``TPU v5 lite`` (v5e)."""
    xm = _FakeXlaModel()
    _fake_module(monkeypatch, "torch_xla")
    _fake_module(monkeypatch, "torch_xla.core")
    _fake_module(monkeypatch, "torch_xla.core.xla_model", **{
        name: getattr(xm, name) for name in
        ("xla_device", "xla_device_hw", "mark_step", "wait_device_ops", "get_memory_info")})
    _fake_module(monkeypatch, "torch_xla.runtime", global_runtime_device_attributes=lambda: [
        {"device_kind": "TPU v5 lite", "coords": [0, 0, 0], "core_on_chip": 0}])
    return xm


def test_a_tpu_is_named_by_its_device_kind(fake_xla: _FakeXlaModel) -> None:
    device = detect_device()
    assert isinstance(device, XlaDevice)
    assert (device.kind, device.name, device.accelerator) == ("xla", "TPU v5 lite", "TPU-v5e")
    assert device.total_memory_gib() == 16.0
    assert device.supports_bf16()
    device.synchronize()
    assert fake_xla.steps == 1


def test_a_tpu_without_a_device_kind_is_named_by_its_accelerator_type(
    fake_xla: _FakeXlaModel, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch_xla's runtime attributes carry coords, core_on_chip and num_cores, no kind
    _fake_module(monkeypatch, "torch_xla.runtime", global_runtime_device_attributes=lambda: [
        {"coords": [0, 0, 0], "core_on_chip": 0, "num_cores": 1}])
    monkeypatch.setenv("TPU_ACCELERATOR_TYPE", "v5litepod-8")
    assert (detect_device().name, detect_device().accelerator) == ("v5litepod-8", "TPU-v5e")
    monkeypatch.delenv("TPU_ACCELERATOR_TYPE")
    _fake_module(monkeypatch, "torch_xla._internal")
    _fake_module(monkeypatch, "torch_xla._internal.tpu",
                 get_tpu_env=lambda: {"ACCELERATOR_TYPE": "v6e-8", "TYPE": "V6E"})
    assert (detect_device().name, detect_device().accelerator) == ("v6e-8", "TPU-v6e")


def test_an_xla_device_with_no_tpu_name_keeps_its_hardware_type(
    fake_xla: _FakeXlaModel, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "torch_xla.runtime")
    device = detect_device()
    assert (device.name, device.accelerator) == ("TPU", None)   # measured, but not catalog evidence


def test_gaudi_comes_first_and_names_its_generation(
    fake_xla: _FakeXlaModel, monkeypatch: pytest.MonkeyPatch,
) -> None:
    hpu = types.SimpleNamespace(
        get_device_name=lambda: "GAUDI2", mem_get_info=lambda: (90 * _GIB, 94.6 * _GIB),
        synchronize=lambda: None, reset_peak_memory_stats=lambda: None,
        max_memory_allocated=lambda: 2 * _GIB)
    for name in ("habana_frameworks", "habana_frameworks.torch", "habana_frameworks.torch.core"):
        _fake_module(monkeypatch, name)
    monkeypatch.setattr(torch, "hpu", hpu, raising=False)
    device = detect_device()
    assert isinstance(device, HpuDevice)
    assert (device.kind, device.name, device.accelerator) == ("hpu", "GAUDI2", "Gaudi2")
    assert device.total_memory_gib() == pytest.approx(94.6)
    assert device.peak_memory_gib() == 2.0
    assert device.supports_bf16()


@pytest.fixture
def fake_neuron(fake_xla: _FakeXlaModel, monkeypatch: pytest.MonkeyPatch) -> _FakeXlaModel:
    """torch-neuronx on a trn1 instance (it runs on the XLA device, so torch_xla is there too)."""
    _fake_module(monkeypatch, "torch_neuronx")
    _fake_module(monkeypatch, "torch_neuronx.utils", get_platform_target=lambda: "trn1")
    return fake_xla


def test_neuron_comes_before_the_tpu_and_names_its_platform(fake_neuron: _FakeXlaModel) -> None:
    device = detect_device()
    assert isinstance(device, NeuronDevice)
    assert (device.kind, device.name, device.accelerator) == ("neuron", "trn1", "Trainium1")
    assert device.autocast_device_type == "xla"
    assert device.supports_bf16()
    device.synchronize()
    assert fake_neuron.steps == 1


def test_neuron_falls_back_to_the_instance_type(
    fake_neuron: _FakeXlaModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    def unsupported() -> str:
        raise RuntimeError("Unsupported Platform - inf2.xlarge")

    product_name = tmp_path / "product_name"
    product_name.write_text("inf2.xlarge\n")
    monkeypatch.setattr(sys.modules["torch_neuronx.utils"], "get_platform_target", unsupported)
    monkeypatch.setattr(NeuronDevice, "_name_sources", (
        xla_devices._neuron_platform_target, partial(xla_devices._read_text, str(product_name))))
    device = detect_device("neuron")
    assert (device.name, device.accelerator) == ("inf2.xlarge", "Inferentia2")


def test_cuda_is_named_by_torch_and_its_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cuda(monkeypatch, "NVIDIA H100 80GB HBM3", 79.1, (9, 0))
    device = detect_device()
    assert isinstance(device, CudaDevice)
    assert (device.kind, device.name, device.accelerator) == ("cuda", "NVIDIA H100 80GB HBM3",
                                                              "H100-SXM")
    assert device.supports_bf16() and device.supports_tf32()


def test_a_turing_gpu_has_no_bf16(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cuda(monkeypatch, "Tesla T4", 14.7, (7, 5))
    device = detect_device("cuda")
    assert device.accelerator == "T4"
    assert not device.supports_bf16()


def test_the_cpu_is_no_catalog_accelerator(cpu_only: None) -> None:
    device = detect_device()
    assert isinstance(device, CpuDevice)
    assert (device.kind, device.name, device.accelerator) == ("cpu", "cpu", None)
    assert not device.supports_bf16()


@pytest.mark.parametrize(("prefer", "why"), [
    ("neuron", "torch_neuronx is not importable: No module named 'torch_neuronx'"),
    ("xla", "torch_xla is not importable"),
    ("hpu", "habana_frameworks is not importable"),
    ("cuda", r"torch.cuda.is_available\(\) is False"),
])
def test_a_preferred_runtime_that_is_missing_is_an_error_not_the_cpu(
    cpu_only: None, prefer: str, why: str,
) -> None:
    with pytest.raises(ProbeError, match=f"ADVISOR_PROBE_DEVICE={prefer} but {why}"):
        detect_device(prefer)


def test_an_unknown_preference_lists_the_kinds(cpu_only: None) -> None:
    with pytest.raises(ProbeError, match="'tpu' is not a device kind; use one of hpu, neuron, xla"):
        detect_device("tpu")


def test_a_preferred_device_that_does_not_open_is_an_error(
    fake_xla: _FakeXlaModel, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_tpu() -> None:
        raise RuntimeError("TPU initialization failed: No ba16c7433 device found")

    monkeypatch.setattr(sys.modules["torch_xla.core.xla_model"], "xla_device", no_tpu)
    with pytest.raises(ProbeError, match="ADVISOR_PROBE_DEVICE=xla but its device did not open: "
                                         "RuntimeError: TPU initialization failed"):
        detect_device("xla")


def test_a_preference_for_an_installed_runtime_opens_it(fake_neuron: _FakeXlaModel) -> None:
    assert type(detect_device("xla")) is XlaDevice     # the TPU runtime, though Neuron is there
    assert isinstance(detect_device("cpu"), CpuDevice)


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux clear_refs")
def test_cpu_peak_memory_resets_and_leaves_out_the_runtime() -> None:
    device = CpuDevice()
    device.reset_peak_memory()
    assert device.peak_memory_gib() < 0.1           # torch's own memory is the baseline
    block = torch.ones(200 * 2**20 // 4)            # 200 MiB, written
    high = device.peak_memory_gib()
    del block
    gc.collect()
    device.reset_peak_memory()
    low = device.peak_memory_gib()
    assert high > 0.18
    assert low < high - 0.15


def test_cpu_peak_memory_without_proc_falls_back_to_maxrss(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    device = CpuDevice()
    monkeypatch.setattr(devices, "_CLEAR_REFS", tmp_path / "missing" / "clear_refs")
    monkeypatch.setattr(devices, "_PROC_STATUS", tmp_path / "missing" / "status")
    device.reset_peak_memory()                      # nothing to reset: no error
    peak = device.peak_memory_gib()
    assert peak is not None and peak >= 0.0


def _fake_cuda(monkeypatch: pytest.MonkeyPatch, name: str, memory_gib: float,
               capability: tuple[int, int]) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: name)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=0: capability)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=0: types.SimpleNamespace(
        total_memory=int(memory_gib * _GIB)))
