"""``recommend``: spec -> candidate offers -> profile -> throughput -> costs -> ranking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import date

from advisor.profile import WorkloadProfile
from advisor.ranking import (
    CostAssumptions,
    CostEstimate,
    Recommendation,
    Rejection,
    cost_of,
    filter_offers,
    memory_rejection,
    rank,
)
from advisor.spec import Precision, WorkloadSpec
from advisor.throughput import (
    MIN_STEP_SECONDS,
    Basis,
    Measurement,
    ThroughputModel,
    WorkloadFeatures,
)
from pricing import Catalog, canonical_accelerator_name

__all__ = ["STALE_PRICES_DAYS", "default_throughput_model", "recommend"]

STALE_PRICES_DAYS = 90


def default_throughput_model(catalog: Catalog) -> ThroughputModel:
    """The throughput model ``recommend`` uses, fitted on the shipped reference data (ratio
    transfer with residual intervals; cached on disk, see ``advisor.model_cache``)."""
    from advisor.model_cache import cached_transfer_model

    return cached_transfer_model(catalog.accelerators)


def _check_names(spec: WorkloadSpec, catalog: Catalog) -> None:
    catalog.check_regions(spec.constraints.regions)
    for name in spec.constraints.accelerators_include + spec.constraints.accelerators_exclude:
        canonical_accelerator_name(name, catalog.accelerators)


def _warnings(catalog: Catalog, ranked: Sequence[CostEstimate], today: date) -> list[str]:
    warnings = []
    age_days = (today - catalog.oldest_capture).days
    if age_days > STALE_PRICES_DAYS:
        approx = " (approximate date)" if catalog.approximate_dates else ""
        warnings.append(
            f"prices captured {catalog.oldest_capture.isoformat()}{approx} are {age_days} days "
            "old; run 'advisor pricing refresh --cloud aws|gcp|azure' with credentials for "
            "current prices")
    if ranked and ranked[0].offer.flagged:
        warnings.append(f"the top pick rests on a flagged price ({ranked[0].offer.flagged}); "
                        "check it before you buy")
    return warnings


def _advice(spec: WorkloadSpec, ranked: Sequence[CostEstimate], catalog: Catalog,
            model: ThroughputModel, features: WorkloadFeatures) -> list[str]:
    if not ranked:
        return ["no offer meets every constraint: see the rejected reasons; raise "
                "constraints.budget_usd or deadline_hours, or allow more clouds/regions"]
    advice = []
    top = ranked[0]
    spec_top = catalog.accelerators[top.offer.accelerator]
    if spec.precision in (Precision.FP32, Precision.TF32) and spec_top.supports_bf16:
        faster = model.predict(replace(features, precision=Precision.BF16), spec_top,
                               count=top.offer.accelerator_count)
        gain = faster.samples_per_second / top.throughput.samples_per_second
        if gain > 1.1:
            advice.append(f"{spec_top.name} supports bf16 and precision is {spec.precision}: "
                          f"bf16 autocast is predicted {gain:.1f}x faster (precision: bf16)")
    if top.throughput.basis is not Basis.MEASURED:
        from advisor.planner import candidates_from, plan

        probes = plan(candidates_from(ranked), 2, run_cost_usd=top.run_cost_usd)
        if probes:
            advice.append(
                f"the top pick ({top.offer.accelerator}) is predicted; the probes with the "
                "largest expected regret cut per dollar: "
                + "; ".join(p.describe() for p in probes)
                + " ('advisor probe MODEL " + " ".join(f"--on {p.offer_key}" for p in probes)
                + "', or 'advisor recommend MODEL --suggest-probes N')")
    return advice


def _scaling_line(ranked: Sequence[CostEstimate], catalog: Catalog, model: ThroughputModel) -> str:
    """The fitted scaling efficiency of the best-ranked multi-device offer per interconnect."""
    examples: dict[str, str] = {}
    for est in ranked:
        offer = est.offer
        spec = catalog.accelerators[offer.accelerator]
        if offer.accelerator_count > 1 and spec.interconnect not in examples:
            efficiency = model.scaling_efficiency(spec, offer.accelerator_count)
            examples[spec.interconnect] = (f"{offer.accelerator_count}x {offer.accelerator} "
                                           f"({spec.interconnect}) {efficiency:.2f}")
    shown = f", e.g. {'; '.join(examples.values())}" if examples else ""
    return ("multi-accelerator throughput = devices x one device x a scaling efficiency fitted "
            f"per accelerator and interconnect on the reference 1/2/4/8-GPU rows{shown}")


def recommend(
    spec: WorkloadSpec,
    *,
    catalog: Catalog,
    profile: WorkloadProfile,
    model: ThroughputModel | None = None,
    measurements: Sequence[Measurement] = (),
    assumptions: CostAssumptions | None = None,
    today: date | None = None,
    include_flagged: bool = False,
) -> Recommendation:
    """Rank every catalog offer for ``spec`` by samples per dollar; pure given its inputs."""
    _check_names(spec, catalog)
    assumptions = assumptions or CostAssumptions()
    model = model or default_throughput_model(catalog)
    features = WorkloadFeatures(precision=spec.precision, flops_per_sample=profile.flops_per_sample,
                                conv_flops_fraction=profile.conv_flops_fraction,
                                params=profile.params, name=spec.name)
    candidates, rejected = filter_offers(spec, catalog.offers, catalog.accelerators,
                                         include_flagged=include_flagged)
    estimates: list[CostEstimate] = []
    for offer in candidates:
        needed, no_fit = memory_rejection(spec, profile, offer, assumptions)
        if no_fit:
            rejected.append(Rejection(offer, no_fit))
            continue
        throughput = model.predict(features, catalog.accelerators[offer.accelerator],
                                   count=offer.accelerator_count,
                                   measurements=measurements).step_capped(spec.batch_size)
        estimates.append(cost_of(spec, offer, throughput, assumptions, needed))
    ranked, over = rank(spec, estimates)
    rejected.extend(over)
    rejected.sort(key=lambda r: r.offer.key)
    priors = sorted({e.offer.accelerator for e in ranked if e.throughput.basis is Basis.PRIOR})
    assumption_lines = [
        f"batch_size {spec.batch_size} is global; split evenly across an instance's devices",
        _scaling_line(ranked, catalog, model),
        *assumptions.describe(),
        "throughput: ratios transferred from the reference workloads that behave most like this "
        "one on the probed accelerators; with no probe, from FLOPs per sample and the measured "
        "reference workloads of the same kind (convolutional or attention); intervals are 90% "
        "residual quantiles measured leaving each reference model out; no step (of the "
        f"global batch) faster than {MIN_STEP_SECONDS * 1e3:g} ms unless measured",
        "basis: 'measured' = probed, 'predicted' = the accelerator has reference measurements, "
        "'prior' = extrapolated from datasheet specs"
        + (f" ({', '.join(priors)})" if priors else "") + "; probe a prior before trusting it",
    ]
    return Recommendation(
        workload=spec.name,
        prices_captured_at=catalog.oldest_capture,
        ranked=tuple(ranked),
        rejected=tuple(rejected),
        assumptions=tuple(assumption_lines),
        advice=tuple(_advice(spec, ranked, catalog, model, features)),
        warnings=tuple(_warnings(catalog, ranked, today or date.today())),
    )
