"""A measurement counts only for the accelerator it ran on: harness, orchestrator and readers."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import tiny_workload
from probe_helpers import FakeClock, make_request, ok_result

from pricing import shipped_catalog
from probes.devices import CpuDevice
from probes.devices.check import checked, rechecked, result_accelerator
from probes.findings import findings_for
from probes.harness import oom_summary, run_probe
from probes.launchers.fake import FakeBehaviour, FakeLauncher
from probes.orchestrate import run_probes
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

TRN = "aws:trn1.2xlarge:us-east-1:on-demand"


@pytest.mark.parametrize(("device", "accelerator", "expected"), [
    ("cpu", None, None),                              # the CPU is no catalog accelerator
    ("cuda:Tesla T4", None, "T4"),                    # stored before the field existed
    ("cuda:NVIDIA H100 80GB HBM3", None, "H100-SXM"),  # read from the CUDA name
    ("cuda:Some Future GPU", None, None),             # unknown devices stay unnamed
    ("cuda:Tesla T4", "T4", "T4"),                    # recorded by the harness
])
def test_result_accelerator(device: str, accelerator: str | None, expected: str | None) -> None:
    result = replace(ok_result(make_request()), device=device, accelerator=accelerator)
    assert result_accelerator(result) == expected


def test_a_cpu_result_for_a_trainium_offer_is_wrong_device() -> None:
    result = replace(ok_result(make_request(offer_key=TRN)), device="cpu")
    wrong = checked(result, "Trainium1")
    assert wrong.status is ProbeStatus.WRONG_DEVICE
    assert "Trainium1" in wrong.error and "cpu" in wrong.error and "\n" not in wrong.error
    assert wrong.samples_per_second == result.samples_per_second  # kept for inspection
    assert checked(result, None) is result  # a local probe takes whatever device it has


def test_stored_results_are_rechecked_against_their_offer() -> None:
    catalog = shipped_catalog()
    good = replace(ok_result(make_request("g", offer_key="aws:g5.xlarge:us-east-1")),
                   device="cuda:NVIDIA A10G")
    bad = replace(ok_result(make_request("b", offer_key=TRN)), device="cpu")
    assert [r.status for r in rechecked([good, bad], catalog)] == [
        ProbeStatus.OK, ProbeStatus.WRONG_DEVICE]


def test_harness_refuses_to_measure_on_the_wrong_device() -> None:
    result = run_probe(make_request(accelerator="Trainium1"), workload=tiny_workload.build(),
                       device=CpuDevice())
    assert result.status is ProbeStatus.WRONG_DEVICE
    assert result.measured_steps == 0 and result.samples_per_second is None
    assert "Trainium1" in result.error and result.device == "cpu"


def test_harness_says_which_runtime_is_missing() -> None:
    result = run_probe(make_request(accelerator="Trainium1"), workload=tiny_workload.build(),
                       prefer_device="neuron")
    assert result.status is ProbeStatus.WRONG_DEVICE
    assert "Trainium1" in result.error and "neuron" in result.error.lower()
    local = run_probe(make_request(), workload=tiny_workload.build(), prefer_device="neuron")
    assert local.status is ProbeStatus.ERROR


def test_orchestrator_stores_a_fallback_as_wrong_device(tmp_path: Path) -> None:
    clock = FakeClock()

    class CpuFallback(FakeLauncher):
        """An instance that booted an image without the accelerator's runtime."""

        def poll(self, handle):  # type: ignore[no-untyped-def]
            found = super().poll(handle)
            return None if found is None else replace(found, device="cpu", accelerator=None)

    launcher = CpuFallback(lambda _r: FakeBehaviour(), clock=clock, sleep=clock.sleep)
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    (result,) = run_probes([make_request(offer_key=TRN, accelerator="Trainium1")],
                           launcher_for=lambda _r: launcher, store=store)
    assert result.status is ProbeStatus.WRONG_DEVICE
    assert store.list()[0].status is ProbeStatus.WRONG_DEVICE


def test_cuda_out_of_memory_is_summarised_in_one_line() -> None:
    text = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.19 GiB of which 1.05 GiB is free. Including non-PyTorch memory, this process "
            "has 78.13 GiB memory in use.\nOf the allocated memory 76.0 GiB is allocated by "
            "PyTorch.\nIf reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    assert oom_summary(text) == ("CUDA out of memory: tried to allocate 2.00 GiB with 1.05 GiB "
                                 "free of 79.19 GiB")
    assert oom_summary("DefaultCPUAllocator: can't allocate memory. More\nlines") == (
        "DefaultCPUAllocator: can't allocate memory")


def test_an_oom_finding_is_one_line_even_for_an_old_multiline_error() -> None:
    result = ProbeResult(probe_id="o", offer_key="local", workload_fingerprint="fp",
                         status=ProbeStatus.OOM, batch_size=512,
                         error="out of memory at batch 512: CUDA out of memory.\nmore\nlines")
    (finding,) = findings_for(result)
    assert "\n" not in finding.evidence and finding.evidence.endswith("CUDA out of memory.")
