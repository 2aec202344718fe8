"""What one sweep trial-hour costs: the price of the instance named in sweep.yaml."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.sweep.spec import SweepSpec
from pricing import Catalog, InstanceOffer, PricingError, shipped_catalog
from probes.errors import ProbeError
from probes.offer_keys import find_catalog_offer, parse_offer_key

__all__ = ["InstanceChoice", "find_offer", "resolve_instance"]


@dataclass(frozen=True)
class InstanceChoice:
    """The instance trials run on and its price; ``offer`` is None for ``local``."""

    label: str
    price_usd_per_hour: float
    offer: InstanceOffer | None = None

    @property
    def prices_captured_at(self) -> str | None:
        """ISO date the catalog observed the price (None for ``local``, priced by the user)."""
        return self.offer.observed_at.isoformat() if self.offer is not None else None


def _catalog() -> Catalog:
    """The newest refreshed snapshot per cloud, else the shipped catalog."""
    try:
        from advisor.ranking import current_catalog
    except ImportError:  # pragma: no cover - the service module lands with recommend
        return shipped_catalog()
    return current_catalog()


def find_offer(key: str, catalog: Catalog | None = None) -> InstanceOffer:
    """The catalog offer a key names (``aws:g5.xlarge:us-east-1:spot``; no market means
    on-demand, as everywhere). AdvisorError names ``instance`` and the nearest keys."""
    catalog = catalog or _catalog()
    try:
        return find_catalog_offer(parse_offer_key(key, field="instance"), catalog.offers,
                                  field="instance")
    except ProbeError as exc:
        raise AdvisorError(str(exc)) from exc


def _recommended(spec: SweepSpec) -> InstanceOffer:
    assert spec.model is not None
    path = Path(spec.model)
    if not path.is_absolute() and spec.source_dir:
        path = Path(spec.source_dir) / path
    from advisor.ranking import recommend_for_file

    ranked = recommend_for_file(path).ranked
    if not ranked:
        raise AdvisorError(f"instance: recommended, but the ranking for {path} is empty; "
                           "loosen its constraints or give an offer key")
    return ranked[0].offer


def resolve_instance(spec: SweepSpec) -> InstanceChoice:
    """The instance and hourly price trials are charged at (raises AdvisorError)."""
    if spec.instance == "local":
        return InstanceChoice("local", spec.price_usd_per_hour)
    try:
        offer = _recommended(spec) if spec.instance == "recommended" else find_offer(spec.instance)
    except PricingError as exc:
        raise AdvisorError(f"instance: {exc}") from exc
    return InstanceChoice(offer.key, offer.price_usd_per_hour, offer)
