"""What a probe costs before it runs: one quote, from the launcher that would run it.

A probe is billed from launch until the instance is gone: the launcher's boot time for the
instance's family (``Launcher.boot_s``: image start, setup, installs) plus the harness's run
(the time box, twice with the largest-batch search), billed by the cloud's rule
(``pricing.billing``: per second, at least a minute; ``Launcher.cloud`` names the cloud).
``quote_probe`` is the one place that figure is made:
the planner's suggestions, "could be better", the headline's next probe and ``advisor probe``'s
``--max-usd`` check all take it from here, and ``quote_text`` writes it rounded up, so a cap of
the figure shown always admits the probe (``probes.launchers.cost_check`` checks quotes
against their caps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pricing import BillingRule, usd
from probes.errors import ProbeError
from probes.launchers.choice import launcher_for_offer

if TYPE_CHECKING:
    from probes.types import ProbeRequest

__all__ = ["DEFAULT_PROBE_TIME_BOX_S", "ProbeQuote", "quote_probe", "quote_request", "quote_text"]

DEFAULT_PROBE_TIME_BOX_S = 30.0  # ``advisor probe``'s time box without --time-box or --tune


@dataclass(frozen=True, slots=True)
class ProbeQuote:
    """The most one probe of ``offer_key`` costs: ``boot_s`` of its launcher for the family,
    ``run_s`` of harness, billed by the cloud's ``billing`` rule (None: this machine, not
    billed per start), at ``price_usd_per_hour``; ``max_usd`` is the probe's own cap (its
    request's; None: none)."""

    offer_key: str
    launcher: str
    boot_s: float
    run_s: float
    price_usd_per_hour: float
    billing: BillingRule | None = None
    max_usd: float | None = None

    @property
    def billed_s(self) -> float:
        """Seconds billed: boot plus run, as the cloud's rule bills them (at least its
        minimum)."""
        run_s = self.boot_s + self.run_s
        return self.billing.billed_s(run_s) if self.billing is not None else run_s

    @property
    def usd(self) -> float:
        """Dollars billed for ``billed_s`` at the offer's price."""
        return usd(self.billed_s, self.price_usd_per_hour)

    def text(self) -> str:
        """The quote as every output writes it (``quote_text``)."""
        return quote_text(self.usd)


def quote_text(usd: float) -> str:
    """Dollars of a probe quote, rounded up (to $0.001 below a dollar, to the cent from one),
    so that ``--max-usd`` with the figure shown admits the probe: ``$0.027``, ``$1.24``."""
    if usd <= 0:
        return "$0"
    step = 0.001 if usd < 1 else 0.01
    shown = math.ceil(usd / step) * step
    while shown < usd:  # a product that rounded down
        shown += step
    return f"${shown:,.3f}" if step < 0.01 else f"${shown:,.2f}"


def quote_probe(offer_key: str, *, price_usd_per_hour: float,
                time_box_s: float = DEFAULT_PROBE_TIME_BOX_S, find_batch: bool = False,
                launcher: str | None = None) -> ProbeQuote:
    """The quote of one probe of ``offer_key`` by ``launcher`` (default: the one that probes the
    offer): its boot time for the family, the run (``time_box_s``, doubled by ``find_batch``)
    and the cloud's billing minimum. ProbeError for an offer no launcher runs."""
    from probes.launchers import launcher_class

    return launcher_class(_launcher_name(offer_key, launcher)).quote(
        offer_key, price_usd_per_hour=price_usd_per_hour,
        run_s=time_box_s * (2.0 if find_batch else 1.0))


def quote_request(request: ProbeRequest, *, launcher: str | None = None) -> ProbeQuote:
    """The quote of ``request`` (its offer, price, time box, batch search and own cap) by
    ``launcher`` (default: the one that probes the offer)."""
    from probes.launchers import launcher_class

    return launcher_class(_launcher_name(request.offer_key, launcher)).quote_request(request)


def _launcher_name(offer_key: str, name: str | None) -> str:
    """``name``, by default the launcher that probes ``offer_key``; ProbeError for none."""
    name = name or launcher_for_offer(offer_key)
    if name is None:
        raise ProbeError(f"offer {offer_key!r}: no launcher probes it (probes run on aws, gcp "
                         "or this machine)")
    return name
