"""The GCP launcher: a Compute Engine VM with guest GPUs per probe, result through GCS.

The VM deletes itself at ``scheduling.max_run_duration`` (``instance_termination_action``
DELETE), runs the harness from its startup script and writes the result to GCS. The image,
interpreter and device come from ``runtimes.GCP_GPU_RUNTIMES`` by machine family (``a2``,
``a3``, ``g2``, ``n1+T4``...); an unknown family is ``LaunchFailed``. Labels carry
the probe id and expiry. Capacity errors (stockouts) move on to the next zone. Clients are
injectable (``instances_client``, ``storage_client_factory``); google-cloud-* is imported
lazily and its errors become ProbeError here.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pricing import Cloud, Market, parse_offer_key
from probes.errors import ProbeError
from probes.launchers._gcs import GcpLauncherBase, expired, google_errors, is_not_found, resource_name
from probes.launchers.base import TAG_MANAGED, TAG_PROBE_ID, LaunchFailed, LaunchHandle
from probes.launchers.runtimes import GCP_GPU_RUNTIMES, Runtime, RuntimeTable, gcp_family

if TYPE_CHECKING:
    from probes.types import ProbeRequest

__all__ = ["GcpLauncher", "split_machine_type"]

_GPU_TYPES = {"T4": "nvidia-tesla-t4", "V100": "nvidia-tesla-v100", "P100": "nvidia-tesla-p100",
              "P4": "nvidia-tesla-p4", "K80": "nvidia-tesla-k80"}
_ALIVE = ("PROVISIONING", "STAGING", "RUNNING")


def split_machine_type(instance_type: str) -> tuple[str, str | None, int]:
    """``n1-standard-8+1xT4`` -> (machine type, GPU accelerator type, count); A2/A3/G2 have
    their GPUs built in (accelerator None)."""
    match = re.fullmatch(r"([a-z0-9-]+)\+(\d+)x([A-Za-z0-9]+)", instance_type)
    if match is None:
        return instance_type, None, 0
    gpu = match.group(3).upper()
    if gpu not in _GPU_TYPES:
        raise ProbeError(f"gcp offer {instance_type!r}: unknown GPU {gpu!r}; known are "
                         f"{', '.join(sorted(_GPU_TYPES))}")
    return match.group(1), _GPU_TYPES[gpu], int(match.group(2))


def _default_instances_client() -> Any:
    from google.cloud import compute_v1

    return compute_v1.InstancesClient()


class GcpLauncher(GcpLauncherBase):
    """Probes on Compute Engine in ``project``; results in ``gs://bucket/key_prefix/``.

    ``zones`` maps region -> zones to try in order (default ``-a``, ``-b``, ``-c``);
    ``runtimes`` picks image, interpreter and setup per machine family; ``image`` and
    ``python``, when given, pin them for every machine type.
    """

    name = "gcp"
    boot_overhead_s = 180.0
    cloud = Cloud.GCP  # billed as pricing.billing.BILLING_RULES says

    @classmethod
    def family(cls, offer_key: str) -> str:
        """``gcp:a2-highgpu-1g:...`` -> ``a2`` (the runtime table's family)."""
        return gcp_family(parse_offer_key(offer_key).instance_type)

    def __init__(self, *, instances_client: Any = None, runtimes: RuntimeTable = GCP_GPU_RUNTIMES,
                 image: str | None = None, **options: Any) -> None:
        super().__init__(runtimes=runtimes, **options)
        self._instances = instances_client
        self.ambient_credentials = self.ambient_credentials or instances_client is None
        self.image = image

    def runtime_for(self, instance_type: str) -> Runtime:
        """The machine family's runtime with the pinned image and python applied."""
        runtime = self.runtimes.for_instance(instance_type)
        return replace(runtime, image=self.image or runtime.image,
                       python=self.python or runtime.python)

    def _client(self) -> Any:
        if self._instances is None:
            self._instances = _default_instances_client()
        return self._instances

    def _instance(self, request: ProbeRequest, zone: str, script: str, market: Market,
                  instance_type: str, image: str) -> Any:
        from google.cloud import compute_v1

        machine, gpu, count = split_machine_type(instance_type)
        expires = self.expiry_for(request)
        scheduling = compute_v1.Scheduling(
            on_host_maintenance="TERMINATE", automatic_restart=False,
            instance_termination_action="DELETE",
            max_run_duration=compute_v1.Duration(
                seconds=int(expires.timestamp() - self.now().timestamp())),
            provisioning_model="SPOT" if market is Market.SPOT else "STANDARD",
        )
        return compute_v1.Instance(
            name=resource_name(request),
            machine_type=f"zones/{zone}/machineTypes/{machine}",
            labels=self._labels(request, expires),
            scheduling=scheduling,
            guest_accelerators=[compute_v1.AcceleratorConfig(
                accelerator_type=f"zones/{zone}/acceleratorTypes/{gpu}", accelerator_count=count,
            )] if gpu else [],
            disks=[compute_v1.AttachedDisk(
                boot=True, auto_delete=True,
                initialize_params=compute_v1.AttachedDiskInitializeParams(
                    source_image=image, disk_size_gb=100,
                    labels=self._labels(request, expires)),
            )],
            network_interfaces=[compute_v1.NetworkInterface(
                network="global/networks/default",
                access_configs=[compute_v1.AccessConfig(name="External NAT")])],
            service_accounts=[compute_v1.ServiceAccount(
                email="default", scopes=["https://www.googleapis.com/auth/devstorage.read_write"])],
            metadata=compute_v1.Metadata(items=[
                compute_v1.Items(key="startup-script", value=script),
                compute_v1.Items(key="install-nvidia-driver", value="True")]),
        )

    def launch(self, request: ProbeRequest) -> LaunchHandle:
        ref = parse_offer_key(request.offer_key)
        if ref.cloud is None or ref.cloud.value != "gcp" or ref.is_tpu:
            raise LaunchFailed(f"gcp launcher cannot run offer {request.offer_key!r}")
        with self.area.launching("gcp", request):
            runtime = self.runtime_for(ref.instance_type)
            script = self.area.upload(request, runtime=runtime, shutdown_after_s=(
                self.boot_s(request.offer_key) + request.max_run_s + self.grace_s))
            name = resource_name(request)

            def insert(zone: str) -> None:
                body = self._instance(request, zone, script, ref.market, ref.instance_type,
                                      runtime.image)
                self._client().insert(project=self.project, zone=zone,
                                      instance_resource=body).result()

            zone = self._first_zone(request, ref.region, insert, lambda z: self._delete(z, name))
            return LaunchHandle(request.probe_id, self.name, name, zone, self.clock(),
                                self.expiry_for(request))

    def is_alive(self, handle: LaunchHandle) -> bool:
        try:
            inst = self._client().get(project=self.project, zone=handle.location,
                                      instance=handle.resource_id)
        except google_errors() as exc:
            if is_not_found(exc):
                return False
            raise ProbeError(f"gcp: cannot read {handle.resource_id}: {exc}") from exc
        return str(inst.status) in _ALIVE

    def _delete(self, zone: str, name: str) -> None:
        try:
            self._client().delete(project=self.project, zone=zone, instance=name).result()
        except google_errors() as exc:
            if not is_not_found(exc):
                raise ProbeError(f"gcp: could not delete {name} in {zone}: {exc}; run "
                                 "'advisor probes gc' or delete it in the console") from exc

    def terminate(self, handle: LaunchHandle) -> None:
        self._delete(handle.location, handle.resource_id)
        self.area.delete(handle.probe_id)

    def _tagged(self) -> list[tuple[str, Any]]:
        found = []
        try:
            pages = self._client().aggregated_list(
                project=self.project, filter=f"labels.{TAG_MANAGED}=true")
            for zone_key, scoped in pages:
                for inst in getattr(scoped, "instances", []) or []:
                    found.append((zone_key.split("/")[-1], inst))
        except google_errors() as exc:
            raise ProbeError(f"gcp: cannot list probe instances in {self.project}: {exc}") from exc
        return found

    def live_probe_ids(self) -> list[str]:
        return sorted(dict(i.labels)[TAG_PROBE_ID] for _, i in self._tagged()
                      if str(i.status) in _ALIVE and TAG_PROBE_ID in dict(i.labels))

    def gc(self, now: datetime, *, dry_run: bool = False) -> list[str]:
        ended = []
        for zone, inst in self._tagged():
            if expired(dict(inst.labels), now):
                ended.append(str(inst.name))
                if not dry_run:
                    self._delete(zone, inst.name)
        return ended
