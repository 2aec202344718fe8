"""Run ProbeRequests through launchers: check dollars first, always terminate, record everything.

Every probe ends in the store with a status, whatever happens: a measurement on another
device than the offer's accelerator (``wrong_device``), launch failure
(``launch_failed``), no result in time (``timeout``), the harness crashing (``error``), or
Ctrl-C / SIGTERM (``error``, "interrupted", then the interrupt propagates). Resources are
terminated in ``finally``.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from pricing import PricingError
from pricing.files import atomic_write
from probes.devices.check import checked
from probes.errors import ProbeError
from probes.launchers.base import Launcher, LaunchFailed
from probes.launchers.cost_check import check_cost
from probes.store import ProbeStore
from probes.types import NO_DEVICE, ProbeRequest, ProbeResult, ProbeStatus

__all__ = ["ProbeEvent", "ResultNotStored", "check_budget", "check_credentials", "run_probes"]

log = logging.getLogger("probes")

LauncherFor = Callable[[ProbeRequest], Launcher]


@dataclass(frozen=True)
class ProbeEvent:
    """Progress of one probe: ``stage`` is launching, running, progress (``detail``: one line
    the harness reported, e.g. a tune's configuration), done; ``result`` when done."""

    request: ProbeRequest
    stage: str
    detail: str = ""
    result: ProbeResult | None = None


def check_budget(requests: Sequence[ProbeRequest], launcher_for: LauncherFor,
                 max_usd: float | None) -> float:
    """Dollars all probes cost if each runs its whole time box plus its launcher's boot time;
    ``OverProbeBudget`` (``check_cost``) when it, or any probe's own quote, exceeds its cap."""
    return check_cost([launcher_for(r).quote_request(r) for r in requests], max_usd)


def check_credentials(requests: Sequence[ProbeRequest], launcher_for: LauncherFor) -> None:
    """``MissingCredentials`` (a ProbeError) when a launcher the requests need finds no cloud
    credentials here: a setting to fix, so nothing is launched, billed or stored."""
    checked: set[int] = set()
    for request in requests:
        launcher = launcher_for(request)
        if id(launcher) not in checked:
            checked.add(id(launcher))
            launcher.check_credentials()


class ResultNotStored(ProbeError):
    """The probe ran but the store refused its result; the result is in the JSON file ``path``."""

    def __init__(self, result: ProbeResult, path: Path, reason: str) -> None:
        super().__init__(f"{reason}; probe {result.probe_id} ended {result.status}, its result "
                         f"is saved in {path}")
        self.result = result
        self.path = path


def _store_or_save(store: ProbeStore, result: ProbeResult) -> tuple[Path, str] | None:
    """Record ``result``; when the store refuses it, write it to a JSON file (in the current
    folder, else the temporary one) and return that file and the store's reason."""
    try:
        store.record(result)
    except ProbeError as exc:
        name = f"advisor-probe-{result.probe_id}.json"
        for folder in (Path.cwd(), Path(tempfile.gettempdir())):
            try:
                atomic_write(folder / name, result.to_json() + "\n")
            except OSError:
                continue
            return folder / name, str(exc)
        raise
    return None


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so the same clean-up runs."""


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        del signum, frame
        raise _Terminated("SIGTERM")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run_one(request: ProbeRequest, launcher: Launcher, store: ProbeStore,
             notify: Callable[[ProbeEvent], None]) -> ProbeResult:
    notify(ProbeEvent(request, "launching", launcher.name))
    handle = None
    result: ProbeResult | None = None
    saved: tuple[Path, str] | None = None
    started = launcher.clock()
    try:
        try:
            handle = launcher.launch(request)
        except LaunchFailed as exc:
            result = ProbeResult.failure(request, ProbeStatus.LAUNCH_FAILED, str(exc),
                                         device=NO_DEVICE)
        else:
            notify(ProbeEvent(request, "running", f"{handle.resource_id} in {handle.location}"))
            result = checked(launcher.wait(handle, request, on_progress=lambda line: notify(
                ProbeEvent(request, "progress", line))), request.accelerator)
    except KeyboardInterrupt as exc:
        what = "SIGTERM" if isinstance(exc, _Terminated) else "Ctrl-C"
        result = ProbeResult.failure(request, ProbeStatus.ERROR, f"interrupted by {what}",
                                     device=NO_DEVICE)
        raise
    except (ProbeError, PricingError) as exc:  # PricingError: an offer key it cannot read
        result = ProbeResult.failure(request, ProbeStatus.ERROR, str(exc), device=NO_DEVICE)
    except Exception as exc:  # noqa: BLE001 - record the probe whatever broke, then re-raise
        result = ProbeResult.failure(request, ProbeStatus.ERROR,
                                     f"advisor failed: {type(exc).__name__}: {exc}",
                                     device=NO_DEVICE)
        raise
    finally:
        try:
            if handle is not None:
                launcher.terminate(handle)
        finally:
            if result is not None:
                wall = launcher.clock() - (handle.started_s if handle is not None else started)
                billing = launcher.billing() if handle is not None else None  # it started
                result = result.with_cost(wall_time_s=max(wall, 0.0),
                                          price_usd_per_hour=request.price_usd_per_hour,
                                          billing=billing)
                saved = _store_or_save(store, result)
                if saved is not None and sys.exc_info()[0] is not None:  # an interrupt goes on
                    log.error("%s; the result is saved in %s", saved[1], saved[0])
    if saved is not None:
        raise ResultNotStored(result, *saved)
    notify(ProbeEvent(request, "done", str(result.status), result))
    return result


def run_probes(
    requests: Sequence[ProbeRequest],
    *,
    launcher_for: LauncherFor,
    store: ProbeStore,
    max_usd: float | None = None,
    on_event: Callable[[ProbeEvent], None] | None = None,
) -> list[ProbeResult]:
    """Run the probes one after another and return their results (all also in the store).

    Refuses (ProbeError, nothing launched or stored) when the estimate exceeds ``max_usd`` or
    a launcher finds no cloud credentials (``check_credentials``). Ctrl-C and
    SIGTERM record the running probe as interrupted, terminate it, and propagate.
    """
    check_budget(requests, launcher_for, max_usd)
    check_credentials(requests, launcher_for)
    ids = [r.probe_id for r in requests]
    if len(set(ids)) != len(ids):
        raise ProbeError("probe ids must be unique within one run")
    notify = on_event or (lambda _event: None)
    results = []
    with _sigterm_as_interrupt():
        for request in requests:
            results.append(_run_one(request, launcher_for(request), store, notify))
    return results
