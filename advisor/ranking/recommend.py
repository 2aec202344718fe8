"""``recommend``: spec -> candidate offers -> profile -> throughput -> costs -> ranking."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import date

from advisor.profiling import OpMix, WorkloadProfile
from advisor.ranking.columns import RankedOffers
from advisor.ranking.decision import BASIS_MEANING, could_be_better, rank_by_assumption
from advisor.ranking.offers import (
    CostAssumptions,
    CostEstimate,
    MeasuredMemory,
    Opportunity,
    RankBy,
    Recommendation,
    Rejection,
    RejectionKind,
    check_constraint_names,
    memory_rejection,
    samples_that_fit,
)
from advisor.ranking.portability import Portability, portability_checker
from advisor.ranking.rank_catalog import rank_catalog
from advisor.ranking.rejections import KIND_TEXT
from advisor.spec import PortabilityPolicy, Precision, WorkloadSpec
from advisor.throughput import (
    MIN_STEP_SECONDS,
    Basis,
    Measurement,
    ThroughputModel,
    WorkloadFeatures,
)
from pricing import Catalog, InstanceOffer

__all__ = ["STALE_PRICES_DAYS", "default_throughput_model", "recommend", "workload_features"]

STALE_PRICES_DAYS = 90


def default_throughput_model(catalog: Catalog) -> ThroughputModel:
    """The throughput model ``recommend`` uses, fitted on the shipped reference data (ratio
    transfer with residual intervals; cached on disk, see ``advisor.throughput.model_cache``)."""
    from advisor.throughput import cached_transfer_model

    return cached_transfer_model(catalog.accelerators)


def _warnings(catalog: Catalog, ranked: Sequence[CostEstimate], today: date,
              profile: WorkloadProfile) -> list[str]:
    warnings = []
    if profile.trace_problem:  # memory fell back to the estimated sum
        warnings.append(
            "memory is the estimated sum (weights, gradients, Adam state, saved activations), "
            "which misses real peaks by -30% to +80%: one training step did not run on fake "
            f"tensors ({profile.trace_problem}); probe it ('advisor probe MODEL.yaml "
            "--on local --find-batch' on a GPU) or give profile.memory_gib in model.yaml")
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
    offers = RankedOffers.of(ranked).offers
    flagged = (~offers.flagged.equals("")).nonzero()[0]
    if len(flagged):  # --include-flagged: rows the table does not mark
        first = offers[int(flagged[0])]
        warnings.append(
            f"{len(flagged)} ranked offer{'s rest' if len(flagged) > 1 else ' rests'} on a "
            f"price a consistency check doubts (--include-flagged), e.g. {first.key} "
            f"(#{int(flagged[0]) + 1}): {first.flagged}; 'advisor pricing list --flagged' "
            "shows each")
    return warnings


_MEMORY_KINDS = (RejectionKind.MEMORY, RejectionKind.MEMORY_PROBE_OOM)


def _block_of(rejection: Rejection) -> tuple[str, str | None]:
    """What offers rejected alike have in common, and the model.yaml change that ranks them."""
    text = KIND_TEXT[rejection.kind]
    return text.what, text.fix


def _memory_advice(spec: WorkloadSpec, profile: WorkloadProfile, assumptions: CostAssumptions,
                   allowed: Sequence[InstanceOffer], anywhere: Sequence[InstanceOffer]) -> str:
    """What to change when offers lack memory: the model (it fits no device), the accelerators
    (none ``allowed`` by the other constraints is big enough) or the batch."""
    largest = max(anywhere, key=lambda o: (o.accelerator_memory_gib, o.key))
    step_gib = profile.memory_gib(1)
    floor_gib = step_gib + assumptions.memory_overhead(largest.accelerator, step_gib)[0]
    basis = profile.memory_basis.describe()
    if samples_that_fit(profile, largest, assumptions) == 0:
        return (f"memory: even 1 sample per device needs {floor_gib:.1f} GiB ({basis} plus the "
                f"runtime), more than the largest accelerator ({largest.accelerator}, "
                f"{largest.accelerator_memory_gib:.1f} GiB); a smaller batch or gradient "
                "checkpointing cannot fit it: use a smaller model, or shard it across devices "
                "(FSDP/ZeRO, which this estimate does not model) and state the per-device need "
                "as profile.memory_gib")
    if not any(samples_that_fit(profile, o, assumptions) for o in allowed):
        return (f"memory: even 1 sample per device needs about {floor_gib:.1f} GiB ({basis} plus "
                "the runtime), more than the accelerators the other constraints allow; allow "
                f"bigger ones in constraints (e.g. {largest.accelerator} has "
                f"{largest.accelerator_memory_gib:.1f} GiB), or use a smaller model")

    def fits(offer: InstanceOffer) -> int:  # the largest global batch that fits this offer
        return samples_that_fit(profile, offer, assumptions) * offer.accelerator_count

    best = max(allowed, key=lambda o: (fits(o), o.key))
    return (f"memory: batch_size {spec.batch_size} does not fit; lower it to {fits(best):,} or "
            f"less (fits {best.accelerator_count}x {best.accelerator} by the {basis}), use "
            "gradient checkpointing and state the lower need as profile.memory_gib, or allow "
            "instances with more devices (batch_size is split across them)")


def _round_up(value: float) -> float:
    """``value`` rounded up to three significant figures (written back into model.yaml as a
    limit, it still admits ``value``)."""
    if value <= 0 or not math.isfinite(value):
        return value
    decimals = 2 - math.floor(math.log10(value))
    return float(math.ceil(value * 10.0**decimals) / 10.0**decimals)


def _nearest_misses(rejected: Sequence[Rejection]) -> dict[tuple[str, str | None], str]:
    """For the budget and deadline blocks: the offer that misses by the least and its figure
    (rounded up), as a note to the fix."""
    notes = {}
    for kind, figure, text in ((RejectionKind.BUDGET, "run_cost_usd", "the cheapest run costs ${}"),
                               (RejectionKind.DEADLINE, "run_hours",
                                "the quickest run takes {} h")):
        misses = [r for r in rejected if r.kind is kind]
        if misses:
            best = min(misses, key=lambda r: (float(r.figures[figure]), r.offer.key))
            limit = _round_up(float(best.figures[figure]))
            notes[_block_of(best)] = f"; {text.format(f'{limit:,.10g}')}, on {best.offer.key}"
    return notes


def _no_offer_advice(spec: WorkloadSpec, rejected: Sequence[Rejection], profile: WorkloadProfile,
                     assumptions: CostAssumptions, catalog: Catalog) -> list[str]:
    """Why nothing ranked, in the rejections' own terms, and what would rank offers."""
    counts = Counter(_block_of(r) for r in rejected)
    summary = ", ".join(f"{n:,} {what}" for (what, _), n in counts.most_common())
    advice = [f"no offer meets every constraint: {summary or 'the catalog has no offer'}"]
    training = [r for r in rejected if catalog.accelerators[r.offer.accelerator].training]
    # an offer rejected for another reason that would not fit either is a memory problem too
    no_room = {id(r) for r in training if r.kind in _MEMORY_KINDS
               or memory_rejection(spec, profile, r.offer, assumptions)[1] is not None}
    if no_room:
        advice.append(_memory_advice(
            spec, profile, assumptions,
            allowed=[r.offer for r in training if r.kind in _MEMORY_KINDS],
            anywhere=[r.offer for r in training]))
    unblocked = Counter(_block_of(r) for r in training if id(r) not in no_room)
    nearest = _nearest_misses([r for r in training if id(r) not in no_room])
    fixes = [f"{fix} ({n:,} offers that fit in memory fail it{nearest.get(block, '')})"
             for block, n in unblocked.most_common() if (fix := block[1])]
    if fixes:
        advice.append("to rank offers: " + "; ".join(fixes))
    return advice


def _advice(spec: WorkloadSpec, ranked: Sequence[CostEstimate], catalog: Catalog,
            model: ThroughputModel, features: WorkloadFeatures) -> list[str]:
    advice = []
    top = ranked[0]
    spec_top = catalog.accelerators[top.offer.accelerator]
    if spec.precision in (Precision.FP32, Precision.TF32) and spec_top.supports_bf16:
        faster = model.estimate(replace(features, precision=Precision.BF16), spec_top,
                                count=top.offer.accelerator_count)
        gain = faster.samples_per_second / top.throughput.samples_per_second
        if gain > 1.1:
            advice.append(f"{spec_top.name} supports bf16 and precision is {spec.precision}: "
                          f"bf16 autocast is predicted {gain:.1f}x faster (precision: bf16)")
    return advice


def _portability_advice(records: Sequence[Portability], policy: PortabilityPolicy) -> list[str]:
    """What running the pick or a could-be-better offer off CUDA takes, one line per
    accelerator, with what ``constraints.portability`` does about it."""
    lines = []
    for record in records:
        line = "portability: " + record.describe()
        if record.blocked_operators and policy is PortabilityPolicy.WARN:
            line += " (constraints.portability: strict would leave such offers out)"
        elif not record.operators_traced and policy is PortabilityPolicy.STRICT:
            line += " (constraints.portability: strict could not check it, so it stays ranked)"
        lines.append(line)
    return lines


def _stack_note(model: ThroughputModel) -> str:
    """The stack-to-stack spread a no-probe interval carries, where the model learned one."""
    half = getattr(model, "stack_half_width_", 0.0)
    if half <= 0:
        return ""
    return (f", and with no probe at least x{math.exp(half):.2f} either way: as far as a "
            "change of software stack moved one reference workload (your step is not the "
            "reference runs' tuned stack)")


def _scaling_line(ranked: RankedOffers, catalog: Catalog, model: ThroughputModel) -> str:
    """The fitted scaling efficiency of the best-ranked multi-device offer per interconnect."""
    examples: dict[str, str] = {}
    offers = ranked.offers
    several = ranked.first_per(offers.accelerator.codes,
                               rows=offers.accelerator_count > 1)  # the best row of each type
    for row in several.values():
        offer = offers[row]
        spec = catalog.accelerators[offer.accelerator]
        if spec.interconnect not in examples:
            efficiency = model.scaling_efficiency(spec, offer.accelerator_count)
            examples[spec.interconnect] = (f"{offer.accelerator_count}x {offer.accelerator} "
                                           f"({spec.interconnect}) {efficiency:.2f}")
    shown = f", e.g. {'; '.join(examples.values())}" if examples else ""
    return ("multi-accelerator throughput = devices x one device x a scaling efficiency fitted "
            f"per accelerator and interconnect on the reference 1/2/4/8-GPU rows{shown}")


def _evidence_notes(model: ThroughputModel, picks: Sequence[CostEstimate],
                    challengers: Sequence[Opportunity]) -> list[str]:
    """What the no-probe figures of the pick and its challengers rest on beyond the reference
    table (published runs, their software stack), one line per accelerator."""
    estimates = [*picks, *(c.estimate for c in challengers)]
    unprobed = dict.fromkeys(e.offer.accelerator for e in estimates
                             if e.throughput.basis in (Basis.PREDICTED, Basis.PRIOR))
    return [note for name in unprobed if (note := model.evidence_note(name))]


def workload_features(spec: WorkloadSpec, profile: WorkloadProfile,
                      op_mix: OpMix | None) -> WorkloadFeatures:
    """What the throughput model is told about ``spec``'s workload: its precision, name and
    batch, the profile's FLOPs and parameters, and the traced operator mix (None: none)."""
    return WorkloadFeatures(precision=spec.precision, flops_per_sample=profile.flops_per_sample,
                            conv_flops_fraction=profile.conv_flops_fraction,
                            params=profile.params, name=spec.name, op_mix=op_mix,
                            batch_size_per_device=spec.batch_size)


def recommend(
    spec: WorkloadSpec,
    *,
    catalog: Catalog,
    profile: WorkloadProfile,
    model: ThroughputModel | None = None,
    measurements: Sequence[Measurement] = (),
    memory: Mapping[str, MeasuredMemory] | None = None,
    assumptions: CostAssumptions | None = None,
    today: date | None = None,
    include_flagged: bool = False,
    op_mix: OpMix | None = None,
    rank_by: RankBy = RankBy.CONSERVATIVE,
    step_operators: Callable[[], frozenset[str] | None] | None = None,
) -> Recommendation:
    """Rank every catalog offer for ``spec`` by samples per dollar; pure given its inputs.

    ``measurements`` are probed samples/s; ``memory`` maps an accelerator to what probes
    measured about memory on it (decides memory fit there); ``op_mix`` (the traced operator
    mix) lets offers with no probe be predicted from the operators' roofline; ``rank_by``
    picks the figure of samples per dollar that orders the offers; ``step_operators`` returns
    the aten operators of the step (``recommend_for_file`` passes the profile's cached ones,
    traced on fake tensors where missing; default: not known, so the portability check says
    it could not check them), asked only where a TPU, Trainium or Gaudi offer is checked
    (``constraints.portability: strict``, or one leads or could beat the pick)."""
    memory = memory or {}
    check_constraint_names(spec, catalog)
    assumptions = assumptions or CostAssumptions()
    model = model or default_throughput_model(catalog)
    features = workload_features(spec, profile, op_mix)
    portability = portability_checker(
        catalog.accelerators, step_operators or (lambda: None))
    ranked, rejected = rank_catalog(
        spec, catalog, profile=profile, model=model, features=features,
        measurements=measurements, memory=memory, assumptions=assumptions,
        include_flagged=include_flagged, rank_by=rank_by, portability=portability,
        strict=spec.constraints.portability is PortabilityPolicy.STRICT)
    priors = sorted(set(ranked.offers.accelerator.take(ranked.with_basis(Basis.PRIOR)).to_list()))
    challengers = could_be_better(ranked)
    near_top = [e.offer.accelerator for e in [*ranked[:1], *(c.estimate for c in challengers)]]
    ports = [p for name in dict.fromkeys(near_top) if (p := portability(name)) is not None]
    assumption_lines = [
        rank_by_assumption(rank_by),
        f"batch_size {spec.batch_size} is global; split evenly across an instance's devices",
        _scaling_line(ranked, catalog, model),
        *assumptions.describe(),
        f"memory of this workload: {profile.memory_gib(spec.batch_size):.1f} GiB for the whole "
        f"batch on one device ({profile.memory_basis.describe()}), before the runtime's "
        "overhead; less per device where the batch is split, and a probe's peak where one ran",
        *([f"the pick's {ranked[0].spot.describe()}"] if ranked and ranked[0].spot else []),
        "throughput: with no probe, an operator roofline of the traced step (its FLOPs and "
        "bytes per operator class against each accelerator's peaks and bandwidth, efficiencies "
        "fitted on the reference measurements; FLOPs per sample where no step was traced); "
        "after one probe, the probed step split by operator class and each class carried to "
        "the other accelerators of that vendor by what bounds it there; after several, ratios "
        "transferred from the reference workloads that behave most like this one; intervals "
        f"are 90% quantiles of held-out errors per basis{_stack_note(model)}; no step (of the "
        f"global batch) faster than {MIN_STEP_SECONDS * 1e3:g} ms unless measured",
        "basis: " + "; ".join(f"'{b}' = {BASIS_MEANING[b]}" for b in Basis)
        + (f" (priors here: {', '.join(priors)})" if priors else ""),
        *_evidence_notes(model, ranked[:1], challengers),
    ]
    return Recommendation(
        workload=spec.name,
        prices_captured_at=catalog.oldest_capture,
        ranked=ranked,
        rejected=rejected,
        assumptions=tuple(assumption_lines),
        advice=tuple([*_advice(spec, ranked, catalog, model, features),
                      *_portability_advice(ports, spec.constraints.portability)] if ranked else
                     _no_offer_advice(spec, rejected, profile, assumptions, catalog)),
        warnings=tuple(_warnings(catalog, ranked, today or date.today(), profile)),
        rank_by=rank_by,
        could_be_better=challengers,
        portability=tuple(ports),
    )
