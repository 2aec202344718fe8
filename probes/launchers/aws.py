"""The AWS launcher: one EC2 instance from a Deep Learning AMI per probe, result through S3.

The image and its interpreter depend on the instance family (``runtimes.AWS_RUNTIMES``: the
NVIDIA PyTorch DLAMI for p/g types, the Neuron DLAMI for trn/inf2, the Habana DLAMI for dl1);
the AMI id comes from a public SSM parameter (or, for Habana, the newest AMI with the name). The
instance gets user-data that fetches the code bundle and the request (presigned S3 URLs, so no
instance role is needed), runs the runtime's setup and the harness, uploads result and log
(presigned PUT) and powers off. Power-off terminates
(``InstanceInitiatedShutdownBehavior=terminate``) and ``shutdown -h +N`` is armed first as a
dead-man's switch. Instance and volumes are tagged with the probe id and an expiry. Capacity
errors move on to the next zone. boto3 is imported lazily; botocore errors become ProbeError.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pricing import Cloud, Market, parse_offer_key
from probes.errors import ProbeError
from probes.launchers._bundle import boot_script, make_bundle
from probes.launchers.base import (
    TAG_EXPIRES,
    TAG_PROBE_ID,
    Launcher,
    LaunchFailed,
    LaunchHandle,
    log_tail,
    probe_tags,
)
from probes.launchers.credentials import check_aws_credentials
from probes.launchers.runtimes import AWS_RUNTIMES, ImageLookup, Runtime, RuntimeTable, aws_family

if TYPE_CHECKING:
    from probes.types import ProbeRequest, ProbeResult

__all__ = ["CAPACITY_ERRORS", "AwsLauncher"]

CAPACITY_ERRORS = frozenset({
    "InsufficientInstanceCapacity", "SpotMaxPriceTooLow", "Unsupported",
    "InsufficientCapacity", "InsufficientHostCapacity", "MaxSpotInstanceCountExceeded",
})
_NOT_FOUND = frozenset({"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"})
ClientFactory = Callable[[str, str], Any]


def _boto_client(service: str, region: str) -> Any:
    import boto3

    return boto3.client(service, region_name=region)


def _error_code(exc: Exception) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def _aws_errors() -> tuple[type[Exception], ...]:
    from botocore.exceptions import BotoCoreError, ClientError

    return (ClientError, BotoCoreError)


def _ami_from_ssm(client: Callable[[str], Any], runtime: Runtime) -> str:
    return str(client("ssm").get_parameter(Name=runtime.image)["Parameter"]["Value"])


def _ami_by_name(client: Callable[[str], Any], runtime: Runtime) -> str:
    images = client("ec2").describe_images(
        Owners=[runtime.owner], IncludeDeprecated=True,
        Filters=[{"Name": "name", "Values": [runtime.image]}])["Images"]
    if not images:
        raise LaunchFailed(f"no AMI of owner {runtime.owner!r} is named like {runtime.image!r}; "
                           "pass ami_parameter= with an SSM parameter of an image that has it")
    newest = max(images, key=lambda i: (i.get("CreationDate", ""), i.get("Name", "")))
    return str(newest["ImageId"])


# how each kind of AWS image reference becomes an AMI id
_AMI_LOOKUPS: dict[ImageLookup, Callable[[Callable[[str], Any], Runtime], str]] = {
    ImageLookup.SSM_PARAMETER: _ami_from_ssm,
    ImageLookup.AMI_NAME: _ami_by_name,
}


class AwsLauncher(Launcher):
    """Probes on EC2. ``bucket`` holds bundles and results (under ``key_prefix/probe_id/``;
    only ``launch`` needs it, ``gc`` does not).

    ``runtimes`` picks image, interpreter, setup and device per instance family (tests pass
    a table with their own SSM parameters); ``ami_parameter`` and ``python``, when given, pin
    the SSM parameter and the interpreter for every instance type.
    ``subnets`` maps zone -> subnet id (default: the region's zones, default VPC);
    ``client_factory(service, region)`` makes boto3 clients (injectable for tests);
    ``regions`` are also scanned by ``gc`` and ``live_probe_ids``.
    """

    name = "aws"
    started_what = "aws probes"  # what its instances run, as messages name it
    boot_overhead_s = 240.0
    cloud = Cloud.AWS  # billed as pricing.billing.BILLING_RULES says

    @classmethod
    def family(cls, offer_key: str) -> str:
        """``aws:p4d.24xlarge:...`` -> ``p4d`` (the runtime table's family)."""
        return aws_family(parse_offer_key(offer_key).instance_type)

    def __init__(
        self,
        *,
        bucket: str = "",
        client_factory: ClientFactory = _boto_client,
        runtimes: RuntimeTable = AWS_RUNTIMES,
        ami_parameter: str | None = None,
        subnets: Mapping[str, str] | None = None,
        security_group_ids: Sequence[str] = (),
        instance_profile: str | None = None,
        key_prefix: str = "advisor-probes",
        python: str | None = None,
        regions: Sequence[str] = (),
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.bucket = bucket
        self._factory = client_factory
        self.runtimes = runtimes
        self.ami_parameter = ami_parameter
        self.subnets = dict(subnets or {})
        self.security_group_ids = tuple(security_group_ids)
        self.instance_profile = instance_profile
        self.key_prefix = key_prefix.strip("/")
        self.python_override = python
        self.regions = list(regions)
        self._clients: dict[tuple[str, str], Any] = {}

    def _client(self, service: str, region: str) -> Any:
        if (service, region) not in self._clients:
            self._clients[(service, region)] = self._factory(service, region)
        if region not in self.regions:
            self.regions.append(region)
        return self._clients[(service, region)]

    def _key(self, probe_id: str, name: str) -> str:
        return f"{self.key_prefix}/{probe_id}/{name}"

    def runtime_for(self, instance_type: str) -> Runtime:
        """What ``instance_type`` boots: its family's runtime with the pinned AMI parameter and
        python applied; LaunchFailed for a family the table does not know."""
        runtime = self.runtimes.for_instance(instance_type)
        if self.ami_parameter:
            runtime = replace(runtime, image=self.ami_parameter, lookup=ImageLookup.SSM_PARAMETER)
        return replace(runtime, python=self.python_override) if self.python_override else runtime

    @property
    def python(self) -> str:
        """The pinned interpreter, else the NVIDIA DLAMI's; per instance type, use
        ``runtime_for(instance_type).python``."""
        return self.python_override or AWS_RUNTIMES.for_instance("g5.xlarge").python

    def check_credentials(self) -> None:
        """``MissingCredentials`` when boto3 finds no credentials (only for the default client
        factory: an injected one brings its own)."""
        if self._factory is _boto_client:
            check_aws_credentials(self.started_what)

    # -- launch -----------------------------------------------------------------------
    def launch(self, request: ProbeRequest) -> LaunchHandle:
        ref = parse_offer_key(request.offer_key)
        if ref.cloud is None or ref.cloud.value != "aws":
            raise LaunchFailed(f"aws launcher cannot run offer {request.offer_key!r}")
        if not self.bucket:
            raise LaunchFailed("aws launcher: no S3 bucket for probe results; pass --aws-bucket "
                               "or set ADVISOR_AWS_BUCKET")
        try:
            return self._launch(request, ref.instance_type, ref.region, ref.market)
        except LaunchFailed:
            self._delete_objects(ref.region, request.probe_id)
            raise
        except _aws_errors() as exc:
            self._delete_objects(ref.region, request.probe_id)
            raise LaunchFailed(f"aws {request.offer_key}: {_error_code(exc) or type(exc).__name__}: "
                               f"{exc}") from exc

    def _launch(self, request: ProbeRequest, instance_type: str, region: str,
                market: Market) -> LaunchHandle:
        runtime = self.runtime_for(instance_type)
        if runtime.lookup not in _AMI_LOOKUPS:
            raise LaunchFailed(f"aws {instance_type}: the runtime names a {runtime.lookup} image; "
                               f"aws boots {' or '.join(_AMI_LOOKUPS)} images")
        image = _AMI_LOOKUPS[runtime.lookup](lambda service: self._client(service, region), runtime)
        ec2 = self._client("ec2", region)
        expires = self.expiry_for(request)
        user_data = self.boot_payload(request, region, expires)
        tags = [{"Key": k, "Value": v} for k, v in probe_tags(request.probe_id, expires).items()]
        tags.append({"Key": "Name", "Value": f"advisor-probe-{request.probe_id}"})
        params: dict[str, Any] = {
            "ImageId": image, "InstanceType": instance_type, "MinCount": 1, "MaxCount": 1,
            "UserData": user_data, "InstanceInitiatedShutdownBehavior": "terminate",
            "TagSpecifications": [{"ResourceType": "instance", "Tags": tags},
                                  {"ResourceType": "volume", "Tags": tags}],
        }
        if market is Market.SPOT:
            params["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
                "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}
        if self.security_group_ids:
            params["SecurityGroupIds"] = list(self.security_group_ids)
        if self.instance_profile:
            params["IamInstanceProfile"] = {"Name": self.instance_profile}
        refused: list[str] = []
        for zone in self._zones(ec2):
            placement = ({"SubnetId": self.subnets[zone]} if zone in self.subnets
                         else {"Placement": {"AvailabilityZone": zone}})
            try:
                reply = ec2.run_instances(**params, **placement)
            except _aws_errors() as exc:
                code = _error_code(exc)
                if code not in CAPACITY_ERRORS:
                    raise
                refused.append(f"{zone}: {code}")
                continue
            instance_id = reply["Instances"][0]["InstanceId"]
            return LaunchHandle(request.probe_id, self.name, instance_id, zone, self.clock(),
                                expires, {"region": region})
        raise LaunchFailed(f"aws {request.offer_key}: no capacity in any zone of {region} "
                           f"({'; '.join(refused) or 'no zones'}); try another region or on-demand")

    def _zones(self, ec2: Any) -> list[str]:
        if self.subnets:
            return sorted(self.subnets)
        reply = ec2.describe_availability_zones(
            Filters=[{"Name": "state", "Values": ["available"]}])
        return sorted(z["ZoneName"] for z in reply["AvailabilityZones"])

    def boot_payload(self, request: ProbeRequest, region: str, expires: datetime) -> str:
        """Upload what the instance needs and return its user-data script (the harness on the
        offer's runtime: ``runtime_for``).

        The hook subclasses override to boot something other than the probe harness (the
        sweep's cloud workers do); the script must power the instance off when done.
        """
        runtime = self.runtime_for(parse_offer_key(request.offer_key).instance_type)
        s3 = self._client("s3", region)
        bundle, remote = make_bundle(request)
        s3.put_object(Bucket=self.bucket, Key=self._key(request.probe_id, "bundle.tar.gz"),
                      Body=bundle)
        s3.put_object(Bucket=self.bucket, Key=self._key(request.probe_id, "request.json"),
                      Body=remote.to_json().encode())
        ttl = max(600, int(expires.timestamp() - self.now().timestamp()))

        def url(method: str, name: str) -> str:
            return str(s3.generate_presigned_url(
                method, Params={"Bucket": self.bucket, "Key": self._key(request.probe_id, name)},
                ExpiresIn=ttl))

        fetch = [f"curl -fsS --retry 5 -o bundle.tar.gz '{url('get_object', 'bundle.tar.gz')}'",
                 f"curl -fsS --retry 5 -o request.json '{url('get_object', 'request.json')}'"]
        return boot_script(
            fetch=fetch, runtime=runtime,
            upload_result=f"curl -fsS --retry 5 -T result.json '{url('put_object', 'result.json')}'",
            upload_log=f"curl -fsS --retry 5 -T harness.log '{url('put_object', 'harness.log')}'",
            shutdown_after_s=self.boot_s(request.offer_key) + request.max_run_s + self.grace_s,
        )

    # -- while running ----------------------------------------------------------------
    def _read(self, handle: LaunchHandle, name: str) -> bytes | None:
        s3 = self._client("s3", handle.details["region"])
        try:
            reply = s3.get_object(Bucket=self.bucket, Key=self._key(handle.probe_id, name))
        except _aws_errors() as exc:
            if _error_code(exc) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise ProbeError(f"aws: cannot read s3://{self.bucket}/"
                             f"{self._key(handle.probe_id, name)}: {exc}") from exc
        return bytes(reply["Body"].read())

    def poll(self, handle: LaunchHandle) -> ProbeResult | None:
        from probes.types import ProbeResult

        body = self._read(handle, "result.json")
        return ProbeResult.from_json(body) if body is not None else None

    def is_alive(self, handle: LaunchHandle) -> bool:
        ec2 = self._client("ec2", handle.details["region"])
        try:
            reply = ec2.describe_instances(InstanceIds=[handle.resource_id])
        except _aws_errors() as exc:
            if _error_code(exc) in _NOT_FOUND:
                return False
            raise ProbeError(f"aws: cannot describe {handle.resource_id}: {exc}") from exc
        states = [i["State"]["Name"] for r in reply["Reservations"] for i in r["Instances"]]
        return any(s in ("pending", "running") for s in states)

    def failure_detail(self, handle: LaunchHandle) -> str:
        with contextlib.suppress(ProbeError):
            return log_tail(self._read(handle, "harness.log"))
        return ""

    # -- clean-up ---------------------------------------------------------------------
    def terminate(self, handle: LaunchHandle) -> None:
        region = handle.details["region"]
        self._terminate_ids(region, [handle.resource_id])
        self._delete_objects(region, handle.probe_id)

    def _terminate_ids(self, region: str, ids: list[str]) -> None:
        if not ids:
            return
        try:
            self._client("ec2", region).terminate_instances(InstanceIds=ids)
        except _aws_errors() as exc:
            if _error_code(exc) not in _NOT_FOUND:
                raise ProbeError(f"aws: could not terminate {', '.join(ids)} in {region}: {exc}; "
                                 "run 'advisor probes gc' or terminate them in the console") from exc

    def _delete_objects(self, region: str, probe_id: str) -> None:
        s3 = self._client("s3", region)
        with contextlib.suppress(*_aws_errors()):
            listing = s3.list_objects_v2(Bucket=self.bucket, Prefix=self._key(probe_id, ""))
            keys = [{"Key": o["Key"]} for o in listing.get("Contents", [])]
            if keys:
                s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})

    def _tagged(self, states: list[str]) -> list[tuple[str, str, dict[str, str]]]:
        found = []
        for region in list(self.regions):
            ec2 = self._client("ec2", region)
            try:
                pages = ec2.get_paginator("describe_instances").paginate(Filters=[
                    {"Name": "tag-key", "Values": [TAG_PROBE_ID]},
                    {"Name": "instance-state-name", "Values": states}])
                for page in pages:
                    for reservation in page["Reservations"]:
                        for inst in reservation["Instances"]:
                            tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
                            found.append((region, inst["InstanceId"], tags))
            except _aws_errors() as exc:
                raise ProbeError(f"aws: cannot list probe instances in {region}: {exc}") from exc
        return found

    def live_probe_ids(self) -> list[str]:
        return sorted(t[TAG_PROBE_ID] for _, _, t in self._tagged(["pending", "running"]))

    def gc(self, now: datetime, *, dry_run: bool = False) -> list[str]:
        expired: dict[str, list[str]] = {}
        for region, instance_id, tags in self._tagged(["pending", "running", "stopping", "stopped"]):
            try:
                deadline = float(tags.get(TAG_EXPIRES, "0"))
            except ValueError:
                deadline = 0.0
            if deadline < now.timestamp():
                expired.setdefault(region, []).append(instance_id)
        if not dry_run:
            for region, ids in expired.items():
                self._terminate_ids(region, ids)
        return [i for ids in expired.values() for i in ids]
