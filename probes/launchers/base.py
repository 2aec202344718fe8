"""The launcher seam: start the harness somewhere, collect its result, always clean up.

Contract every launcher keeps (checked by one contract test suite over all of them):

- ``launch(request)`` starts exactly one resource (process, instance, TPU VM) that runs
  ``python -m probes.harness`` on the request, tagged with the probe id
  (``advisor-probe-id``), ``advisor-managed=true`` and an expiry (``advisor-expires-at``,
  Unix seconds). It returns a ``LaunchHandle`` or raises ``LaunchFailed`` after releasing
  anything it had started; capacity errors move on to the next zone before giving up.
- ``poll(handle)`` returns the ProbeResult once the harness has written it, else None.
- ``is_alive(handle)`` says whether the resource can still produce a result.
- ``terminate(handle)`` releases everything the launch created; idempotent, never raises for
  an already-gone resource. Callers call it in ``finally``.
- ``gc(now)`` terminates every tagged resource whose expiry is past (``dry_run`` lists them).
- ``live_probe_ids()`` lists probe ids of tagged resources still running (for gc and tests).
- ``check_credentials()`` raises ``MissingCredentials`` when the cloud's credentials are
  not configured here (a setting, checked before any launch; nothing is stored).
- ``progress(handle)`` returns the harness's progress lines not returned before (a local
  probe's tune: one a configuration); launchers that cannot see them return [].

Launchers are not thread-safe; use one per thread. Cloud errors are translated to
``ProbeError`` here, at the edge. Clocks and sleeps are injected so faults test fast.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, ClassVar

from pricing import BillingRule, Cloud, billing_rule
from probes.errors import ProbeError
from probes.launchers.quote import ProbeQuote

if TYPE_CHECKING:  # the result types load where a probe runs (a quote needs none of them)
    from probes.types import ProbeRequest, ProbeResult

__all__ = [
    "TAG_EXPIRES",
    "TAG_MANAGED",
    "TAG_PROBE_ID",
    "LaunchFailed",
    "LaunchHandle",
    "Launcher",
    "log_tail",
    "probe_tags",
]

TAG_PROBE_ID = "advisor-probe-id"
TAG_EXPIRES = "advisor-expires-at"
TAG_MANAGED = "advisor-managed"

Clock = Callable[[], float]
Sleep = Callable[[float], None]
Now = Callable[[], datetime]


class LaunchFailed(ProbeError):
    """Nothing could be started for the probe (no capacity anywhere, quota, bad image...)."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


def probe_tags(probe_id: str, expires_at: datetime) -> dict[str, str]:
    """The tags (labels on GCP) every launched resource carries."""
    return {TAG_PROBE_ID: probe_id, TAG_MANAGED: "true",
            TAG_EXPIRES: str(int(expires_at.timestamp()))}


def log_tail(log: bytes | None) -> str:
    """The last three non-blank lines of a harness log joined by `` | `` (at most 600
    characters); empty for no log."""
    lines = [ln for ln in (log or b"").decode(errors="replace").splitlines() if ln.strip()]
    return " | ".join(lines[-3:])[-600:]


@dataclass(frozen=True)
class LaunchHandle:
    """A started probe: where it runs and until when it may run.

    ``resource_id`` is the pid, instance id or node name; ``location`` the zone (or
    ``local``); ``started_s`` the launcher clock at launch (for wall time and deadlines).
    """

    probe_id: str
    launcher: str
    resource_id: str
    location: str
    started_s: float
    expires_at: datetime
    details: Mapping[str, str] = field(default_factory=dict)


class Launcher(abc.ABC):
    """Runs the harness for one ProbeRequest somewhere; see the module docstring for the contract.

    ``boot_overhead_s`` is the typical time from launch to the harness starting (billed, so
    it enters the cost estimate), ``boot_s_by_family`` the same for instance families that
    differ from it (keys as ``family`` names them); ``cloud`` the cloud that bills its
    instances (None: nothing is billed per start), whose rule (``pricing.billing``) prices
    quotes and results; ``grace_s`` is extra waiting before a probe is a timeout.
    """

    name = "base"
    boot_overhead_s = 0.0
    boot_s_by_family: ClassVar[Mapping[str, float]] = {}
    cloud: ClassVar[Cloud | None] = None

    @classmethod
    def billing(cls) -> BillingRule | None:
        """How the cloud bills this launcher's instances (None: not billed per start)."""
        return billing_rule(cls.cloud) if cls.cloud is not None else None

    @classmethod
    def family(cls, offer_key: str) -> str:
        """The instance family of an offer as ``boot_s_by_family`` keys it ("" by default)."""
        del offer_key
        return ""

    @classmethod
    def boot_s(cls, offer_key: str) -> float:
        """Seconds from launch to the harness starting for ``offer_key``'s family."""
        return cls.boot_s_by_family.get(cls.family(offer_key), cls.boot_overhead_s)

    @classmethod
    def quote(cls, offer_key: str, *, price_usd_per_hour: float, run_s: float) -> ProbeQuote:
        """The most a probe of ``offer_key`` running ``run_s`` costs on this launcher."""
        return ProbeQuote(offer_key=offer_key, launcher=cls.name, boot_s=cls.boot_s(offer_key),
                          run_s=run_s, price_usd_per_hour=price_usd_per_hour,
                          billing=cls.billing())

    def __init__(self, *, clock: Clock = time.monotonic, sleep: Sleep = time.sleep,
                 now: Now = _utcnow, poll_interval_s: float = 5.0, grace_s: float = 120.0) -> None:
        if poll_interval_s <= 0 or grace_s < 0:
            raise ProbeError("poll_interval_s must be > 0 and grace_s >= 0")
        self.clock = clock
        self.sleep = sleep
        self.now = now
        self.poll_interval_s = poll_interval_s
        self.grace_s = grace_s

    def expiry_for(self, request: ProbeRequest) -> datetime:
        """When a resource for ``request`` must be gone at the latest."""
        budget = self.boot_s(request.offer_key) + request.max_run_s + self.grace_s + 300.0
        return self.now() + timedelta(seconds=budget)

    @classmethod
    def quote_request(cls, request: ProbeRequest) -> ProbeQuote:
        """The quote of ``request`` on this launcher: its whole time box (two with the batch
        search) plus the boot time, and the request's own cap."""
        return replace(cls.quote(request.offer_key, price_usd_per_hour=request.price_usd_per_hour,
                                 run_s=request.max_run_s), max_usd=request.max_usd)

    @abc.abstractmethod
    def launch(self, request: ProbeRequest) -> LaunchHandle:
        """Start the harness for ``request``; LaunchFailed when nothing could start."""

    @abc.abstractmethod
    def poll(self, handle: LaunchHandle) -> ProbeResult | None:
        """The result once written, else None."""

    @abc.abstractmethod
    def is_alive(self, handle: LaunchHandle) -> bool:
        """True while the resource exists and can still write a result."""

    @abc.abstractmethod
    def terminate(self, handle: LaunchHandle) -> None:
        """Release everything ``launch`` created; idempotent."""

    @abc.abstractmethod
    def live_probe_ids(self) -> list[str]:
        """Probe ids of tagged resources that are still running (or starting)."""

    @abc.abstractmethod
    def gc(self, now: datetime, *, dry_run: bool = False) -> list[str]:
        """Terminate tagged resources past their expiry; return their resource ids."""

    def check_credentials(self) -> None:
        """Raise ``MissingCredentials`` (a ProbeError) when the cloud credentials ``launch``
        signs its calls with cannot be found here; nothing by default (no cloud, or clients
        injected with their own credentials). Called before anything is launched."""
        return

    def failure_detail(self, handle: LaunchHandle) -> str:
        """What is known about a resource that ended without a result (log tail)."""
        del handle
        return ""

    def progress(self, handle: LaunchHandle) -> list[str]:
        """The harness's progress lines since the previous call (none by default)."""
        del handle
        return []

    def wait(self, handle: LaunchHandle, request: ProbeRequest, *,
             on_progress: Callable[[str], None] | None = None) -> ProbeResult:
        """Poll until the result arrives, the resource dies, or the deadline passes, giving
        ``on_progress`` each progress line as it is seen.

        Never terminates (the caller does, in ``finally``); returns a ``timeout`` or
        ``error`` result instead of raising for the probe's own faults.
        """
        from probes.types import NO_DEVICE, ProbeResult, ProbeStatus

        deadline = handle.started_s + self.boot_s(request.offer_key) + request.max_run_s + self.grace_s
        def forward() -> None:
            for line in self.progress(handle):
                if on_progress is not None:
                    on_progress(line)

        while True:
            forward()
            result = self.poll(handle)
            if result is not None:
                forward()  # the lines written since, before the result
                return result
            if not self.is_alive(handle):
                result = self.poll(handle)  # it may have written just before ending
                forward()
                if result is not None:
                    return result
                detail = self.failure_detail(handle)
                return ProbeResult.failure(
                    request, ProbeStatus.ERROR,
                    f"{self.name} probe {handle.resource_id} ended without a result"
                    + (f": {detail}" if detail else ""), device=NO_DEVICE)
            if self.clock() >= deadline:
                return ProbeResult.failure(
                    request, ProbeStatus.TIMEOUT,
                    f"no result {deadline - handle.started_s:.0f} s after launch on "
                    f"{handle.resource_id} ({handle.location}); terminated", device=NO_DEVICE)
            self.sleep(self.poll_interval_s)
