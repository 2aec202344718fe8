"""What the GCP launchers share: the bundle and result in GCS, the startup script, error codes,
and ``GcpLauncherBase`` (project, bucket, zones, runtimes; results and logs read from GCS).

The instance reads the bundle and request with ``gsutil`` (its service account needs storage
read/write scope) and writes ``result.json`` and ``harness.log`` next to them.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from probes.errors import ProbeError
from probes.launchers._bundle import boot_script, make_bundle
from probes.launchers.base import TAG_EXPIRES, Launcher, LaunchFailed, LaunchHandle, log_tail, probe_tags
from probes.launchers.credentials import check_gcp_credentials
from probes.launchers.runtimes import Runtime, RuntimeTable

if TYPE_CHECKING:
    from probes.types import ProbeRequest, ProbeResult

__all__ = ["CAPACITY_MARKERS", "GcpLauncherBase", "GcsArea", "default_storage_client",
           "first_zone_with_capacity", "gcp_labels", "google_errors", "is_capacity_error",
           "is_not_found", "resource_name"]

CAPACITY_MARKERS = ("ZONE_RESOURCE_POOL_EXHAUSTED", "STOCKOUT", "does not have enough resources",
                    "RESOURCE_EXHAUSTED", "resource pool exhausted", "UNSUPPORTED_OPERATION")


def google_errors() -> tuple[type[Exception], ...]:
    """The google.api_core and google.auth exception roots (imported lazily): an expired or
    revoked credential mid-probe is a Google error like any other, not a crash."""
    from google.api_core.exceptions import GoogleAPIError
    from google.auth.exceptions import GoogleAuthError

    return (GoogleAPIError, GoogleAuthError)


def is_not_found(exc: Exception) -> bool:
    """True for a 404 from any Google client."""
    from google.api_core.exceptions import NotFound

    return isinstance(exc, NotFound)


def is_capacity_error(exc: Exception) -> bool:
    """True when the zone has no capacity for the machine (try the next zone)."""
    text = str(exc)
    return any(marker.lower() in text.lower() for marker in CAPACITY_MARKERS)


def first_zone_with_capacity(label: str, zones: Iterable[str], create: Callable[[str], None],
                             cleanup: Callable[[str], None]) -> str:
    """Call ``create(zone)`` zone by zone until one works and return that zone. A capacity
    error calls ``cleanup(zone)`` (a failed create may leave a stub behind) and moves on; any
    other Google error propagates. ``LaunchFailed`` (starting with ``label``) lists the
    refusals when no zone had capacity."""
    refused = []
    for zone in zones:
        try:
            create(zone)
        except google_errors() as exc:
            if not is_capacity_error(exc):
                raise
            refused.append(f"{zone}: {str(exc)[:120]}")
            cleanup(zone)
            continue
        return zone
    raise LaunchFailed(f"{label}: no capacity in any zone ({'; '.join(refused)}); try another "
                       "region or on-demand")


def default_storage_client() -> Any:
    """A google-cloud-storage client with the ambient credentials (imported lazily)."""
    return importlib.import_module("google.cloud.storage").Client()


def resource_name(request: ProbeRequest) -> str:
    """The instance or TPU node name of a probe (lowercase, '-' for '_', at most 63 chars)."""
    return f"advisor-probe-{request.probe_id}".lower().replace("_", "-")[:63]


def gcp_labels(tags: dict[str, str]) -> dict[str, str]:
    """Tags as GCP labels (lowercase letters, digits, '-' and '_')."""
    return {k: "".join(c if c.isalnum() or c in "-_" else "-" for c in v.lower())
            for k, v in tags.items()}


def expired(labels: dict[str, str], now: datetime) -> bool:
    """True when the resource's expiry label is missing, unreadable or past."""
    try:
        return float(labels.get(TAG_EXPIRES, "0")) < now.timestamp()
    except ValueError:
        return True


class GcsArea:
    """The probe's objects under ``gs://bucket/prefix/probe_id/`` through a storage client."""

    def __init__(self, client_factory: Any, bucket: str, prefix: str) -> None:
        self._factory = client_factory
        self._client: Any = None
        self.bucket = bucket
        self.prefix = prefix.strip("/")

    def _bucket(self) -> Any:
        if self._client is None:
            self._client = self._factory()
        return self._client.bucket(self.bucket)

    @contextlib.contextmanager
    def launching(self, label: str, request: ProbeRequest) -> Iterator[None]:
        """Around a launch: when it fails, the probe's objects are deleted and a Google error
        becomes ``LaunchFailed`` starting with ``label`` and the offer key."""
        try:
            yield
        except LaunchFailed:
            self.delete(request.probe_id)
            raise
        except google_errors() as exc:
            self.delete(request.probe_id)
            raise LaunchFailed(f"{label} {request.offer_key}: {exc}") from exc

    def key(self, probe_id: str, name: str) -> str:
        """The object name of one file of a probe."""
        return f"{self.prefix}/{probe_id}/{name}"

    def upload(self, request: ProbeRequest, *, runtime: Runtime, shutdown_after_s: float) -> str:
        """Upload bundle and request; return the startup script that runs them on ``runtime``."""
        if not self.bucket:
            raise ProbeError("gcp: no GCS bucket for probe results; pass --gcp-bucket or set "
                             "ADVISOR_GCP_BUCKET")
        bundle, remote = make_bundle(request)
        bucket = self._bucket()
        bucket.blob(self.key(request.probe_id, "bundle.tar.gz")).upload_from_string(bundle)
        bucket.blob(self.key(request.probe_id, "request.json")).upload_from_string(
            remote.to_json())
        base = f"gs://{self.bucket}/{self.prefix}/{request.probe_id}"
        return boot_script(
            fetch=[f"gsutil -q cp {base}/bundle.tar.gz {base}/request.json ."],
            upload_result=f"gsutil -q cp result.json {base}/result.json",
            upload_log=f"gsutil -q cp harness.log {base}/harness.log",
            runtime=runtime, shutdown_after_s=shutdown_after_s,
        )

    def read(self, probe_id: str, name: str) -> bytes | None:
        """An object's bytes, None when it does not exist (yet)."""
        try:
            return bytes(self._bucket().blob(self.key(probe_id, name)).download_as_bytes())
        except google_errors() as exc:
            if is_not_found(exc):
                return None
            raise ProbeError(f"gcp: cannot read gs://{self.bucket}/{self.key(probe_id, name)}: "
                             f"{exc}") from exc

    def result(self, handle: LaunchHandle) -> ProbeResult | None:
        """The probe's result once the instance wrote it."""
        from probes.types import ProbeResult

        body = self.read(handle.probe_id, "result.json")
        return ProbeResult.from_json(body) if body is not None else None

    def log_tail(self, probe_id: str) -> str:
        """The last lines of the harness log, if uploaded."""
        with contextlib.suppress(ProbeError):
            return log_tail(self.read(probe_id, "harness.log"))
        return ""

    def delete(self, probe_id: str) -> None:
        """Delete every object of a probe (best effort)."""
        with contextlib.suppress(*google_errors()):
            bucket = self._bucket()
            for blob in bucket.list_blobs(prefix=self.key(probe_id, "")):
                blob.delete()


class GcpLauncherBase(Launcher):
    """A GCP launcher's common part: ``project`` (required), results in
    ``gs://bucket/key_prefix/``, ``zones`` (region -> zones to try in order, default ``-a``,
    ``-b``, ``-c``), ``runtimes`` per machine family and an optional pinned ``python``.
    Subclasses launch, check and delete their resource."""

    def __init__(
        self,
        *,
        project: str,
        bucket: str,
        runtimes: RuntimeTable,
        storage_client_factory: Callable[[], Any] = default_storage_client,
        zones: Mapping[str, Sequence[str]] | None = None,
        python: str | None = None,
        key_prefix: str = "advisor-probes",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if not project:
            raise ProbeError(f"{self.name} launcher: project is required (set --gcp-project or "
                             "GOOGLE_CLOUD_PROJECT)")
        self.project = project
        self.area = GcsArea(storage_client_factory, bucket, key_prefix)
        # an injected storage client brings its own credentials (subclasses add their client)
        self.ambient_credentials = storage_client_factory is default_storage_client
        self.zones = {k: list(v) for k, v in (zones or {}).items()}
        self.runtimes = runtimes
        self.python = python

    def check_credentials(self) -> None:
        """``MissingCredentials`` when a client built here would find no application default
        credentials (not when every client is injected)."""
        if self.ambient_credentials:
            check_gcp_credentials()

    def _labels(self, request: ProbeRequest, expires: datetime) -> dict[str, str]:
        """The probe's tags as GCP labels, expiring at ``expires``."""
        return gcp_labels(probe_tags(request.probe_id, expires))

    def _first_zone(self, request: ProbeRequest, region: str, create: Callable[[str], None],
                    cleanup: Callable[[str], None]) -> str:
        """``first_zone_with_capacity`` over the region's zones (``zones``, else -a, -b, -c)."""
        zones = self.zones.get(region) or [f"{region}-{s}" for s in "abc"]
        return first_zone_with_capacity(f"{self.name} {request.offer_key}", zones, create, cleanup)

    def poll(self, handle: LaunchHandle) -> ProbeResult | None:
        return self.area.result(handle)

    def failure_detail(self, handle: LaunchHandle) -> str:
        return self.area.log_tail(handle.probe_id)
