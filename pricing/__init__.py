"""Offers, accelerator specs, the shipped price catalog and live price sources.

``probes``, ``advisor``, ``reports`` and ``cli`` import pricing through this face. The names
below are imported on first use, so ``import pricing`` (every command's error handling does)
stays fast and imports neither numpy nor the catalog code until a command asks for offers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pricing._lazy import lazy_exports
from pricing.errors import PricingError, SnapshotError, UnknownNameError

if TYPE_CHECKING:
    from pricing.accelerators import (
        SHIPPED_DATA_DIR,
        canonical_accelerator_name,
        load_accelerators,
        matching_accelerators,
    )
    from pricing.billing import (
        BILLING_RULES,
        BillingRule,
        billed_usd,
        billing_rule,
        samples_per_usd,
        seconds_for_usd,
        usd,
    )
    from pricing.catalog import Catalog, load_catalog, read_offers_csv, shipped_catalog
    from pricing.devices import accelerator_for_device
    from pricing.offer_keys import (
        LOCAL_OFFER_KEY,
        OfferKeyError,
        OfferRef,
        find_catalog_offer,
        nearest_offer_keys,
        parse_offer_key,
    )
    from pricing.spot import (
        InterruptionBucket,
        SpotData,
        SpotRisk,
        SpotTerms,
        shipped_spot_data,
        spot_risk,
        spot_terms,
    )
    from pricing.types import AcceleratorSpec, Cloud, InstanceOffer, Market

__all__ = [
    "BILLING_RULES",
    "LOCAL_OFFER_KEY",
    "SHIPPED_DATA_DIR",
    "BillingRule",
    "AcceleratorSpec",
    "Catalog",
    "Cloud",
    "InstanceOffer",
    "InterruptionBucket",
    "Market",
    "OfferKeyError",
    "OfferRef",
    "PricingError",
    "SnapshotError",
    "SpotData",
    "SpotRisk",
    "SpotTerms",
    "UnknownNameError",
    "accelerator_for_device",
    "billed_usd",
    "billing_rule",
    "canonical_accelerator_name",
    "find_catalog_offer",
    "load_accelerators",
    "load_catalog",
    "matching_accelerators",
    "nearest_offer_keys",
    "parse_offer_key",
    "read_offers_csv",
    "samples_per_usd",
    "seconds_for_usd",
    "shipped_catalog",
    "shipped_spot_data",
    "spot_risk",
    "spot_terms",
    "usd",
]

_HOME = {
    "SHIPPED_DATA_DIR": "accelerators", "canonical_accelerator_name": "accelerators",
    "load_accelerators": "accelerators", "matching_accelerators": "accelerators",
    "BILLING_RULES": "billing", "BillingRule": "billing", "billed_usd": "billing",
    "billing_rule": "billing", "samples_per_usd": "billing", "seconds_for_usd": "billing",
    "usd": "billing",
    "Catalog": "catalog", "load_catalog": "catalog", "read_offers_csv": "catalog",
    "shipped_catalog": "catalog",
    "accelerator_for_device": "devices",
    "LOCAL_OFFER_KEY": "offer_keys", "OfferKeyError": "offer_keys", "OfferRef": "offer_keys",
    "find_catalog_offer": "offer_keys", "nearest_offer_keys": "offer_keys",
    "parse_offer_key": "offer_keys",
    "InterruptionBucket": "spot", "SpotData": "spot", "SpotRisk": "spot", "SpotTerms": "spot",
    "shipped_spot_data": "spot", "spot_risk": "spot", "spot_terms": "spot",
    "AcceleratorSpec": "types", "Cloud": "types", "InstanceOffer": "types", "Market": "types",
}

__getattr__, __dir__ = lazy_exports("pricing", _HOME, globals(), __all__)
