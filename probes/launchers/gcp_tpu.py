"""The GCP TPU launcher: a Cloud TPU VM per probe (``tpu-v5litepod-8`` style offers), result
through GCS, the harness on the XLA device.

The runtime (software) version per TPU generation and the startup steps come from
``runtimes.GCP_TPU_RUNTIMES``: the TPU VM images carry no torch, so the startup script installs
torch and ``torch_xla[tpu]``, pinned to one release, before the harness runs with
``ADVISOR_PROBE_DEVICE=xla``. TPU VMs have no ``max_run_duration``; the startup script's
shutdown timer stops the VM and ``gc`` deletes any node past its expiry label. The client is
injectable (``tpu_client``).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pricing import Cloud, Market, parse_offer_key
from probes.errors import ProbeError
from probes.launchers._gcs import GcpLauncherBase, expired, google_errors, is_not_found, resource_name
from probes.launchers.base import TAG_MANAGED, TAG_PROBE_ID, LaunchFailed, LaunchHandle
from probes.launchers.runtimes import GCP_TPU_RUNTIMES, Runtime, RuntimeTable, tpu_family

if TYPE_CHECKING:
    from probes.types import ProbeRequest

__all__ = ["GcpTpuLauncher"]

_ALIVE = ("CREATING", "STARTING", "READY", "RESTARTING")


def _default_tpu_client() -> Any:
    from google.cloud import tpu_v2

    return tpu_v2.TpuClient()


class GcpTpuLauncher(GcpLauncherBase):
    """Probes on Cloud TPU VMs in ``project``; ``zones`` maps region -> zones to try;
    ``runtimes`` picks runtime version and setup per TPU generation; ``python``, when given,
    pins the interpreter."""

    name = "gcp-tpu"
    boot_overhead_s = 420.0   # VM start plus pip installing torch, torch_xla and libtpu
    cloud = Cloud.GCP  # billed as pricing.billing.BILLING_RULES says (TPU VMs as Compute Engine)

    @classmethod
    def family(cls, offer_key: str) -> str:
        """``gcp:tpu-v5litepod-8:...`` -> ``v5litepod`` (the runtime table's family)."""
        return tpu_family(parse_offer_key(offer_key).instance_type)

    def __init__(self, *, tpu_client: Any = None, runtimes: RuntimeTable = GCP_TPU_RUNTIMES,
                 **options: Any) -> None:
        super().__init__(runtimes=runtimes, **options)
        self._tpu = tpu_client
        self.ambient_credentials = self.ambient_credentials or tpu_client is None

    def runtime_for(self, accelerator_type: str) -> Runtime:
        """The TPU generation's runtime, with the pinned python applied."""
        runtime = self.runtimes.for_instance(accelerator_type)
        return replace(runtime, python=self.python) if self.python else runtime

    def _client(self) -> Any:
        if self._tpu is None:
            self._tpu = _default_tpu_client()
        return self._tpu

    def _node_path(self, zone: str, node_id: str) -> str:
        return f"projects/{self.project}/locations/{zone}/nodes/{node_id}"

    def launch(self, request: ProbeRequest) -> LaunchHandle:
        from google.cloud import tpu_v2

        ref = parse_offer_key(request.offer_key)
        if not ref.is_tpu:
            raise LaunchFailed(f"gcp-tpu launcher cannot run offer {request.offer_key!r}")
        accelerator = ref.instance_type.removeprefix("tpu-")
        node_id = resource_name(request)
        with self.area.launching("gcp-tpu", request):
            runtime = self.runtime_for(accelerator)
            script = self.area.upload(request, runtime=runtime, shutdown_after_s=(
                self.boot_s(request.offer_key) + request.max_run_s + self.grace_s))
            expires = self.expiry_for(request)
            node = tpu_v2.Node(
                accelerator_type=accelerator, runtime_version=runtime.image,
                labels=self._labels(request, expires),
                metadata={"startup-script": script},
                scheduling_config=tpu_v2.SchedulingConfig(spot=ref.market is Market.SPOT),
            )
            zone = self._first_zone(
                request, ref.region,
                lambda z: self._client().create_node(
                    parent=f"projects/{self.project}/locations/{z}", node_id=node_id,
                    node=node).result(),
                lambda z: self._delete(self._node_path(z, node_id)))
            return LaunchHandle(request.probe_id, self.name, node_id, zone, self.clock(),
                                expires)

    def is_alive(self, handle: LaunchHandle) -> bool:
        try:
            node = self._client().get_node(name=self._node_path(handle.location,
                                                                 handle.resource_id))
        except google_errors() as exc:
            if is_not_found(exc):
                return False
            raise ProbeError(f"gcp-tpu: cannot read {handle.resource_id}: {exc}") from exc
        return getattr(node.state, "name", str(node.state)) in _ALIVE

    def _delete(self, path: str) -> None:
        try:
            self._client().delete_node(name=path).result()
        except google_errors() as exc:
            if not is_not_found(exc):
                raise ProbeError(f"gcp-tpu: could not delete {path}: {exc}; run "
                                 "'advisor probes gc' or delete it in the console") from exc

    def terminate(self, handle: LaunchHandle) -> None:
        self._delete(self._node_path(handle.location, handle.resource_id))
        self.area.delete(handle.probe_id)

    def _tagged(self) -> list[Any]:
        try:
            nodes = self._client().list_nodes(parent=f"projects/{self.project}/locations/-")
            return [n for n in nodes if dict(n.labels).get(TAG_MANAGED) == "true"]
        except google_errors() as exc:
            raise ProbeError(f"gcp-tpu: cannot list TPU nodes in {self.project}: {exc}") from exc

    def live_probe_ids(self) -> list[str]:
        return sorted(dict(n.labels)[TAG_PROBE_ID] for n in self._tagged()
                      if getattr(n.state, "name", str(n.state)) in _ALIVE
                      and TAG_PROBE_ID in dict(n.labels))

    def gc(self, now: datetime, *, dry_run: bool = False) -> list[str]:
        ended = []
        for node in self._tagged():
            if expired(dict(node.labels), now):
                ended.append(str(node.name))
                if not dry_run:
                    self._delete(str(node.name))
        return ended
