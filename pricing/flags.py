"""Why a price is doubted: a typed flag (the rule and the figures it compared), rendered once.

``InstanceOffer.flagged`` holds the rendered text (``render_flags``) so that CSV snapshots and
existing readers keep a plain string; code that builds flags passes ``PriceFlag`` records and
renders them here, nowhere else. Prices are USD per instance-hour.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["FLAG_SEPARATOR", "FlagRule", "PriceFlag", "render_flag", "render_flags"]

FLAG_SEPARATOR = "; "


class FlagRule(enum.StrEnum):
    """The check that doubts a price."""

    # on demand: under a >1.6x gap below the SKU's list-price cluster of regions
    BELOW_LIST_CLUSTER = "below-list-cluster"
    # the price table itself marks the price as disagreeing with the same SKU elsewhere
    SOURCE_DOUBT = "source-doubt"
    # a spot price at or above the same region's on-demand price: no usable spot market
    SPOT_NOT_CHEAPER = "spot-not-cheaper"
    # a placeholder value (700.0 on GCP TPUs, 9999, ...)
    PLACEHOLDER_PRICE = "placeholder-price"
    # under a floor per device-hour: a zero in disguise
    NEAR_ZERO_PRICE = "near-zero-price"
    # a spot price seen in a single availability zone only
    SINGLE_ZONE_SPOT = "single-zone-spot"


@dataclass(frozen=True, slots=True)
class PriceFlag:
    """One doubt about one price: the rule, the price, and what it was compared with.

    ``reference_usd_per_hour`` is the figure compared (a median of other regions, the
    on-demand price, a floor); ``reference_regions`` how many regions that median covers
    (0 when it is not a median).
    """

    rule: FlagRule
    price_usd_per_hour: float
    reference_usd_per_hour: float | None = None
    reference_regions: int = 0

    @property
    def ratio(self) -> float | None:
        """Price over reference (0.49 = about half of it); None without a reference."""
        if not self.reference_usd_per_hour:
            return None
        return self.price_usd_per_hour / self.reference_usd_per_hour


def render_flag(flag: PriceFlag) -> str:
    """``rule: what was compared``, one line, e.g. ``below-list-cluster: 43.07/h is 0.49x ...``."""
    price, ref, ratio = flag.price_usd_per_hour, flag.reference_usd_per_hour, flag.ratio
    rule = flag.rule
    if rule is FlagRule.BELOW_LIST_CLUSTER:
        text = (f"{price:g}/h is {ratio:.2f}x the median of this SKU's "
                f"{flag.reference_regions} list-price regions ({ref:g}/h), below a gap of more "
                "than 1.6x between its regional prices")
    elif rule is FlagRule.SOURCE_DOUBT:
        if ratio is None:
            compared = ""
        elif flag.reference_regions == 1:
            compared = f": {ratio:.2f}x its one trusted region ({ref:g}/h)"
        else:
            compared = (f": {ratio:.2f}x the median of its {flag.reference_regions} trusted "
                        f"regions ({ref:g}/h)")
        text = (f"the price table marks {price:g}/h as disagreeing with this SKU "
                f"elsewhere{compared}")
    elif rule is FlagRule.SPOT_NOT_CHEAPER:
        text = (f"spot {price:g}/h is {ratio:.2f}x the on-demand {ref:g}/h in this region "
                "(no usable spot market)")
    elif rule is FlagRule.PLACEHOLDER_PRICE:
        text = f"{price:g}/h is a placeholder value, not a price"
    elif rule is FlagRule.NEAR_ZERO_PRICE:
        text = (f"{price:g}/h is under the floor of {ref:g}/h (0.01 per device-hour): a zero "
                "in disguise")
    else:
        text = f"spot {price:g}/h was seen in a single availability zone only, unverified"
    return f"{rule.value}: {text}"


def render_flags(flags: Iterable[PriceFlag]) -> str:
    """Every flag rendered, joined by ``FLAG_SEPARATOR`` (empty when there are none)."""
    return FLAG_SEPARATOR.join(render_flag(f) for f in flags)
