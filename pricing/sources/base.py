"""The price-source seam: one small ABC, one thin stateless class per cloud behind it."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from pricing.errors import PricingError
from pricing.types import Cloud, InstanceOffer

__all__ = [
    "Clock", "FetchResult", "PriceSource", "Sleep", "SourceError", "utc_now", "with_backoff",
]

T = TypeVar("T")

Clock = Callable[[], datetime]
Sleep = Callable[[float], None]


def utc_now() -> datetime:
    """The current time in UTC (the default clock of every source)."""
    return datetime.now(UTC)


class SourceError(PricingError):
    """A price source could not produce a complete answer (network, API, throttling, data)."""


@dataclass(frozen=True)
class FetchResult:
    """What one fetch produced.

    ``offers`` are well-formed (price > 0, counts >= 1, unique on
    (cloud, instance_type, region, zone, market)); ``skipped`` holds one line per entry the
    source left out and why (malformed, zero price, unknown accelerator); ``captured_at`` is
    when the prices were read (UTC); ``regions`` the regions that were asked for.
    """

    cloud: Cloud
    offers: tuple[InstanceOffer, ...]
    captured_at: datetime
    regions: tuple[str, ...]
    skipped: tuple[str, ...] = field(default_factory=tuple)


class PriceSource(abc.ABC):
    """Reads current prices of accelerator instances from one cloud.

    Contract, checked by ``tests/pricing/test_sources_contract.py`` for every source:

    - ``fetch(regions)`` returns a FetchResult for exactly those regions (``None``: the
      source's default regions); every offer has ``cloud == self.cloud``, a price in USD per
      hour of the whole instance (> 0), ``accelerator_count >= 1`` devices, a canonical
      accelerator name from the catalog, and ``observed_at`` set to the capture date.
    - No two offers share (cloud, instance_type, region, zone, market). Zone-level rows
      (``zone`` set) may sit beside the region-level row (``zone`` None) of the same offer.
    - Entries the source cannot read are left out and listed in ``skipped``; anything that
      stops it from giving a complete answer (API error after retries, a page that fails,
      an empty answer) raises ``SourceError`` (a PricingError) saying what failed.
    - Cloud SDKs are imported inside ``fetch`` (or the client factory), never at module
      import; sources hold no state between fetches and read no credentials themselves
      (the SDK's default credential chain does).
    """

    cloud: Cloud
    default_regions: tuple[str, ...] = ()

    @abc.abstractmethod
    def fetch(self, regions: Sequence[str] | None = None) -> FetchResult:
        """Read prices for ``regions`` (default: ``default_regions``)."""

    def _regions(self, regions: Sequence[str] | None) -> tuple[str, ...]:
        chosen = tuple(regions) if regions else self.default_regions
        if not chosen:
            raise SourceError(f"{self.cloud}: no regions to refresh; pass --region")
        return chosen


def with_backoff(
    call: Callable[[], T],
    *,
    is_throttle: Callable[[BaseException], bool],
    what: str,
    attempts: int = 6,
    base_delay_s: float = 0.5,
    sleep: Sleep = time.sleep,
) -> T:
    """Run ``call``; on a throttling error wait 0.5, 1, 2, ... s and retry, ``attempts`` in all.

    Other errors are raised at once; throttling on the last attempt raises SourceError."""
    retrying = Retrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=base_delay_s),
                        retry=retry_if_exception(is_throttle), sleep=sleep)
    try:
        return retrying(call)
    except RetryError as exc:
        last = exc.last_attempt.exception()
        raise SourceError(f"{what}: still throttled after {attempts} attempts ({last})") from last
