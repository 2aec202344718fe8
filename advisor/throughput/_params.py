"""The ranges of ``PlainTransferModel``'s hyper-parameters (their defaults and meaning are
stated once, in its ``__init__``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.errors import AdvisorError

__all__ = ["check_hyper_parameters"]


def check_hyper_parameters(values: Mapping[str, Any]) -> None:
    """AdvisorError naming the first hyper-parameter out of its range and its value."""
    for name in ("tau", "single_probe_dispersion", "ridge_alpha", "foreign_widening",
                 "similarity_tau"):
        if not values[name] > 0:
            raise AdvisorError(f"{name} must be > 0, got {values[name]}")
    for name in ("factor_weight", "factor_weight_unseen", "krige_weight",
                 "spec_prior_weight", "row_krige_slope", "time_fit_weight",
                 "roofline_weight", "shipped_weight", "shipped_weight_unseen",
                 "published_cross_kind_weight"):
        if not 0 <= values[name] <= 1:
            raise AdvisorError(f"{name} must be in [0, 1], got {values[name]}")
    if values["published_peer_count"] < 0:
        raise AdvisorError("published_peer_count must be >= 0, got "
                           f"{values['published_peer_count']}")
    if values["twin_shrinkage"] < 0:
        raise AdvisorError("twin_shrinkage must be >= 0 (0 = off), got "
                           f"{values['twin_shrinkage']}")
    if values["factor_rank"] < 1 or not all(
            values[name] > 0 for name in ("factor_alpha", "factor_shrinkage", "spec_alpha")):
        raise AdvisorError("factor_rank must be >= 1 and factor_alpha, factor_shrinkage, "
                           "spec_alpha > 0")
    if not 0 < values["interval_coverage"] < 1:
        raise AdvisorError("interval_coverage must be in (0, 1), got "
                           f"{values['interval_coverage']}")
    if not 0 < values["precision_mismatch_weight"] <= 1:
        raise AdvisorError("precision_mismatch_weight must be in (0, 1], got "
                           f"{values['precision_mismatch_weight']}")
