"""``advisor sweep sweep.yaml --workers N --launch``: the workers on cloud instances of the offer.

Built on the probe launchers (``probes.launchers``): ``SweepAwsLauncher`` is the AWS probe
launcher with another payload. Each instance gets the same tags as a probe (so ``advisor
probes gc`` also finds a forgotten one), the same dead-man's switch (power-off, which
terminates, after the sweep's ``max_hours`` or a day) and capacity fallback across zones;
its boot script fetches a bundle through a presigned S3 URL (``advisor.sweep.run.bundle``: our
packages, the explicit ``bundle_files`` of the sweep.yaml folder and the storage URL without
its password), installs the packages pinned to the client's versions, reads the password
from an SSM SecureString into ``PGPASSWORD``, and runs ``python -m advisor.sweep.workers
SWEEP_YAML --storage URL --worker-id ID``, then powers off.

``run_launched`` starts N instances, shows progress from the study, and terminates every
instance when the workers are done, when the budget stops the study (once no trial is
running, or after a grace period) or when the command is interrupted. It records each
instance on the study (``WorkerInstance``: EC2's ``LaunchTime``, and when it ended: when we
terminated it, the time in its ``StateTransitionReason``, or when we saw it gone), so the
instance time the cloud bills beyond the trials is charged (``advisor.sweep.accounting.instances``).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import shlex
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import optuna

from advisor.errors import AdvisorError
from advisor.storage import db_error_line
from advisor.sweep.accounting.instances import WorkerInstance, transition_time_s
from advisor.sweep.accounting.records import record_instance
from advisor.sweep.run.bundle import make_worker_bundle, url_password
from advisor.sweep.spec.outcomes import StopKind, StopReason
from advisor.sweep.spec.sweep_spec import SweepSpec
from pricing import parse_offer_key
from probes import AwsLauncher, LaunchHandle, ProbeError, ProbeRequest, WorkloadRecipe, sqlalchemy_url

__all__ = ["SweepAwsLauncher", "launch_requests", "make_sweep_launcher", "run_launched",
           "worker_boot_script", "worker_packages"]

log = logging.getLogger("advisor.sweep")

REMOTE_DIR = "/opt/advisor-sweep"
_DEFAULT_BOX_S = 24 * 3600.0


def worker_packages() -> list[str]:
    """pip requirements for a worker, pinned to the versions this client runs (the driver
    ``postgresql://`` resolves to here, psycopg 3 else psycopg2)."""
    from importlib.metadata import PackageNotFoundError, version

    driver = ("psycopg[binary]", "psycopg") if sqlalchemy_url("postgresql://h/d").startswith(
        "postgresql+psycopg:") else ("psycopg2-binary", "psycopg2-binary")  # the one used here
    pins = []
    for requirement, dist in (("optuna", "optuna"), ("sqlalchemy", "sqlalchemy"), driver,
                              ("pyyaml", "pyyaml"), ("boto3", "boto3")):
        try:
            pins.append(f"{requirement}=={version(dist)}")
        except PackageNotFoundError:
            pins.append(requirement)
    return pins


def _password_lines(parameter: str | None, region: str | None) -> list[str]:
    """Bash: export PGPASSWORD read from the SSM SecureString ``parameter`` (instance role)."""
    if not parameter:
        return []
    read = ("import boto3,sys; print(boto3.client('ssm', region_name=sys.argv[1]).get_parameter("
            "Name=sys.argv[2], WithDecryption=True)['Parameter']['Value'])")
    return [f"PGPASSWORD=\"$(\"$PY\" -c \"{read}\" {shlex.quote(region or '')} "
            f"{shlex.quote(parameter)} 2>> pip.log)\" || {{ echo 'cannot read {parameter}' "
            ">> pip.log; shutdown -h now; exit 1; }",
            "export PGPASSWORD"]


def worker_boot_script(*, fetch: list[str], python: str, sweep_yaml_name: str,
                       shutdown_after_s: float, password_parameter: str | None = None,
                       region: str | None = None, worker_id: str = "") -> str:
    """Bash: arm the dead-man's switch, fetch the bundle, install the client's pinned
    packages (``worker_packages``), read the database password from SSM into ``PGPASSWORD`` (when the storage
    has one), run one sweep worker (named ``worker_id`` on its trials), power off."""
    minutes = max(1, math.ceil(shutdown_after_s / 60.0))
    named = f" --worker-id {shlex.quote(worker_id)}" if worker_id else ""
    pins = " ".join(shlex.quote(p) for p in worker_packages())
    return "\n".join([
        "#!/bin/bash",
        f"shutdown -h +{minutes}  # dead-man's switch: power off (and terminate) regardless",
        f"mkdir -p {REMOTE_DIR} && cd {REMOTE_DIR} || exit 1",
        *fetch,
        "tar xzf bundle.tar.gz && rm -f bundle.tar.gz",
        f"PY={python}; [ -x \"$PY\" ] || PY=python3",
        f"\"$PY\" -m pip install -q {pins} > pip.log 2>&1",
        *_password_lines(password_parameter, region),
        f"cd sweep && PYTHONPATH={REMOTE_DIR} \"$PY\" -m advisor.sweep.workers "
        f"{sweep_yaml_name} --storage \"$(cat {REMOTE_DIR}/storage.txt)\"{named} > worker.log 2>&1",
        "shutdown -h now",
    ]) + "\n"


class SweepAwsLauncher(AwsLauncher):
    """The AWS probe launcher, booting a sweep worker instead of the probe harness.

    The storage URL's password never enters the bundle or the user-data: it is put in an SSM
    SecureString parameter per worker (``/<key_prefix>/<worker id>/storage-password``), read
    on the instance with its instance role into ``PGPASSWORD``. The bundle is built once per
    launcher and uploaded for each worker; each worker's copy and parameter are deleted when
    the worker is terminated (also when terminating fails) and when its launch fails.
    """

    started_what = "sweep workers on aws"

    def __init__(self, spec: SweepSpec, storage_url: str, *, sweep_yaml_name: str = "sweep.yaml",
                 **options: Any) -> None:
        options.setdefault("key_prefix", "advisor-sweeps")
        options.setdefault("grace_s", 600.0)
        super().__init__(**options)
        self.spec = spec
        self.storage_url = storage_url
        self.sweep_yaml_name = sweep_yaml_name

    @functools.cached_property
    def bundle(self) -> bytes:
        """The workers' code bundle (``make_worker_bundle``), built on first use."""
        return make_worker_bundle(self.spec, self.storage_url,
                                  sweep_yaml_name=self.sweep_yaml_name)

    def password_parameter(self, probe_id: str) -> str:
        """The SSM parameter that holds the storage password for worker ``probe_id``."""
        return f"/{self.key_prefix}/{probe_id}/storage-password"

    def boot_payload(self, request: ProbeRequest, region: str, expires: datetime) -> str:
        s3 = self._client("s3", region)
        key = self._key(request.probe_id, "bundle.tar.gz")
        s3.put_object(Bucket=self.bucket, Key=key, Body=self.bundle)
        parameter = None
        password = url_password(self.storage_url)
        if password:
            parameter = self.password_parameter(request.probe_id)
            self._client("ssm", region).put_parameter(
                Name=parameter, Value=password, Type="SecureString", Overwrite=True,
                Description="advisor sweep worker: storage password (deleted at termination)")
        ttl = max(600, int(expires.timestamp() - self.now().timestamp()))
        url = s3.generate_presigned_url("get_object", Params={"Bucket": self.bucket, "Key": key},
                                        ExpiresIn=ttl)
        # The interpreter of the image the instance family boots (the Neuron venv on trn1).
        runtime = self.runtime_for(parse_offer_key(request.offer_key).instance_type)
        return worker_boot_script(
            fetch=[f"curl -fsS --retry 5 -o bundle.tar.gz '{url}'"], python=runtime.python,
            sweep_yaml_name=self.sweep_yaml_name, password_parameter=parameter, region=region,
            worker_id=request.probe_id,
            shutdown_after_s=self.boot_overhead_s + request.max_run_s + self.grace_s)

    def launch(self, request: ProbeRequest) -> LaunchHandle:
        """Start the worker; on any failure its bundle and password parameter are deleted."""
        try:
            return super().launch(request)
        except BaseException:
            self._forget(parse_offer_key(request.offer_key).region, request.probe_id)
            raise

    def terminate(self, handle: LaunchHandle) -> None:
        """Terminate the instance; delete its bundle and password parameter whatever happens."""
        try:
            super().terminate(handle)
        finally:
            self._forget(handle.details["region"], handle.probe_id)

    def instance_times(self, handle: LaunchHandle) -> tuple[float | None, float | None]:
        """EC2's ``LaunchTime`` of the worker's instance and, once it is shutting down or
        gone, the time in its ``StateTransitionReason`` (Unix seconds; None where EC2 does
        not say). Raises ProbeError when EC2 cannot be asked."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            reply = self._client("ec2", handle.details["region"]).describe_instances(
                InstanceIds=[handle.resource_id])
        except (BotoCoreError, ClientError) as exc:
            raise ProbeError(f"aws: cannot describe {handle.resource_id}: {exc}") from exc
        found = [i for r in reply["Reservations"] for i in r["Instances"]]
        if not found:
            return None, None
        launched = found[0].get("LaunchTime")
        ended = None
        if found[0]["State"]["Name"] in ("shutting-down", "terminated", "stopping", "stopped"):
            ended = transition_time_s(str(found[0].get("StateTransitionReason", "")))
        return (launched.timestamp() if isinstance(launched, datetime) else None), ended

    def _forget(self, region: str, probe_id: str) -> None:
        self._delete_objects(region, probe_id)
        if url_password(self.storage_url):
            from botocore.exceptions import BotoCoreError, ClientError

            with contextlib.suppress(BotoCoreError, ClientError):  # gone already, or no access
                self._client("ssm", region).delete_parameter(
                    Name=self.password_parameter(probe_id))


def make_sweep_launcher(spec: SweepSpec, storage_url: str, *, sweep_yaml_name: str,
                        bucket: str = "", **options: Any) -> SweepAwsLauncher:
    """The launcher for the sweep's offer (AWS offers only, for now).

    A storage URL with a password needs an instance profile (``ADVISOR_AWS_INSTANCE_PROFILE``)
    allowed ``ssm:GetParameter`` on ``/advisor-sweeps/*``: the workers read the password there.
    """
    cloud = spec.instance.split(":")[0]
    if cloud != "aws":
        raise AdvisorError(f"--launch: instance {spec.instance!r} is on {cloud}; launching sweep "
                           "workers is implemented for AWS offers only; start 'advisor sweep "
                           "worker SWEEP_YAML' on each machine yourself")
    if not bucket:
        raise AdvisorError("--launch: AWS workers need an S3 bucket for their code bundle; set "
                           "ADVISOR_AWS_BUCKET=my-bucket (it also holds probe results)")
    profile = options.pop("instance_profile", None) or os.environ.get(
        "ADVISOR_AWS_INSTANCE_PROFILE")
    if url_password(storage_url) and not profile:
        raise AdvisorError("--launch: the storage URL has a password; workers read it from an "
                           "SSM SecureString with their instance role: set "
                           "ADVISOR_AWS_INSTANCE_PROFILE to an instance profile allowed "
                           "ssm:GetParameter on parameter/advisor-sweeps/*")
    return SweepAwsLauncher(spec, storage_url, sweep_yaml_name=sweep_yaml_name, bucket=bucket,
                            instance_profile=profile, **options)


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


def run_launched(launcher: SweepAwsLauncher, requests: list[ProbeRequest],
                 study: optuna.Study, *, stopped: Callable[[], bool],
                 on_poll: Callable[[], None] | None = None, poll_s: float = 10.0,
                 drain_s: float = 600.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time) -> StopReason:
    """Start one instance per request and watch them; always terminate them all on the way out.

    ``stopped()`` says whether the budget ended the study; then the instances are terminated
    as soon as no trial is running (at most ``drain_s`` later). Returns why it ended. Each
    instance is recorded on the study when launched and when it ends (``clock``: Unix
    seconds), so its billed time is charged (``advisor.sweep.accounting.records.record_instance``).
    """
    handles: list[LaunchHandle] = []
    book = _InstanceBook(launcher, study, clock)
    try:
        for request in requests:
            before_s = clock()
            try:
                handles.append(launcher.launch(request))
            except ProbeError as exc:
                raise AdvisorError(f"--launch: could not start worker {len(handles) + 1} of "
                                   f"{len(requests)}: {exc}") from exc
            book.launched(handles[-1], request, before_s)
        log.info("launched %s", ", ".join(h.resource_id for h in handles))
        drain_until: float | None = None
        running = (optuna.trial.TrialState.RUNNING,)
        while True:
            if on_poll is not None:
                on_poll()
            alive = [h for h in handles if launcher.is_alive(h)]
            for handle in handles:
                if handle not in alive:
                    book.ended(handle)
            if not alive:
                return StopReason(StopKind.WORKERS_FINISHED)
            if stopped():
                drain_until = drain_until or time.monotonic() + drain_s
                if not study.get_trials(deepcopy=False, states=running):
                    return StopReason(StopKind.BUDGET_DRAINED)
                if time.monotonic() > drain_until:
                    return StopReason(StopKind.DRAIN_TIMED_OUT, drain_s=drain_s)
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
        book.terminated(handles)


class _InstanceBook:
    """The launched instances' records on the study, each written when it changes."""

    def __init__(self, launcher: SweepAwsLauncher, study: optuna.Study,
                 clock: Callable[[], float]) -> None:
        self.launcher, self.study, self.clock = launcher, study, clock
        self.records: dict[str, WorkerInstance] = {}

    def launched(self, handle: LaunchHandle, request: ProbeRequest, before_s: float) -> None:
        """Record a new instance from EC2's LaunchTime (else the moment before launching)."""
        try:
            launched_s, _ = self.launcher.instance_times(handle)
        except ProbeError:
            launched_s = None
        self._write(WorkerInstance(
            worker_id=handle.probe_id, instance_id=handle.resource_id,
            offer_key=request.offer_key, price_usd_per_hour=request.price_usd_per_hour,
            launched_at_s=before_s if launched_s is None else launched_s))

    def ended(self, handle: LaunchHandle, *, terminated_s: float | None = None) -> None:
        """Record when an instance ended: ``terminated_s``, else the time EC2 gives, else now."""
        record = self.records.get(handle.probe_id)
        if record is None or record.ended_at_s is not None:
            return
        end_s = terminated_s
        if end_s is None:
            with contextlib.suppress(ProbeError):
                end_s = self.launcher.instance_times(handle)[1]
        end_s = self.clock() if end_s is None else end_s
        self._write(replace(record, ended_at_s=max(end_s, record.launched_at_s)))

    def terminated(self, handles: Sequence[LaunchHandle]) -> None:
        """Record the end of every instance still running, as terminated now."""
        now_s = self.clock()
        for handle in handles:
            self.ended(handle, terminated_s=now_s)

    def _write(self, record: WorkerInstance) -> None:
        from sqlalchemy.exc import SQLAlchemyError

        self.records[record.worker_id] = record
        try:
            record_instance(self.study, record)
        except SQLAlchemyError as exc:  # the instances are terminated all the same
            log.error("could not record worker instance %s on the study: %s",
                      record.instance_id, db_error_line(exc))
