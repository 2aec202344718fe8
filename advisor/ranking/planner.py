"""The probe planner: which offers to probe for the largest expected cut in ranking regret
per probe dollar.

Each accelerator type's samples per dollar (its best offer) is uncertain: lognormal with the
point estimate as median and the throughput interval (a 90% interval) giving sigma. Probing
one offer of a type reveals that type's throughput. Its value is the knowledge gradient:
``E[max(V_a, best other)] - E[V of the current pick]``, the expected gain of the decision,
as a fraction of the current pick's value (the expected regret cut). The probe runs on the
cheapest offer of the type that a launcher can probe, priced by that launcher's quote
(``probes.launchers.quote.quote_probe``: boot time per family, billing minimum, time box);
candidates are ranked by cut per dollar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from advisor.errors import AdvisorError
from advisor.formatting import fmt_money
from advisor.ranking.columns import RankedOffers
from advisor.ranking.offers import CostEstimate, Recommendation
from pricing.billing import usd
from probes import DEFAULT_PROBE_TIME_BOX_S, launcher_for_offer, quote_probe, quote_text

__all__ = ["Candidate", "ProbeSuggestion", "knowledge_gradient", "plan", "plan_probes"]

INTERVAL_Z = NormalDist().inv_cdf(0.95)  # the model's intervals cover 90%
MIN_REGRET_CUT = 1e-3  # probes expected to cut regret by less than 0.1% are not suggested
_MEASURED_SIGMA = 0.02
_NORMAL = NormalDist()


@dataclass(frozen=True, slots=True)
class Candidate:
    """One accelerator type to choose from: its best offer's samples/$ with an interval.

    ``probe_offer_key`` and ``probe_price_usd_per_hour`` are the offer a probe would run on
    (the cheapest of the type). ``sigma`` is the log-space standard deviation of samples/$.
    """

    accelerator: str
    samples_per_dollar: float
    sigma: float
    probe_offer_key: str
    probe_price_usd_per_hour: float

    def __post_init__(self) -> None:
        if not (self.samples_per_dollar > 0 and self.sigma >= 0
                and self.probe_price_usd_per_hour > 0):
            raise AdvisorError(f"candidate {self.accelerator}: samples_per_dollar and probe "
                               "price must be > 0 and sigma >= 0")

    @property
    def mean(self) -> float:
        """Expected samples/$ (lognormal mean)."""
        return self.samples_per_dollar * math.exp(self.sigma ** 2 / 2)


@dataclass(frozen=True, slots=True)
class ProbeSuggestion:
    """A probe worth buying: where, what it costs, what it is expected to save."""

    offer_key: str
    accelerator: str
    probe_cost_usd: float
    expected_regret_cut_pct: float
    expected_saving_usd: float | None

    def describe(self) -> str:
        """One line for the terminal."""
        saving = (f", expected saving {fmt_money(self.expected_saving_usd)} on the run"
                  if self.expected_saving_usd is not None else "")
        if self.expected_saving_usd is not None and self.expected_saving_usd < self.probe_cost_usd:
            saving += ", less than the probe costs"  # worth it only for what it teaches
        return (f"probe {self.accelerator} on {self.offer_key}: {quote_text(self.probe_cost_usd)}, "
                f"expected regret cut {self.expected_regret_cut_pct:.1f}%{saving}")


def _expected_max(median: float, sigma: float, floor: float) -> float:
    """E[max(X, floor)] for X lognormal with this median and log sigma."""
    if sigma <= 0:
        return max(median, floor)
    mu = math.log(median)
    d = (math.log(floor) - mu) / sigma
    upper = math.exp(mu + sigma ** 2 / 2) * _NORMAL.cdf(sigma - d)
    return floor * _NORMAL.cdf(d) + upper


def knowledge_gradient(candidates: Sequence[Candidate]) -> list[float]:
    """Expected gain (fraction of the current pick's expected samples/$) of probing each."""
    means = [c.mean for c in candidates]
    best = max(means)
    gains = []
    for i, c in enumerate(candidates):
        others = max((m for j, m in enumerate(means) if j != i), default=0.0)
        if others <= 0:
            gains.append(0.0)
            continue
        gains.append(max(0.0, _expected_max(c.samples_per_dollar, c.sigma, others) - best) / best)
    return gains


def _probe_cost_usd(candidate: Candidate, *, time_box_s: float,
                    probe_minutes: float | None) -> float | None:
    """The candidate's probe quote (None: no launcher probes its offer); a fixed
    ``probe_minutes`` at its price instead where given."""
    if probe_minutes is not None:
        return usd(probe_minutes * 60, candidate.probe_price_usd_per_hour)
    if launcher_for_offer(candidate.probe_offer_key) is None:
        return None
    return quote_probe(candidate.probe_offer_key, time_box_s=time_box_s,
                       price_usd_per_hour=candidate.probe_price_usd_per_hour).usd


def plan(candidates: Sequence[Candidate], n: int, *,
         time_box_s: float = DEFAULT_PROBE_TIME_BOX_S, probe_minutes: float | None = None,
         run_cost_usd: float | None = None) -> list[ProbeSuggestion]:
    """The ``n`` probes with the largest expected regret cut per probe dollar (cut at least
    ``MIN_REGRET_CUT``), each priced by the quote of the launcher that would run it for a
    ``time_box_s`` probe (``probe_minutes``, when given, bills every probe that long instead).
    Offers no launcher can probe are not suggested."""
    if n < 0 or time_box_s <= 0 or (probe_minutes is not None and probe_minutes <= 0):
        raise AdvisorError(f"need n >= 0, time_box_s > 0 and probe_minutes > 0, got {n}, "
                           f"{time_box_s} and {probe_minutes}")
    gains = knowledge_gradient(candidates)
    costs = [_probe_cost_usd(c, time_box_s=time_box_s, probe_minutes=probe_minutes)
             for c in candidates]
    order = sorted((i for i, cost in enumerate(costs) if cost is not None), reverse=True,
                   key=lambda i: gains[i] / max(costs[i] or 0.0, 1e-12))
    return [ProbeSuggestion(
        offer_key=candidates[i].probe_offer_key, accelerator=candidates[i].accelerator,
        probe_cost_usd=costs[i] or 0.0, expected_regret_cut_pct=100 * gains[i],
        expected_saving_usd=gains[i] * run_cost_usd if run_cost_usd is not None else None)
        for i in order[:n] if gains[i] >= MIN_REGRET_CUT]


def _sigma(estimate: CostEstimate) -> float:
    t = estimate.throughput
    if t.basis.is_measured:
        return _MEASURED_SIGMA
    return math.log(t.samples_per_second_high / t.samples_per_second_low) / (2 * INTERVAL_Z)


def candidates_from(ranked: Sequence[CostEstimate]) -> list[Candidate]:
    """One candidate per accelerator type: its best offer's value, its cheapest offer to probe
    (among those a launcher can probe, where there is one)."""
    table = RankedOffers.of(ranked)
    names = table.offers.accelerator
    best = table.first_per(names.codes, -table.samples_per_dollar)
    cheapest = table.first_per(names.codes, ~table.probeable(),
                               table.offers.price_usd_per_hour)
    candidates = []
    for code, row in best.items():
        e, probe = table[row], table.offers[cheapest[code]]
        candidates.append(Candidate(names.values[code], e.samples_per_dollar, _sigma(e),
                                    probe.key, probe.price_usd_per_hour))
    return candidates


def plan_probes(recommendation: Recommendation, n: int, *,
                time_box_s: float = DEFAULT_PROBE_TIME_BOX_S) -> list[ProbeSuggestion]:
    """Up to ``n`` offers of the recommendation to probe (each quoted for a ``time_box_s``
    probe), best expected regret cut per dollar first; accelerator types already measured
    have (almost) nothing to gain."""
    if not recommendation.ranked:
        return []
    return plan(candidates_from(recommendation.ranked), n, time_box_s=time_box_s,
                run_cost_usd=recommendation.ranked[0].run_cost_usd)
