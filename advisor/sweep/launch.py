"""``advisor sweep sweep.yaml --workers N --launch``: the workers on cloud instances of the offer.

Built on the probe launchers (``probes.launchers``): ``SweepAwsLauncher`` is the AWS probe
launcher with another payload. Each instance gets the same tags as a probe (so ``advisor
probes gc`` also finds a forgotten one), the same dead-man's switch (power-off, which
terminates, after the sweep's ``max_hours`` or a day) and capacity fallback across zones;
its boot script fetches a bundle through a presigned S3 URL (the ``advisor``, ``pricing``
and ``probes`` packages, the explicit ``bundle_files`` of the sweep.yaml folder and the
storage URL without its password), installs the packages pinned to the client's versions,
reads the password from an SSM SecureString into ``PGPASSWORD``, and runs ``python -m
advisor.sweep.workers SWEEP_YAML --storage URL``, then powers off.

``run_launched`` starts N instances, shows progress from the study, and terminates every
instance when the workers are done, when the budget stops the study (once no trial is
running, or after a grace period) or when the command is interrupted.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import logging
import math
import os
import shlex
import tarfile
import time
import uuid
from collections.abc import Callable, Sequence
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
from probes.urls import sqlalchemy_url
from probes.workload import WorkloadRecipe

__all__ = ["IGNORE_FILE", "SweepAwsLauncher", "bundle_files", "launch_requests",
           "make_sweep_launcher", "run_launched", "url_password", "url_without_password",
           "worker_boot_script", "worker_packages"]

log = logging.getLogger("advisor.sweep")

REMOTE_DIR = "/opt/advisor-sweep"
_DEFAULT_BOX_S = 24 * 3600.0
_PACKAGES = ("advisor", "pricing", "probes")
_MAX_BUNDLE_BYTES = 50 * 2**20
IGNORE_FILE = ".advisorignore"
# never shipped, whatever the entrypoint's package holds
_ALWAYS_IGNORED = (".*", "__pycache__", "*.pyc", "*.db", "credentials*", "*secret*", "*.pem",
                   "*.key", "id_rsa*", "*.env")


def _skip(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    name = Path(info.name).name
    skipped = name == "__pycache__" or name.startswith(".") or name.endswith((".pyc", ".db"))
    return None if skipped else info


def _ignored(relative: str, patterns: Sequence[str]) -> bool:
    """True when ``relative`` (a path under the sweep folder) or one of its folders matches."""
    parts = Path(relative).parts
    candidates = [relative, *parts, *("/".join(parts[:i]) for i in range(1, len(parts)))]
    return any(fnmatch.fnmatch(c, p.rstrip("/")) for c in candidates for p in patterns)


def _ignore_patterns(folder: Path) -> list[str]:
    path = folder / IGNORE_FILE
    lines = path.read_text().splitlines() if path.is_file() else []
    return [*_ALWAYS_IGNORED, *(ln.strip() for ln in lines
                                if ln.strip() and not ln.lstrip().startswith("#"))]


def bundle_files(spec: SweepSpec, sweep_yaml_name: str = "sweep.yaml") -> list[str]:
    """The files of the sweep folder that travel to the workers, relative to it, sorted.

    Only what the sweep needs: sweep.yaml, the entrypoint's module (``train.py``) or the
    whole top-level package it lives in (``mypkg/``), and the ``model`` file sweep.yaml names;
    less whatever ``.advisorignore`` (shell patterns, one per line) and the built-in patterns
    (dotfiles, ``credentials*``, keys, ``*.db``, caches) exclude. Nothing else beside
    sweep.yaml is sent.
    """
    if not spec.source_dir:
        return []
    folder = Path(spec.source_dir)
    top = spec.entrypoint.split(":")[0].split(".")[0]
    wanted = [sweep_yaml_name, f"{top}.py", top]
    if spec.model and not Path(spec.model).is_absolute():
        wanted.append(spec.model)
    patterns = _ignore_patterns(folder)
    found: set[str] = set()
    for name in wanted:
        path = folder / name
        paths = sorted(path.rglob("*")) if path.is_dir() else [path]
        found.update(p.relative_to(folder).as_posix() for p in paths if p.is_file())
    return sorted(f for f in found if f == sweep_yaml_name or not _ignored(f, patterns))


def make_worker_bundle(spec: SweepSpec, storage_url: str, *,
                       sweep_yaml_name: str = "sweep.yaml") -> bytes:
    """tar.gz of our packages, ``bundle_files`` (under ``sweep/``) and ``storage.txt``: the
    storage URL without its password (workers read that from ``PGPASSWORD``)."""
    root = Path(__file__).resolve().parents[2]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for package in _PACKAGES:
            tar.add(root / package, arcname=package, filter=_skip)
        files: dict[str, bytes] = {}
        if spec.source_dir:
            for relative in bundle_files(spec, sweep_yaml_name):
                files[f"sweep/{relative}"] = (Path(spec.source_dir) / relative).read_bytes()
            yaml_name = f"sweep/{sweep_yaml_name}"
            if yaml_name in files:
                files[yaml_name] = _without_storage_password(files[yaml_name])
        files["storage.txt"] = url_without_password(storage_url).encode()
        password = url_password(storage_url)
        for name, data in files.items():
            if password and password.encode() in data:
                raise AdvisorError(f"--launch: {name.removeprefix('sweep/')} holds the storage "
                                   "password; keep it out of the files the workers get (they "
                                   f"read it from SSM), or list the file in {IGNORE_FILE}")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    bundle = buffer.getvalue()
    if len(bundle) > _MAX_BUNDLE_BYTES:
        raise AdvisorError(f"--launch: the worker bundle is {len(bundle) / 2**20:.0f} MiB (limit "
                           f"{_MAX_BUNDLE_BYTES // 2**20} MiB); list large files in "
                           f"{Path(spec.source_dir or '.') / IGNORE_FILE} (load data on the "
                           "instance)")
    return bundle


def _without_storage_password(sweep_yaml: bytes) -> bytes:
    """sweep.yaml with the password of its ``storage`` URL removed (the workers are given the
    URL with ``--storage`` anyway)."""
    import yaml

    data = yaml.safe_load(sweep_yaml)
    storage = data.get("storage") if isinstance(data, dict) else None
    if not isinstance(storage, str) or "://" not in storage or url_password(storage) is None:
        return sweep_yaml
    data["storage"] = url_without_password(storage)
    return yaml.safe_dump(data, sort_keys=False).encode()


def url_without_password(url: str) -> str:
    """``url`` with its password removed (the rest, user included, kept)."""
    from sqlalchemy.engine import URL, make_url

    parsed = make_url(url)
    if parsed.password is None:
        return url
    bare = URL.create(parsed.drivername, username=parsed.username, host=parsed.host,
                      port=parsed.port, database=parsed.database, query=parsed.query)
    return bare.render_as_string(hide_password=False)


def url_password(url: str) -> str | None:
    """The password in ``url``, if any."""
    from sqlalchemy.engine import make_url

    password = make_url(url).password
    return None if password is None else str(password)


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
                       shutdown_after_s: float, packages: Sequence[str] | None = None,
                       password_parameter: str | None = None, region: str | None = None) -> str:
    """Bash: arm the dead-man's switch, fetch the bundle, install the client's pinned
    ``packages``, read the database password from SSM into ``PGPASSWORD`` (when the storage
    has one), run one sweep worker, power off."""
    minutes = max(1, math.ceil(shutdown_after_s / 60.0))
    pins = " ".join(shlex.quote(p) for p in (packages if packages is not None
                                              else worker_packages()))
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
        f"{sweep_yaml_name} --storage \"$(cat {REMOTE_DIR}/storage.txt)\" > worker.log 2>&1",
        "shutdown -h now",
    ]) + "\n"


class SweepAwsLauncher(AwsLauncher):
    """The AWS probe launcher, booting a sweep worker instead of the probe harness.

    The storage URL's password never enters the bundle or the user-data: it is put in an SSM
    SecureString parameter per worker (``/<key_prefix>/<worker id>/storage-password``), read
    on the instance with its instance role into ``PGPASSWORD``. The bundle and the parameter
    are deleted when the worker is terminated (also when terminating fails) and when its
    launch fails.
    """

    def __init__(self, spec: SweepSpec, storage_url: str, *, sweep_yaml_name: str = "sweep.yaml",
                 **options: Any) -> None:
        options.setdefault("key_prefix", "advisor-sweeps")
        options.setdefault("grace_s", 600.0)
        super().__init__(**options)
        self.spec = spec
        self.storage_url = storage_url
        self.sweep_yaml_name = sweep_yaml_name

    def password_parameter(self, probe_id: str) -> str:
        """The SSM parameter that holds the storage password for worker ``probe_id``."""
        return f"/{self.key_prefix}/{probe_id}/storage-password"

    def boot_payload(self, request: ProbeRequest, region: str, expires: datetime) -> str:
        s3 = self._client("s3", region)
        key = self._key(request.probe_id, "bundle.tar.gz")
        s3.put_object(Bucket=self.bucket, Key=key, Body=make_worker_bundle(
            self.spec, self.storage_url, sweep_yaml_name=self.sweep_yaml_name))
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

    def _forget(self, region: str, probe_id: str) -> None:
        self._delete_objects(region, probe_id)
        if url_password(self.storage_url):
            from botocore.exceptions import BotoCoreError, ClientError

            with contextlib.suppress(BotoCoreError, ClientError):  # gone already, or no access
                self._client("ssm", region).delete_parameter(
                    Name=self.password_parameter(probe_id))


def make_sweep_launcher(spec: SweepSpec, storage_url: str, *, sweep_yaml_name: str,
                        bucket: str = "", **options: Any) -> Launcher:
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
