"""``advisor pricing list`` writes prices as every other output does (``fmt_usd``)."""

from __future__ import annotations

from click.testing import CliRunner

from cli.main import advisor
from pricing import Market, shipped_catalog
from reports.formatting import fmt_usd


def test_cheap_prices_keep_their_figures_as_the_ranking_shows_them() -> None:
    # '$/h' was written to the cent: 0.0616 and 0.0627 (two T4 spot offers) both read 0.06,
    # where 'advisor recommend' shows 0.0616 for the same offer
    result = CliRunner().invoke(advisor, ["pricing", "list", "--accelerator", "T4", "--spot"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    rows = {tuple(c.strip() for c in line.strip("│").split("│")[:5]): line.split("│")
            for line in result.stdout.splitlines() if line.startswith("│")}
    offers = [o for o in shipped_catalog().offers
              if o.accelerator == "T4" and o.market is Market.SPOT and not o.zone]
    cheap = [o for o in offers if o.price_usd_per_hour < 0.1]
    assert len({round(o.price_usd_per_hour, 2) for o in cheap}) < len(
        {o.price_usd_per_hour for o in cheap})  # the case: cents alone cannot tell them apart
    for o in offers:
        key = (o.cloud.value, o.region, o.instance_type, f"{o.accelerator_count}x T4", "spot")
        cells = rows[key]
        assert cells[6].strip() == fmt_usd(o.price_usd_per_hour)
        assert cells[7].strip() == fmt_usd(o.price_usd_per_accelerator_hour)
