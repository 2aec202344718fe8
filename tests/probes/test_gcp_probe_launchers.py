"""GCP specifics: the VM asks to be deleted at max_run_duration, GPUs attach, stockouts move
on to the next zone, and TPU VMs get their runtime."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from probe_envs import GcpEnv, GcpTpuEnv
from probe_helpers import make_request

from probes.errors import ProbeError
from probes.launchers import LaunchFailed
from probes.launchers.gcp import GcpLauncher, split_machine_type
from probes.launchers.gcp_tpu import GcpTpuLauncher
from probes.orchestrate import run_probes
from probes.store import ProbeStore
from probes.types import ProbeStatus


def test_instance_deletes_itself_and_carries_labels_and_gpus() -> None:
    env = GcpEnv()
    handle = env.launcher.launch(env.request("g1"))
    (zone, body) = env.compute.inserted[0]
    assert zone == "us-central1-a" and handle.location == zone
    assert body.scheduling.instance_termination_action == "DELETE"
    assert body.scheduling.max_run_duration.seconds > 0
    assert body.scheduling.provisioning_model == "STANDARD"
    assert dict(body.labels)["advisor-probe-id"] == "g1"
    (gpu,) = body.guest_accelerators
    assert gpu.accelerator_type.endswith("nvidia-tesla-t4") and gpu.accelerator_count == 1
    script = dict((i.key, i.value) for i in body.metadata.items)["startup-script"]
    assert "shutdown -h +" in script and "gs://advisor-test-probes/advisor-probes/g1" in script
    env.launcher.terminate(handle)
    assert env.compute.instances == {}
    assert env.storage.buckets["advisor-test-probes"] == {}


def test_stockout_moves_to_the_next_zone() -> None:
    env = GcpEnv(no_capacity={"us-central1-a"})
    request = make_request("g2", "gcp:a2-highgpu-1g:us-central1:spot")
    handle = env.launcher.launch(request)
    assert handle.location == "us-central1-b"
    assert env.compute.inserted[-1][1].scheduling.provisioning_model == "SPOT"
    assert not env.compute.inserted[-1][1].guest_accelerators   # A2 has its GPU built in
    env.launcher.terminate(handle)


def test_stockout_everywhere_is_launch_failed_and_leaves_nothing(tmp_path: Path) -> None:
    env = GcpEnv(no_capacity={f"us-central1-{s}" for s in "abc"})
    store = ProbeStore(f"sqlite:///{tmp_path / 'p.db'}")
    (result,) = run_probes([env.request("g3")], launcher_for=lambda _r: env.launcher, store=store)
    assert result.status is ProbeStatus.LAUNCH_FAILED
    assert "no capacity in any zone" in result.error
    assert env.compute.instances == {} and env.launcher.live_probe_ids() == []
    assert env.storage.buckets["advisor-test-probes"] == {}


def test_tpu_node_gets_runtime_and_labels() -> None:
    env = GcpTpuEnv()
    handle = env.launcher.launch(env.request("t1"))
    (node,) = env.tpu.nodes.values()
    assert node.accelerator_type == "v5litepod-8"
    assert node.runtime_version == "v2-alpha-tpuv5-lite"
    assert dict(node.labels)["advisor-probe-id"] == "t1"
    env.launcher.terminate(handle)
    assert env.tpu.nodes == {}


def test_tpu_launcher_refuses_gpu_offers() -> None:
    with pytest.raises(LaunchFailed, match="cannot run"):
        GcpTpuEnv().launcher.launch(make_request("t2", "gcp:a2-highgpu-1g:us-central1"))


@pytest.mark.parametrize(("machine", "expected"), [
    ("n1-standard-8+1xT4", ("n1-standard-8", "nvidia-tesla-t4", 1)),
    ("n1-highmem-16+4xV100", ("n1-highmem-16", "nvidia-tesla-v100", 4)),
    ("g2-standard-8", ("g2-standard-8", None, 0)),              # L4 built in
])
def test_split_machine_type(machine: str, expected: tuple[str, str | None, int]) -> None:
    assert split_machine_type(machine) == expected


@pytest.mark.parametrize("launcher", [GcpLauncher, GcpTpuLauncher])
def test_an_empty_project_is_refused_saying_how_to_set_it(
        launcher: type[GcpLauncher | GcpTpuLauncher]) -> None:
    with pytest.raises(ProbeError, match=rf"^{launcher.name} launcher: project is required "
                                         r"\(set --gcp-project or GOOGLE_CLOUD_PROJECT\)"):
        launcher(project="", bucket="b")


def test_unknown_gpu_is_named() -> None:
    with pytest.raises(ProbeError, match="unknown GPU 'X9'"):
        split_machine_type("n1-standard-8+1xX9")


def test_tpu_stockout_everywhere_is_launch_failed_and_leaves_nothing() -> None:
    env = GcpTpuEnv()
    env.tpu.no_capacity = {f"us-west4-{s}" for s in "abc"}
    with pytest.raises(LaunchFailed, match=r"^gcp-tpu gcp:tpu-v5litepod-8:us-west4: no capacity "
                                           r"in any zone \(us-west4-a: .*STOCKOUT"):
        env.launcher.launch(env.request("t3"))
    assert env.tpu.nodes == {}
    assert env.storage.buckets["advisor-test-probes"] == {}


@pytest.mark.parametrize(("make_env", "label"), [(GcpEnv, "gcp"), (GcpTpuEnv, "gcp-tpu")])
def test_other_google_error_is_launch_failed_and_deletes_the_objects(
        make_env: type[GcpEnv], label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.api_core.exceptions import PermissionDenied

    env = make_env()

    def refuse(**_: object) -> None:
        raise PermissionDenied("compute.instances.create denied")

    client = env.tpu if isinstance(env, GcpTpuEnv) else env.compute
    monkeypatch.setattr(client, "create_node" if isinstance(env, GcpTpuEnv) else "insert", refuse)
    request = env.request("e1")
    with pytest.raises(LaunchFailed, match=rf"^{label} {re.escape(request.offer_key)}: .*denied"):
        env.launcher.launch(request)
    assert env.storage.buckets["advisor-test-probes"] == {}
