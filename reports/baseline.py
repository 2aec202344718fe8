"""The baseline a recommendation's savings are measured against, and the savings themselves.

A user names a baseline as ``cloud:instance_type[:region[:market]]`` (``aws:p4d.24xlarge``,
``aws:p4d.24xlarge:us-east-1:on-demand``); without a market it means on-demand, as every offer
key does (``pricing.offer_keys``), and the report says so. Among the offers of the recommendation
that match, the cheapest ranked one is taken; when none is ranked, the cheapest rejected one (then there is
no throughput estimate and no savings figure, only the reason it was rejected).

A saving compares like with like: where one side is spot and the other on demand, the spot side
is compared at its on-demand twin (the same instance on demand), and the spot discount's share is
shown apart; ``--compare-market any`` compares each side in its own market instead.

Without ``--baseline`` the default is what a team that does not shop around rents: the
cheapest **on-demand 8x A100** offer (any A100 variant: p4d/p4de, a2-highgpu-8g,
ND A100 v4); failing that, the cheapest on-demand A100 offer of any size.
"""

from __future__ import annotations

import difflib
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from advisor.formatting import fmt_money
from advisor.ranking import BASIS_LABEL, CostEstimate, Recommendation
from advisor.throughput import Basis
from pricing import Cloud, InstanceOffer, Market, OfferKeyError, parse_offer_key
from pricing.records import JsonView
from reports.errors import ReportError

__all__ = [
    "DEFAULT_BASELINE_TEXT",
    "Baseline",
    "BaselineQuery",
    "CompareMarket",
    "Savings",
    "choose_baseline",
    "no_saving_because",
    "parse_baseline",
    "report_savings",
    "savings",
]

DEFAULT_BASELINE_TEXT = "default: the cheapest on-demand 8x A100 offer"


@dataclass(frozen=True)
class Baseline:
    """The offer savings are compared with; ``estimate`` is None when it was rejected."""

    offer: InstanceOffer
    estimate: CostEstimate | None
    rejected_because: str | None
    chosen_by: str

    @property
    def no_saving_because(self) -> str | None:
        """Why no saving is measured against this baseline, as the report's HTML says it
        (None when it has an estimate)."""
        if self.estimate is not None:
            return None
        return (f"it was rejected ({self.rejected_because}), so it has no cost estimate to "
                "compare with")

    @property
    def estimate_basis(self) -> Basis | None:
        """The basis of the baseline's throughput (None when it was rejected)."""
        return self.estimate.throughput.basis if self.estimate is not None else None


class CompareMarket(enum.StrEnum):
    """Which markets a saving compares (``--compare-market``)."""

    SAME = "same"  # like for like: both sides on demand where one of them is spot
    ANY = "any"    # the pick in its own market against the baseline in its own


@dataclass(frozen=True)
class Savings(JsonView):
    """What the top pick saves against the baseline, for the whole run and per sample.

    ``pick_side`` and ``baseline_side`` are the two estimates compared: with
    ``CompareMarket.SAME`` (the default) a spot side is replaced by the on-demand estimate of
    the same instance (``CostEstimate.on_demand``), so a saving never mixes the choice of
    hardware with the spot discount; ``spot_discount_usd`` is that discount's share apart (what
    comparing the pick and the baseline each in its own market adds, or takes off; None when both
    are in one market). ``mixed_markets`` says the comparison is spot against on-demand all the
    same (asked for, or no on-demand twin to compare with).

    The range is the baseline's point run cost times the fraction saved at both ends of both
    intervals (as if their errors were independent: a wide, cautious range), so it never
    claims more than the baseline's whole run cost; where both sides carry one throughput
    estimate (the same accelerator and device count) their errors are one, and the range
    takes both sides at the same end (the same instance in another region saves its price
    difference, not a guess of its speed).
    """

    baseline: Baseline
    top: CostEstimate
    pick_side: CostEstimate
    baseline_side: CostEstimate
    compare_market: CompareMarket
    run_saved_usd: float
    run_saved_usd_low: float
    run_saved_usd_high: float
    run_saved_fraction: float
    per_sample_fraction: float
    per_sample_fraction_low: float
    per_sample_fraction_high: float
    hours_difference: float
    spot_discount_usd: float | None
    mixed_markets: bool

    def _markets(self) -> str:
        pick, base = self.pick_side.offer, self.baseline_side.offer
        if self.pick_side is not self.top:
            return (f"both {pick.market} (the pick at its on-demand price "
                    f"{fmt_money(pick.price_usd_per_hour)}/h)")
        if self.baseline_side is not self.baseline.estimate:
            return (f"both {pick.market} (the baseline at its on-demand price "
                    f"{fmt_money(base.price_usd_per_hour)}/h)")
        if not self.mixed_markets:
            return f"both {pick.market}"
        if self.compare_market is CompareMarket.ANY:
            return (f"the pick {pick.market}, the baseline {base.market} "
                    "(--compare-market any)")
        return (f"the pick {pick.market}, the baseline {base.market}: the ranking has no "
                "on-demand offer of the spot side to compare like for like")

    def _spot_share(self) -> str:
        share = self.spot_discount_usd
        if share is None:
            return ""
        if self.compare_market is CompareMarket.ANY:
            return f"; {fmt_money(share)} of it is the spot discount"
        if share >= 0:
            return (f"; the spot discount saves {fmt_money(share)} more (--compare-market any "
                    "counts it)")
        return (f"; the baseline's spot discount takes {fmt_money(-share)} off it "
                "(--compare-market any counts it)")

    @property
    def range_text(self) -> str:
        """The saving's range, ``$1.00 to $2.00``; one figure where both ends read alike (both
        sides carry one throughput estimate: the same hardware in another region or market)."""
        low, high = fmt_money(self.run_saved_usd_low), fmt_money(self.run_saved_usd_high)
        return low if low == high else f"{low} to {high}"

    def describe(self) -> str:
        """The saving as a range, the markets compared, the spot discount's share apart, and
        the basis of both sides, in one line (the report's headline, HTML and CSV say this)."""
        t, b = self.top.throughput.basis, self.baseline.estimate_basis
        base = f"{b} ({BASIS_LABEL[b]})" if b is not None else "not estimated"
        return (f"saves {self.range_text} on the run (point estimate "
                f"{fmt_money(self.run_saved_usd)}, {self.run_saved_fraction:.0%}) against "
                f"{self.baseline.offer.key}, {self._markets()}{self._spot_share()}; the pick is "
                f"{t} ({BASIS_LABEL[t]}), the baseline {base}")

    def to_dict(self) -> dict[str, Any]:
        """The saving as plain data (the report's ``--json`` and CSV carry these figures)."""
        return {
            "baseline_offer": self.baseline.offer.key, "baseline_chosen_by": self.baseline.chosen_by,
            "compare_market": str(self.compare_market),
            "pick_compared_as": self.pick_side.offer.key,
            "baseline_compared_as": self.baseline_side.offer.key,
            "mixed_markets": self.mixed_markets,
            "run_saved_usd": self.run_saved_usd, "run_saved_usd_low": self.run_saved_usd_low,
            "run_saved_usd_high": self.run_saved_usd_high,
            "run_saved_fraction": self.run_saved_fraction,
            "spot_discount_usd": self.spot_discount_usd,
            "baseline_run_cost_usd": self.baseline_side.run_cost_usd,
            "text": self.describe(),
        }


_ANY_REGION = "*"  # stands for "any region" in a key given to the shared offer-key parser


@dataclass(frozen=True)
class BaselineQuery:
    """What ``--baseline`` names. ``region`` None matches any region; ``market`` is the one
    the shared offer-key parser gives (on-demand when none was named, see ``market_named``)."""

    text: str
    cloud: Cloud
    instance_type: str
    region: str | None
    market: Market
    market_named: bool

    def matches(self, offer: InstanceOffer) -> bool:
        """Whether ``offer`` is one this query names (region ignored when not given)."""
        return (offer.cloud is self.cloud and offer.instance_type == self.instance_type
                and self.region in (None, offer.region) and offer.market is self.market)

    @property
    def chosen_by(self) -> str:
        """How the baseline was chosen, with the market stated when it was defaulted."""
        if self.market_named:
            return f"--baseline {self.text}"
        return f"--baseline {self.text}; no market named, so {self.market}"


def parse_baseline(text: str) -> BaselineQuery:
    """Parse ``cloud:instance_type[:region[:market]]``; ReportError naming ``--baseline``.

    Cloud, instance type, region and market go through ``pricing.parse_offer_key``
    (the parser every offer key uses), so a missing market means on-demand here as everywhere.
    """
    text = text.strip()
    parts = [p.strip() for p in text.split(":")]
    if not 2 <= len(parts) <= 4 or not all(parts):
        raise ReportError(f"--baseline: {text!r} is not cloud:instance_type[:region[:market]]; "
                          "write e.g. aws:p4d.24xlarge or aws:p4d.24xlarge:us-east-1:on-demand")
    clouds = [str(c) for c in Cloud]
    if parts[0].lower() not in clouds:
        raise ReportError(f"--baseline: cloud {parts[0]!r} is not one of {', '.join(clouds)}")
    markets = [str(m) for m in Market]
    if len(parts) == 4 and parts[3].lower() not in markets:
        raise ReportError(f"--baseline: market {parts[3]!r} is not one of {', '.join(markets)}")
    region = parts[2] if len(parts) >= 3 else None
    key = ":".join([parts[0], parts[1], region or _ANY_REGION, *parts[3:]])
    try:
        ref = parse_offer_key(key, field="--baseline")
    except OfferKeyError as exc:
        raise ReportError(str(exc)) from None
    if ref.cloud is None:  # pragma: no cover - 'local' has one part, rejected above
        raise ReportError("--baseline: name a catalog offer, not this machine")
    return BaselineQuery(text=text, cloud=ref.cloud, instance_type=ref.instance_type,
                         region=region, market=ref.market, market_named=len(parts) == 4)


def _all_offers(rec: Recommendation) -> list[tuple[InstanceOffer, CostEstimate | None, str | None]]:
    return ([(e.offer, e, None) for e in rec.ranked]
            + [(r.offer, None, r.reason) for r in rec.rejected])


def _cheapest(candidates: Sequence[tuple[InstanceOffer, CostEstimate | None, str | None]],
              chosen_by: str) -> Baseline | None:
    ranked = [c for c in candidates if c[1] is not None]
    pool = ranked or list(candidates)
    if not pool:
        return None
    offer, est, why = min(pool, key=lambda c: (c[0].price_usd_per_hour, c[0].key))
    return Baseline(offer, est, why, chosen_by)


def choose_baseline(rec: Recommendation, wanted: str | None = None) -> Baseline | None:
    """The baseline named by ``wanted`` (ReportError when nothing matches), else the default.

    Returns None only for the default when the recommendation has no A100 offer at all.
    """
    offers = _all_offers(rec)
    if wanted is None:
        a100 = [c for c in offers if c[0].accelerator.upper().startswith("A100")
                and c[0].market is Market.ON_DEMAND]
        eight = [c for c in a100 if c[0].accelerator_count == 8]
        return (_cheapest(eight, DEFAULT_BASELINE_TEXT)
                or _cheapest(a100, "default: the cheapest on-demand A100 offer (no 8x A100 "
                                   "offer in this ranking)"))
    query = parse_baseline(wanted)
    found = _cheapest([c for c in offers if query.matches(c[0])], query.chosen_by)
    if found is None:
        raise ReportError(f"--baseline: no offer of the recommendation matches {wanted!r}"
                          + _no_match_hint(query, [o for o, _, _ in offers]))
    return found


def _no_match_hint(query: BaselineQuery, offers: Sequence[InstanceOffer]) -> str:
    """What to write instead: the other market, a near instance type, or where to look."""
    other_market = sorted((o for o in offers if o.cloud is query.cloud
                           and o.instance_type == query.instance_type
                           and query.region in (None, o.region)), key=lambda o: o.key)
    if other_market:
        named = "named" if query.market_named else "meant (no market named)"
        return (f" in the {query.market} market it {named}; name the market it has, e.g. "
                f"{other_market[0].key}")
    cloud = str(query.cloud)
    types = sorted({o.instance_type for o in offers if o.cloud is query.cloud})
    near = difflib.get_close_matches(query.instance_type, types, n=3)
    if near:
        return f"; did you mean {', '.join(cloud + ':' + t for t in near)}?"
    return "; pick an offer from the ranking or the rejected list"


def _like_for_like(top: CostEstimate, base: CostEstimate) -> tuple[CostEstimate, CostEstimate] | None:
    """Both sides in one market: the spot side's on-demand twin where the markets differ
    (None when that twin is not in the ranking)."""
    if top.offer.market is base.offer.market:
        return top, base
    if top.offer.market is Market.SPOT:
        return (top.on_demand, base) if top.on_demand is not None else None
    return (top, base.on_demand) if base.on_demand is not None else None


def _saved_fraction(pick_cost: float, base_cost: float) -> float:
    return 1 - pick_cost / base_cost if base_cost > 0 and math.isfinite(pick_cost) else -math.inf


def _same_throughput(a: CostEstimate, b: CostEstimate) -> bool:
    """Whether both sides carry one throughput estimate (the same accelerator and device
    count, as the ranking predicts them once): their errors are then one error, not two."""
    ta, tb = a.throughput, b.throughput
    return all(math.isclose(x, y, rel_tol=1e-9) for x, y in (
        (ta.samples_per_second, tb.samples_per_second),
        (ta.samples_per_second_low, tb.samples_per_second_low),
        (ta.samples_per_second_high, tb.samples_per_second_high)))


def _ends(pick: CostEstimate, base: CostEstimate) -> tuple[list[float], list[float]]:
    """The saved fractions of the run and of a sample at the ends of the range: both sides
    at one end of their shared interval where they share one (``_same_throughput``), else
    each at the other's opposite end (as if their errors were independent)."""
    if _same_throughput(pick, base):
        runs = [(pick.run_cost_usd_high, base.run_cost_usd_high),
                (pick.run_cost_usd_low, base.run_cost_usd_low)]
        per_sample = [(pick.samples_per_dollar_low, base.samples_per_dollar_low),
                      (pick.samples_per_dollar_high, base.samples_per_dollar_high)]
    else:
        runs = [(pick.run_cost_usd_high, base.run_cost_usd_low),
                (pick.run_cost_usd_low, base.run_cost_usd_high)]
        per_sample = [(pick.samples_per_dollar_low, base.samples_per_dollar_high),
                      (pick.samples_per_dollar_high, base.samples_per_dollar_low)]
    return ([_saved_fraction(p, b) for p, b in runs],
            [1 - b / p for p, b in per_sample])


def savings(top: CostEstimate, baseline: Baseline,
            compare_market: CompareMarket = CompareMarket.SAME) -> Savings | None:
    """The top pick's savings against ``baseline`` (None when the baseline has no estimate):
    like for like unless ``compare_market`` is ``ANY``; the one function every output of the
    saving (report headline, HTML, CSV, ``--json``) takes its figures from."""
    base = baseline.estimate
    if base is None:
        return None
    same = _like_for_like(top, base)
    pick_side, base_side = (same if same is not None and compare_market is CompareMarket.SAME
                            else (top, base))
    mixed = pick_side.offer.market is not base_side.offer.market
    any_market_saved = base.run_cost_usd - top.run_cost_usd
    spot_share = (None if same is None or top.offer.market is base.offer.market
                  else any_market_saved - (same[1].run_cost_usd - same[0].run_cost_usd))
    reference = base_side.run_cost_usd
    run_fraction = _saved_fraction(pick_side.run_cost_usd, reference)
    per_sample = 1 - base_side.samples_per_dollar / pick_side.samples_per_dollar
    run_ends, sample_ends = _ends(pick_side, base_side)
    return Savings(
        baseline=baseline, top=top, pick_side=pick_side, baseline_side=base_side,
        compare_market=compare_market,
        run_saved_usd=reference - pick_side.run_cost_usd,
        run_saved_usd_low=reference * min(*run_ends, run_fraction),
        run_saved_usd_high=reference * max(*run_ends, run_fraction),
        run_saved_fraction=run_fraction,
        per_sample_fraction=per_sample,
        per_sample_fraction_low=min(*sample_ends, per_sample),
        per_sample_fraction_high=max(*sample_ends, per_sample),
        hours_difference=pick_side.run_hours - base_side.run_hours,
        spot_discount_usd=spot_share, mixed_markets=mixed,
    )


def no_saving_because(rec: Recommendation, base: Baseline | None) -> str | None:
    """Why the report states no saving against ``base`` (None: it states one, or there is no
    baseline): no offer ranked, so no pick, or the baseline itself was rejected."""
    if base is None:
        return None
    if not rec.ranked:
        return "no offer meets every constraint, so there is no top pick to compare"
    return base.no_saving_because


def report_savings(rec: Recommendation, wanted: str | None = None,
                   compare_market: CompareMarket = CompareMarket.SAME,
                   ) -> tuple[Baseline | None, Savings | None]:
    """The baseline of a report (``choose_baseline``) and the top pick's saving against it
    (``savings``): what the report's headline, HTML, CSV and ``--json`` all state."""
    base = choose_baseline(rec, wanted)
    saved = savings(rec.ranked[0], base, compare_market) if rec.ranked and base else None
    return base, saved
