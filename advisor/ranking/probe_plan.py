"""What ``advisor probe`` is about to run: one request per offer, its launcher, and what the
whole batch may cost, checked against the dollar cap before anything starts.

Which launcher probes an offer, each probe's quote and the cap check are ``probes.launchers``'
(``launcher_for_offer``, ``quote_request``, ``check_cost``); this module puts them together for
one workload spec."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from advisor.errors import AdvisorError
from advisor.profiling import recipe_for
from advisor.ranking.offers import per_device_batch
from advisor.spec import WorkloadSpec
from pricing import (
    InstanceOffer,
    OfferKeyError,
    find_catalog_offer,
    parse_offer_key,
    shipped_catalog,
)
from probes import (
    LOCAL_OFFER_KEY,
    ProbeQuote,
    ProbeRequest,
    check_cost,
    fmt_usd_small,
    launcher_for_offer,
    quote_request,
)

__all__ = ["ProbeBatch", "ProbeOptions", "ProbeTarget", "offer_price", "prepare_probes",
           "probe_target"]


@dataclass(frozen=True, slots=True)
class ProbeTarget:
    """An offer to probe: its key, launcher, price and accelerator (None: a local probe runs
    on whatever the machine has)."""

    key: str
    launcher: str
    price_usd_per_hour: float
    accelerator: str | None
    accelerator_count: int


@dataclass(frozen=True, slots=True)
class ProbeOptions:
    """How every probe of one ``advisor probe`` call runs."""

    time_box_s: float
    find_batch: bool = False
    input_check: bool = True
    memory_limit_gib: float | None = None
    tune: bool = False
    allow_numerics: bool = False


@dataclass(frozen=True, slots=True)
class ProbeBatch:
    """The requests, the launcher of each (by probe id), and each one's quote: its time box
    (its search box included) plus its launcher's boot time, billed at its price."""

    requests: tuple[ProbeRequest, ...]
    launchers: dict[str, str]
    quotes: tuple[ProbeQuote, ...]

    @property
    def estimate_usd(self) -> float:
        """The most the whole batch may cost: the sum of its quotes."""
        return sum(quote.usd for quote in self.quotes)

    def check_cap(self, max_usd: float | None) -> None:
        """``probes.launchers``' one cost check: OverProbeBudget (a ProbeError) naming
        --max-usd when the estimate is over it (None: no cap)."""
        check_cost(self.quotes, max_usd)

    def describe_estimate(self) -> str:
        """The estimate as the probe table's title shows it."""
        return fmt_usd_small(self.estimate_usd)


def offer_price(offer_key: str) -> float:
    """USD per hour of a catalog offer (0 for ``local`` and keys the catalog does not have,
    e.g. one a stored probe names that this version cannot parse)."""
    try:
        ref = parse_offer_key(offer_key)
    except OfferKeyError:
        return 0.0
    offer = None if ref.cloud is None else _catalog_offer(ref.key)
    return offer.price_usd_per_hour if offer is not None else 0.0


def _catalog_offer(key: str) -> InstanceOffer | None:
    return {o.key: o for o in shipped_catalog().offers}.get(key)


def probe_target(text: str) -> ProbeTarget:
    """The catalog offer ``text`` names (or ``local``); AdvisorError for unknown offers and
    clouds probes cannot launch on."""
    ref = parse_offer_key(text)
    if ref.cloud is None:
        return ProbeTarget(LOCAL_OFFER_KEY, "local", 0.0, None, 1)
    # the cheapest of its per-zone rows, or an error naming the nearest keys
    offer = find_catalog_offer(ref, shipped_catalog().offers, field="--on")
    launcher = launcher_for_offer(ref.key)
    if launcher is None:
        raise AdvisorError(f"offer {ref.key!r}: probes run on aws or gcp, not {ref.cloud}")
    return ProbeTarget(ref.key, launcher, offer.price_usd_per_hour, offer.accelerator,
                       offer.accelerator_count)


def prepare_probes(spec: WorkloadSpec, targets: list[ProbeTarget],
                   options: ProbeOptions) -> ProbeBatch:
    """One request per target (the global batch split over its devices) and their cost."""
    requests, launchers, quotes = [], {}, []
    for target in targets:
        request = ProbeRequest(
            probe_id=uuid.uuid4().hex[:12], offer_key=target.key,
            recipe=recipe_for(spec, samples_per_device=per_device_batch(
                spec.batch_size, target.accelerator_count)),
            workload_fingerprint=spec.fingerprint(), time_box_s=options.time_box_s,
            price_usd_per_hour=target.price_usd_per_hour, find_batch=options.find_batch,
            input_check=options.input_check, memory_limit_gib=options.memory_limit_gib,
            accelerator=target.accelerator, tune=options.tune,
            allow_numerics=options.allow_numerics)
        requests.append(request)
        launchers[request.probe_id] = target.launcher
        quotes.append(quote_request(request, launcher=target.launcher))
    return ProbeBatch(tuple(requests), launchers, tuple(quotes))
