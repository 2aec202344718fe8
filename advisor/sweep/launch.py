"""``advisor sweep sweep.yaml --workers N --launch``: the workers on cloud instances of the offer.

Built on the probe launchers (``probes.launchers``): ``SweepAwsLauncher`` is the AWS probe
launcher with another payload. Each instance gets the same tags as a probe (so ``advisor
probes gc`` also finds a forgotten one), the same dead-man's switch (power-off, which
terminates, after the sweep's ``max_hours`` or a day) and capacity fallback across zones;
its boot script fetches a bundle (the ``advisor``, ``pricing`` and ``probes`` packages, the
sweep.yaml folder and the storage URL, through presigned S3 URLs so the URL is not in the
user-data) and runs ``python -m advisor.sweep.workers SWEEP_YAML --storage URL``, then
powers off.

``run_launched`` starts N instances, shows progress from the study, and terminates every
instance when the workers are done, when the budget stops the study (once no trial is
running, or after a grace period) or when the command is interrupted.
"""

from __future__ import annotations

import io
import logging
import math
import tarfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import optuna

from advisor.errors import AdvisorError
from advisor.sweep.spec import SweepSpec
from probes.errors import ProbeError
from probes.launchers import Launcher, LaunchHandle
from probes.launchers.aws import AwsLauncher
from probes.offer_keys import parse_offer_key
from probes.types import ProbeRequest
from probes.workload import WorkloadRecipe

__all__ = ["SweepAwsLauncher", "launch_requests", "make_sweep_launcher", "run_launched",
           "worker_boot_script"]

log = logging.getLogger("advisor.sweep")

REMOTE_DIR = "/opt/advisor-sweep"
_DEFAULT_BOX_S = 24 * 3600.0
_PACKAGES = ("advisor", "pricing", "probes")
_MAX_BUNDLE_BYTES = 50 * 2**20


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    name = Path(info.name).name
    skipped = name == "__pycache__" or name.startswith(".") or name.endswith((".pyc", ".db"))
    return None if skipped else info


def make_worker_bundle(spec: SweepSpec, storage_url: str) -> bytes:
    """tar.gz of our packages, the sweep.yaml folder (as ``sweep/``) and ``storage.txt``."""
    root = Path(__file__).resolve().parents[2]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for package in _PACKAGES:
            tar.add(root / package, arcname=package, filter=_skip)
        if spec.source_dir:
            tar.add(spec.source_dir, arcname="sweep", filter=_skip)
        data = storage_url.encode()
        info = tarfile.TarInfo("storage.txt")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    bundle = buffer.getvalue()
    if len(bundle) > _MAX_BUNDLE_BYTES:
        raise AdvisorError(f"--launch: the worker bundle is {len(bundle) / 2**20:.0f} MiB (limit "
                           f"{_MAX_BUNDLE_BYTES // 2**20} MiB); keep large files out of the "
                           f"sweep.yaml folder {spec.source_dir} (load data on the instance)")
    return bundle


def worker_boot_script(*, fetch: list[str], python: str, sweep_yaml_name: str,
                       shutdown_after_s: float) -> str:
    """Bash: arm the dead-man's switch, fetch the bundle, run one sweep worker, power off."""
    minutes = max(1, math.ceil(shutdown_after_s / 60.0))
    return "\n".join([
        "#!/bin/bash",
        f"shutdown -h +{minutes}  # dead-man's switch: power off (and terminate) regardless",
        f"mkdir -p {REMOTE_DIR} && cd {REMOTE_DIR} || exit 1",
        *fetch,
        "tar xzf bundle.tar.gz",
        f"PY={python}; [ -x \"$PY\" ] || PY=python3",
        "\"$PY\" -m pip install -q optuna sqlalchemy psycopg2-binary pyyaml boto3 > pip.log 2>&1",
        f"cd sweep && PYTHONPATH={REMOTE_DIR} \"$PY\" -m advisor.sweep.workers "
        f"{sweep_yaml_name} --storage \"$(cat {REMOTE_DIR}/storage.txt)\" > worker.log 2>&1",
        "shutdown -h now",
    ]) + "\n"


class SweepAwsLauncher(AwsLauncher):
    """The AWS probe launcher, booting a sweep worker instead of the probe harness."""

    def __init__(self, spec: SweepSpec, storage_url: str, *, sweep_yaml_name: str = "sweep.yaml",
                 **options: Any) -> None:
        options.setdefault("key_prefix", "advisor-sweeps")
        options.setdefault("grace_s", 600.0)
        super().__init__(**options)
        self.spec = spec
        self.storage_url = storage_url
        self.sweep_yaml_name = sweep_yaml_name

    def boot_payload(self, request: ProbeRequest, region: str, expires: datetime) -> str:
        s3 = self._client("s3", region)
        key = self._key(request.probe_id, "bundle.tar.gz")
        s3.put_object(Bucket=self.bucket, Key=key,
                      Body=make_worker_bundle(self.spec, self.storage_url))
        ttl = max(600, int(expires.timestamp() - self.now().timestamp()))
        url = s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": key},
                                        ExpiresIn=ttl)
        # The interpreter of the image the instance family boots (the Neuron venv on trn1).
        runtime = self.runtime_for(parse_offer_key(request.offer_key).instance_type)
        return worker_boot_script(
            fetch=[f"curl -fsS --retry 5 -o bundle.tar.gz '{url}'"], python=runtime.python,
            sweep_yaml_name=self.sweep_yaml_name,
            shutdown_after_s=self.boot_overhead_s + request.max_run_s + self.grace_s)


def make_sweep_launcher(spec: SweepSpec, storage_url: str, *, sweep_yaml_name: str,
                        bucket: str = "", **options: Any) -> Launcher:
    """The launcher for the sweep's offer (AWS offers only, for now)."""
    cloud = spec.instance.split(":")[0]
    if cloud != "aws":
        raise AdvisorError(f"--launch: instance {spec.instance!r} is on {cloud}; launching sweep "
                           "workers is implemented for AWS offers only; start 'advisor sweep "
                           "worker SWEEP_YAML' on each machine yourself")
    if not bucket:
        raise AdvisorError("--launch: AWS workers need an S3 bucket for their code bundle; set "
                           "ADVISOR_AWS_BUCKET=my-bucket (it also holds probe results)")
    return SweepAwsLauncher(spec, storage_url, sweep_yaml_name=sweep_yaml_name, bucket=bucket,
                            **options)


def launch_requests(spec: SweepSpec, workers: int, price_usd_per_hour: float) -> list[ProbeRequest]:
    """One request per worker instance, carrying its id, offer, time box and price."""
    box = spec.budget.max_hours * 3600 if spec.budget.max_hours else _DEFAULT_BOX_S
    run = uuid.uuid4().hex[:8]
    recipe = WorkloadRecipe(builtin=None, entrypoint=spec.entrypoint, base_dir=spec.source_dir)
    return [ProbeRequest(probe_id=f"sweep-{run}-{i}", offer_key=spec.instance, recipe=recipe,
                         workload_fingerprint=f"sweep:{spec.study}", time_box_s=box,
                         price_usd_per_hour=price_usd_per_hour) for i in range(workers)]


def check_reachable(storage_url: str, artifacts: str | None = None) -> None:
    """Warn when cloud workers cannot reach the storage (a loopback host) or the artifacts."""
    if artifacts and not artifacts.startswith(("s3://", "gs://")):
        log.warning("--launch: artifacts %r is a local directory; on cloud workers it is the "
                    "instance's disk, lost at termination and out of reach of cleanup; use "
                    "s3://bucket/prefix", artifacts)
    host = urlsplit(storage_url).hostname or ""
    if host in ("", "localhost") or host.startswith("127.") or host == "::1":
        log.warning("--launch: storage host %r is this machine's loopback; the cloud workers "
                    "will not reach it (give a storage URL they can reach)", host or "local")


def run_launched(launcher: Launcher, requests: list[ProbeRequest],
                 study: optuna.Study, *, stopped: Callable[[], bool],
                 on_poll: Callable[[], None] | None = None, poll_s: float = 10.0,
                 drain_s: float = 600.0, sleep: Callable[[float], None] = time.sleep) -> str:
    """Start one instance per request and watch them; always terminate them all on the way out.

    ``stopped()`` says whether the budget ended the study; then the instances are terminated
    as soon as no trial is running (at most ``drain_s`` later). Returns why it ended.
    """
    handles: list[LaunchHandle] = []
    try:
        for request in requests:
            try:
                handles.append(launcher.launch(request))
            except ProbeError as exc:
                raise AdvisorError(f"--launch: could not start worker {len(handles) + 1} of "
                                   f"{len(requests)}: {exc}") from exc
        log.info("launched %s", ", ".join(h.resource_id for h in handles))
        drain_until: float | None = None
        running = (optuna.trial.TrialState.RUNNING,)
        while True:
            if on_poll is not None:
                on_poll()
            if not any(launcher.is_alive(h) for h in handles):
                return "workers finished"
            if stopped():
                drain_until = drain_until or time.monotonic() + drain_s
                if not study.get_trials(deepcopy=False, states=running):
                    return "budget reached; no trial running"
                if time.monotonic() > drain_until:
                    return f"budget reached; trials still running after {drain_s:.0f} s"
            sleep(poll_s)
    finally:
        errors = []
        for handle in handles:
            try:
                launcher.terminate(handle)
            except ProbeError as exc:  # keep terminating the others
                errors.append(str(exc))
        if errors:
            log.error("could not terminate every worker instance: %s", "; ".join(errors))
