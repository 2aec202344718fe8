"""The probe planner: which offers to probe for the largest expected cut in ranking regret
per probe dollar.

Each accelerator type's samples per dollar (its best offer) is uncertain: lognormal with the
point estimate as median and the throughput interval (a 90% interval) giving sigma. Probing
one offer of a type reveals that type's throughput. Its value is the knowledge gradient:
``E[max(V_a, best other)] - E[V of the current pick]``, the expected gain of the decision,
as a fraction of the current pick's value (the expected regret cut). The probe runs on the
cheapest offer of the type for ``probe_minutes``; candidates are ranked by cut per dollar.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from advisor.errors import AdvisorError
from advisor.ranking.offers import CostEstimate, Recommendation

__all__ = ["Candidate", "ProbeSuggestion", "knowledge_gradient", "plan", "plan_probes"]

INTERVAL_Z = NormalDist().inv_cdf(0.95)  # the model's intervals cover 90%
# Billed minutes of a default cloud probe: about 4 minutes from launch until the harness runs
# (the launchers' boot_overhead_s) plus the 30-second time box of 'advisor probe'.
PROBE_MINUTES = 4.5
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
        saving = (f", expected saving ${self.expected_saving_usd:,.2f} on the run"
                  if self.expected_saving_usd is not None else "")
        cost = (f"${self.probe_cost_usd:,.2f}" if self.probe_cost_usd >= 0.1
                else f"${self.probe_cost_usd:.3f}")
        return (f"probe {self.accelerator} on {self.offer_key}: {cost}, "
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


ProbeMinutes = float | Callable[[str], float]


def plan(candidates: Sequence[Candidate], n: int, *, probe_minutes: ProbeMinutes = PROBE_MINUTES,
         run_cost_usd: float | None = None) -> list[ProbeSuggestion]:
    """The ``n`` probes with the largest expected regret cut per probe dollar (cut at least
    ``MIN_REGRET_CUT``). ``probe_minutes`` is the billed time of one probe, or a function of
    the offer key giving it (boot times differ per cloud and accelerator family)."""
    minutes = probe_minutes if callable(probe_minutes) else (lambda _key: probe_minutes)
    billed = [minutes(c.probe_offer_key) for c in candidates]
    if n < 0 or any(m <= 0 for m in billed) or (not callable(probe_minutes) and probe_minutes <= 0):
        raise AdvisorError(f"need n >= 0 and probe_minutes > 0, got {n} and {probe_minutes}")
    gains = knowledge_gradient(candidates)
    costs = [c.probe_price_usd_per_hour * m / 60 for c, m in zip(candidates, billed, strict=True)]
    order = sorted(range(len(candidates)), key=lambda i: gains[i] / costs[i], reverse=True)
    return [ProbeSuggestion(
        offer_key=candidates[i].probe_offer_key, accelerator=candidates[i].accelerator,
        probe_cost_usd=costs[i], expected_regret_cut_pct=100 * gains[i],
        expected_saving_usd=gains[i] * run_cost_usd if run_cost_usd is not None else None)
        for i in order[:n] if gains[i] >= MIN_REGRET_CUT]


def _sigma(estimate: CostEstimate) -> float:
    t = estimate.throughput
    if t.basis.is_measured:
        return _MEASURED_SIGMA
    return math.log(t.samples_per_second_high / t.samples_per_second_low) / (2 * INTERVAL_Z)


def candidates_from(ranked: Sequence[CostEstimate]) -> list[Candidate]:
    """One candidate per accelerator type: its best offer's value, its cheapest offer to probe."""
    best: dict[str, CostEstimate] = {}
    cheapest: dict[str, CostEstimate] = {}
    for e in ranked:
        name = e.offer.accelerator
        if name not in best or e.samples_per_dollar > best[name].samples_per_dollar:
            best[name] = e
        if name not in cheapest or e.offer.price_usd_per_hour < cheapest[name].offer.price_usd_per_hour:
            cheapest[name] = e
    return [Candidate(name, e.samples_per_dollar, _sigma(e), cheapest[name].offer.key,
                      cheapest[name].offer.price_usd_per_hour) for name, e in best.items()]


def plan_probes(recommendation: Recommendation, n: int, *,
                probe_minutes: ProbeMinutes = PROBE_MINUTES) -> list[ProbeSuggestion]:
    """Up to ``n`` offers of the recommendation to probe, best expected regret cut per dollar
    first; accelerator types already measured have (almost) nothing to gain."""
    if not recommendation.ranked:
        return []
    return plan(candidates_from(recommendation.ranked), n, probe_minutes=probe_minutes,
                run_cost_usd=recommendation.ranked[0].run_cost_usd)
