"""A fake Azure Retail Prices API for tests and demos.

``FakeRetailPricesServer`` is a local HTTP server (127.0.0.1) paging Retail Prices items
with NextPageLink; ``azure_items`` turns catalog offers into those items. The AWS fake is
``pricing.sources.fakes_aws``, the GCP fakes ``pricing.sources.fakes_gcp``.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pricing.types import Cloud, InstanceOffer, Market

__all__ = ["FakeRetailPricesServer", "azure_items"]


def azure_items(offers: Iterable[InstanceOffer]) -> list[dict[str, Any]]:
    """Retail Prices API items for these Azure offers, plus Windows and Low Priority decoys."""
    items = []
    for offer in offers:
        if offer.cloud is not Cloud.AZURE:
            continue
        short = offer.instance_type.removeprefix("Standard_").replace("_", " ")
        product = f"Virtual Machines {short.split(' ', 1)[-1]} Series"
        spot = offer.market is Market.SPOT
        base = {
            "currencyCode": "USD", "tierMinimumUnits": 0.0, "armRegionName": offer.region,
            "location": offer.region, "effectiveStartDate": "2025-01-01T00:00:00Z",
            "meterId": f"meter-{short}-{offer.region}-{offer.market}",
            "meterName": f"{short} Spot" if spot else short,
            "productId": "DZH318Z0BQ4L", "skuId": "DZH318Z0BQ4L/00CV",
            "productName": product,
            "skuName": f"{short} Spot" if spot else short, "serviceName": "Virtual Machines",
            "serviceId": "DZH313Z7MMC8", "serviceFamily": "Compute", "unitOfMeasure": "1 Hour",
            "type": "Consumption", "isPrimaryMeterRegion": True,
            "armSkuName": offer.instance_type,
            "retailPrice": offer.price_usd_per_hour, "unitPrice": offer.price_usd_per_hour,
        }
        items.append(base)
        items.append({**base, "productName": product + " Windows",
                      "retailPrice": offer.price_usd_per_hour * 1.4,
                      "unitPrice": offer.price_usd_per_hour * 1.4})
        if not spot:
            items.append({**base, "meterName": f"{short} Low Priority",
                          "retailPrice": offer.price_usd_per_hour * 0.2,
                          "unitPrice": offer.price_usd_per_hour * 0.2})
    return items


class FakeRetailPricesServer:
    """A local Retail Prices API: pages ``items`` (``page_size`` each) via NextPageLink.

    ``fail_on_page=N`` answers page N with HTTP 500; ``requests`` records every path asked.
    Use as a context manager; ``url`` is the base URL to give AzurePriceSource.
    """

    def __init__(self, items: list[dict[str, Any]], *, page_size: int = 10,
                 fail_on_page: int | None = None) -> None:
        self.items, self.page_size, self.fail_on_page = items, page_size, fail_on_page
        self.requests: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                server.requests.append(self.path)
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                skip = int(query.get("$skip", ["0"])[0])
                page = skip // server.page_size + 1
                if page == server.fail_on_page:
                    self.send_error(500, "fake failure")
                    return
                chunk = server.items[skip:skip + server.page_size]
                following = skip + server.page_size
                next_link = None
                if following < len(server.items):
                    rest = {k: v[0] for k, v in query.items()} | {"$skip": str(following)}
                    next_link = f"{server.url}?{urllib.parse.urlencode(rest)}"
                body = json.dumps({
                    "BillingCurrency": "USD", "CustomerEntityId": "Default",
                    "CustomerEntityType": "Retail", "Items": chunk,
                    "NextPageLink": next_link, "Count": len(chunk),
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: ARG002
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/api/retail/prices"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeRetailPricesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
