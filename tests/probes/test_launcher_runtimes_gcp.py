"""GCP (fake clients): GPU VMs boot the Deep Learning VM image with the CUDA device, TPU VMs get
their generation's runtime version and a startup script that installs pinned torch_xla first."""

from __future__ import annotations

import math
from typing import Any

import pytest
from probe_envs import GcpEnv, GcpTpuEnv
from probe_helpers import make_request

from probes.launchers import LaunchFailed
from probes.launchers.runtimes import TORCH_XLA_VERSION

DLVM = ("projects/deeplearning-platform-release/global/images/family/"
        "pytorch-2-7-cu128-ubuntu-2204-nvidia-570")


def _startup_script(metadata_items: Any) -> str:
    return str(dict((i.key, i.value) for i in metadata_items)["startup-script"])


@pytest.mark.parametrize("machine", [
    "a2-highgpu-1g",          # A100 40GB
    "a2-ultragpu-8g",         # A100 80GB
    "a3-highgpu-8g",          # H100
    "g2-standard-8",          # L4
    "n1-standard-8+1xT4",     # N1 with a guest T4
    "n1-highmem-16+4xV100",   # N1 with guest V100s
    "n1-standard-8+1xP100",   # N1 with a guest P100 (row unverified)
])
def test_gpu_vm_boots_the_deep_learning_vm_image_on_cuda(machine: str) -> None:
    env = GcpEnv()
    handle = env.launcher.launch(make_request("g1", f"gcp:{machine}:us-central1"))
    ((_, body),) = env.compute.inserted
    assert body.disks[0].initialize_params.source_image == DLVM
    script = _startup_script(body.metadata.items)
    assert "PY=/opt/conda/bin/python\n" in script
    assert "export ADVISOR_PROBE_DEVICE=cuda\n" in script
    env.launcher.terminate(handle)


def test_gpu_vm_without_a_known_family_starts_nothing() -> None:
    env = GcpEnv()
    with pytest.raises(LaunchFailed, match=r"^gcp n1-standard-8: no runtime for instance family "
                                           r"'n1'; known families are a2, a3, g2, n1\+P100"):
        env.launcher.launch(make_request("g2", "gcp:n1-standard-8:us-central1"))
    assert env.compute.inserted == []
    assert env.storage.buckets["advisor-test-probes"] == {}


def test_pinned_image_and_python_win_over_the_family() -> None:
    env = GcpEnv()
    env.launcher.image, env.launcher.python = "projects/p/global/images/mine", "/usr/bin/python3"
    handle = env.launcher.launch(make_request("g3", "gcp:g2-standard-8:us-central1"))
    ((_, body),) = env.compute.inserted
    assert body.disks[0].initialize_params.source_image == "projects/p/global/images/mine"
    assert "PY=/usr/bin/python3\n" in _startup_script(body.metadata.items)
    env.launcher.terminate(handle)


@pytest.mark.parametrize(("accelerator", "runtime_version"), [
    ("v2-8", "tpu-ubuntu2204-base"),         # v4 and older share the base image
    ("v3-32", "tpu-ubuntu2204-base"),
    ("v4-8", "tpu-ubuntu2204-base"),
    ("v5litepod-8", "v2-alpha-tpuv5-lite"),  # v5e
    ("v5p-32", "v2-alpha-tpuv5"),
    ("v6e-4", "v2-alpha-tpuv6e"),            # Trillium
])
def test_tpu_node_gets_its_generations_runtime_and_pinned_torch_xla(
        accelerator: str, runtime_version: str) -> None:
    env = GcpTpuEnv()
    handle = env.launcher.launch(make_request("t1", f"gcp:tpu-{accelerator}:us-west4"))
    (node,) = env.tpu.nodes.values()
    assert node.accelerator_type == accelerator
    assert node.runtime_version == runtime_version
    script = node.metadata["startup-script"]
    install = script.index(f"'torch_xla[tpu]=={TORCH_XLA_VERSION}'")
    assert script.index(f"'torch=={TORCH_XLA_VERSION}'") < install < script.index("-m probes.harness")
    assert "-f https://storage.googleapis.com/libtpu-releases/index.html" in script
    assert "export ADVISOR_PROBE_DEVICE=xla\n" in script
    assert "PY=python3\n" in script
    env.launcher.terminate(handle)


def test_unknown_tpu_generation_starts_nothing() -> None:
    env = GcpTpuEnv()
    with pytest.raises(LaunchFailed, match=r"^gcp-tpu v7-8: no runtime for instance family 'v7'"):
        env.launcher.launch(make_request("t2", "gcp:tpu-v7-8:us-west4"))
    assert env.tpu.nodes == {}
    assert env.storage.buckets["advisor-test-probes"] == {}


@pytest.mark.parametrize("find_batch", [False, True])   # the batch search has a time box of its own
def test_dead_mans_switch_covers_the_whole_run(find_batch: bool) -> None:
    env = GcpTpuEnv()
    request = make_request("t3", "gcp:tpu-v6e-4:us-west4", time_box_s=600.0, find_batch=find_batch)
    handle = env.launcher.launch(request)
    (node,) = env.tpu.nodes.values()
    minutes = math.ceil((env.launcher.boot_overhead_s + request.max_run_s + env.launcher.grace_s) / 60)
    assert f"shutdown -h +{minutes} " in node.metadata["startup-script"]
    env.launcher.terminate(handle)
