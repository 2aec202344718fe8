"""``advisor pricing list|refresh|status``: what the catalog holds, and keeping it fresh."""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from advisor.storage import data_dir
from cli.errors import handle_errors
from cli.options import OneOf, json_option
from cli.render import console, echo_json, fmt_usd, printable
from pricing import Cloud, Market

if TYPE_CHECKING:  # the catalog (numpy) is imported when a command reads it, not for --help
    from pricing import Catalog, InstanceOffer

__all__ = ["pricing"]

_CLOUDS = OneOf([c.value for c in Cloud])



def _offer_json(offer: InstanceOffer) -> dict[str, object]:
    return {
        "key": offer.key, "cloud": offer.cloud.value, "region": offer.region, "zone": offer.zone,
        "instance_type": offer.instance_type, "accelerator": offer.accelerator,
        "accelerator_count": offer.accelerator_count, "vcpus": offer.vcpus,
        "memory_gib": offer.memory_gib, "accelerator_memory_gib": offer.accelerator_memory_gib,
        "market": offer.market.value, "price_usd_per_hour": offer.price_usd_per_hour,
        "price_usd_per_accelerator_hour": round(offer.price_usd_per_accelerator_hour, 6),
        "flagged": offer.flagged, "source": offer.source,
        "observed_at": offer.observed_at.isoformat(),
    }


def _captured(catalog: Catalog) -> dict[str, str]:
    return {c.value: d.isoformat() for c, d in sorted(catalog.captured_at.items())}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def pricing() -> None:
    """List, refresh and check the price catalog.

    \b
    Examples:
      advisor pricing list --accelerator H100 --spot
      advisor pricing list --cloud gcp --region us-central1 --json
      advisor pricing refresh --cloud aws --region us-east-1
      advisor pricing status

    Commands read the newest refreshed snapshot per cloud and fall back to the prices
    shipped with advisor. Nothing is fetched unless you run 'refresh'.
    """


@pricing.command("list")
@click.option("--cloud", "clouds", multiple=True, type=_CLOUDS, help="Only this cloud (repeatable).")
@click.option("--accelerator", "accelerators", multiple=True, metavar="NAME",
              help="Only this accelerator or family, e.g. H100 (every H100 variant), "
                   "H100-SXM (just that one), tpu-v5e (repeatable).")
@click.option("--region", "regions", multiple=True, metavar="REGION",
              help="Only this region, e.g. us-east-1 (repeatable).")
@click.option("--spot/--on-demand", "spot", default=None,
              help="Only spot, or only on-demand offers (default: both).")
@click.option("--zones", is_flag=True, help="Also list per-zone spot prices of snapshots.")
@click.option("--flagged", "flagged_only", is_flag=True,
              help="Only rows whose price is doubted, with the rule and figures behind each.")
@json_option
@handle_errors
def list_offers(
    clouds: tuple[str, ...], accelerators: tuple[str, ...], regions: tuple[str, ...],
    spot: bool | None, zones: bool, flagged_only: bool, as_json: bool,
) -> None:
    """List offers, cheapest per accelerator-hour first.

    \b
    Examples:
      advisor pricing list --accelerator a100 --region us-east-1
      advisor pricing list --cloud aws --spot --json | jq '.offers[0]'
      advisor pricing list --flagged          rows a consistency check doubts
    """
    from pricing.snapshots import current_catalog

    catalog = current_catalog(data_dir() / "snapshots", zones=zones)
    catalog.check_regions(regions, field="--region")
    wanted = catalog.matching_accelerators(accelerators, field="--accelerator")
    markets = None if spot is None else [Market.SPOT if spot else Market.ON_DEMAND]
    offers = catalog.query(
        clouds=[Cloud(c) for c in clouds] or None, regions=list(regions) or None,
        accelerators=wanted or None, markets=markets,
    )
    if flagged_only:
        offers = [o for o in offers if o.flagged]
    offers.sort(key=lambda o: (o.price_usd_per_accelerator_hour, o.key, o.zone or ""))
    if as_json:
        echo_json({
            "captured_at": _captured(catalog),
            "approximate_dates": sorted(c.value for c in catalog.approximate_dates),
            "count": len(offers), "offers": [_offer_json(o) for o in offers],
        })
        return
    if not offers:  # every filter is a known name, but together they match nothing
        console().print(f"no offer matches these filters; the catalog has {len(catalog.offers):,} "
                        "offers: 'advisor pricing list' with fewer filters shows which")
        return
    _render_offers(offers, catalog, why=flagged_only)


def _render_offers(offers: list[InstanceOffer], catalog: Catalog, *, why: bool) -> None:
    """The table; ``why`` adds a column with each flag's rule and the figures it compared."""
    out = console()
    dates = ", ".join(f"{c} {d}" for c, d in _captured(catalog).items())
    table = Table(title=f"{len(offers)} offers (prices captured {dates})", title_justify="left")
    columns = [("cloud", "left"), ("region", "left"), ("instance type", "left"),
               ("accelerators", "left"), ("market", "left"), ("$/h", "right"),
               ("$/dev-h", "right"), ("why doubted" if why else "!", "left")]
    for name, justify in columns:
        table.add_column(name, justify=justify,  # type: ignore[arg-type]
                         no_wrap=name not in ("accelerators", "region", "why doubted"))
    for o in offers:
        where = f"{o.region} ({o.zone})" if o.zone else o.region
        table.add_row(*(Text(printable(cell)) for cell in (
            o.cloud.value, where, o.instance_type,
            f"{o.accelerator_count}x {o.accelerator}",
            o.market.value, fmt_usd(o.price_usd_per_hour),
            fmt_usd(o.price_usd_per_accelerator_hour),
            o.flagged if why else ("!" if o.flagged else ""),
        )))
    out.print(table)
    flagged = sum(1 for o in offers if o.flagged)
    if flagged and not why:
        out.print(f"! = {flagged} rows with a doubted price, never ranked unless asked "
                  "('advisor pricing list --flagged' shows each rule and the figures it compared)")
    if catalog.approximate_dates:
        out.print("note: the shipped prices' capture date is approximate "
                  f"({', '.join(sorted(c.value for c in catalog.approximate_dates))}); "
                  "'advisor pricing refresh' fetches current ones.")


@pricing.command("refresh")
@click.option("--cloud", required=True, type=_CLOUDS, help="Which cloud's prices to fetch.")
@click.option("--region", "regions", multiple=True, metavar="REGION",
              help="Only this region (repeatable); other regions keep their previous prices.")
@json_option
@handle_errors
def refresh_prices(cloud: str, regions: tuple[str, ...], as_json: bool) -> None:
    """Fetch current prices from a cloud and write a new dated snapshot.

    \b
    Examples:
      advisor pricing refresh --cloud aws                      (boto3 credentials)
      advisor pricing refresh --cloud gcp --region us-central1 (application-default login)
      advisor pricing refresh --cloud azure                    (public API, no login)

    If anything fails part-way, nothing is written and the previous snapshot stays in use.
    """
    from pricing.refresh import refresh
    from pricing.sources import source_for

    source = source_for(Cloud(cloud))
    with console(stderr=True).status(f"fetching {cloud} prices..."):
        result = refresh(source, data_dir() / "snapshots", regions=list(regions) or None)
    if as_json:
        echo_json({
            "cloud": cloud, "path": str(result.path), "fetched_rows": result.fetched_rows,
            "kept_rows": result.kept_rows, "flagged_rows": result.flagged_rows,
            "skipped": list(result.skipped), "regions": list(result.regions),
        })
        return
    out = console()
    out.print(f"{cloud}: {result.fetched_rows} offers fetched for {', '.join(result.regions)}, "
              f"{result.kept_rows} kept from before, {result.flagged_rows} flagged -> {result.path}")
    if result.skipped:
        out.print(f"skipped {len(result.skipped)} entries, e.g. {result.skipped[0]}")


@pricing.command("status")
@json_option
@handle_errors
def status(as_json: bool) -> None:
    """List price snapshots per cloud: capture time, row counts, age, which is in use.

    \b
    Example:
      advisor pricing status --json
    """
    from pricing.snapshots import snapshot_status

    infos = snapshot_status(data_dir() / "snapshots")
    if as_json:
        echo_json({"snapshots": [i.to_dict() for i in infos]})
        return
    table = Table(title="price snapshots (* = in use)", title_justify="left")
    numeric = ("age days", "rows", "on-demand", "spot", "flagged", "regions")
    for name in ("", "cloud", "captured (UTC)", *numeric, "file"):
        table.add_column(name, justify="right" if name in numeric else "left")
    for i in infos:
        table.add_row(
            "*" if i.in_use else "", i.cloud.value,
            i.captured_at.strftime("%Y-%m-%d %H:%M") + (" (shipped, approx.)" if i.shipped else ""),
            f"{i.age_days:.1f}", str(i.rows), str(i.rows_by_market.get("on-demand", 0)),
            str(i.rows_by_market.get("spot", 0)), str(i.flagged_rows), str(len(i.regions)),
            "shipped" if i.shipped else i.path.name,
        )
    console().print(table)
    old = [i for i in infos if i.in_use and i.age_days > 90]
    if old:
        console().print(f"warning: prices in use for {', '.join(i.cloud.value for i in old)} are "
                        f"over 90 days old (today {date.today()}); run 'advisor pricing refresh'.")
