"""Offers, accelerator specs, the shipped price catalog and live price sources."""

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
from pricing.errors import PricingError, SnapshotError, UnknownNameError
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
