"""What the CLI calls: load inputs from their usual places and run one library flow."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from advisor._time_limit import time_limit
from advisor.errors import AdvisorError, SpecError
from advisor.profiling import (
    OpMix,
    needs_measuring,
    op_mix_for_spec,
    preload_torch,
    profile_workload,
    step_op_names,
)
from advisor.ranking.evidence import ProbeEvidence, TunedPolicy, evidence_from_probes
from advisor.ranking.offers import RankBy, Recommendation, check_constraint_names
from advisor.ranking.recommend import recommend
from advisor.spec import WorkloadSpec, load_workload_spec
from advisor.storage import data_dir, default_storage_url
from advisor.throughput import Basis, fit_in_background
from pricing import Catalog, UnknownNameError, shipped_catalog

__all__ = ["current_catalog", "recommend_for_file", "stored_probe_evidence", "traced_op_mix"]


def current_catalog() -> Catalog:
    """The newest refreshed snapshot per cloud, falling back to the shipped one."""
    try:
        from pricing.snapshots import current_catalog as from_snapshots
    except ImportError:  # pragma: no cover - snapshots land with the refresh work
        return shipped_catalog()
    return from_snapshots(data_dir() / "snapshots")


def stored_probe_evidence(spec: WorkloadSpec, catalog: Catalog, *,
                          tuned: TunedPolicy = TunedPolicy.OFF) -> ProbeEvidence:
    """Evidence from the probe store, without creating a store that does not exist yet
    (``tuned``: whether a tuned configuration's throughput stands for a probe's).

    AdvisorError (one line, naming the store) when the store cannot be read: a missing
    folder, an in-memory or damaged SQLite file, a server that refuses the connection.
    """
    from probes import ProbeError, sqlite_problem, stored_results

    url = default_storage_url()
    problem = sqlite_problem(url)
    if problem is not None:
        raise AdvisorError(f"recommend cannot read the probe store: {problem}")
    try:
        stored = stored_results(url, spec.fingerprint())
    except ProbeError as exc:
        raise AdvisorError(f"recommend cannot read the probe store: {exc}") from exc
    return evidence_from_probes(stored, catalog, policy=tuned)


def recommend_for_file(path: str | Path, *, include_flagged: bool = False,
                       rank_by: RankBy = RankBy.CONSERVATIVE,
                       tuned: TunedPolicy = TunedPolicy.OFF,
                       progress: Callable[[str], None] | None = None) -> Recommendation:
    """``advisor recommend``: spec from ``path``, current catalog, cached profile and
    operator mix, and the stored probes of this workload (measured throughput and findings).
    ``progress`` hears one line when the seconds of work start: profiling a new model."""
    spec = load_workload_spec(Path(path))
    catalog = current_catalog()
    _check_names(spec, catalog, source=str(path))  # before seconds of profiling
    measuring = needs_measuring(spec)
    if measuring:  # seconds of torch work: fit a missing model beside it
        fit_in_background(catalog.accelerators)
    evidence = stored_probe_evidence(spec, catalog, tuned=tuned)
    if measuring:
        if progress is not None:
            progress(f"profiling {spec.name} with torch (first run for this model; cached "
                     "afterwards) ...")
        preload_torch()  # not the model's work: outside profile.timeout_s
    limit = spec.profile.timeout_s
    with time_limit(limit, f"{spec.name}: profiling the model took more than {limit:g} s "
                           "(profile.timeout_s in model.yaml): its build function or one "
                           "training step on fake tensors does not finish; fix it, raise "
                           "profile.timeout_s, or give profile.flops_per_sample and "
                           "profile.memory_gib"):
        profile, op_mix = profile_workload(spec), traced_op_mix(spec)
    rec = recommend(spec, catalog=catalog, profile=profile,
                    measurements=evidence.measurements, memory=evidence.memory,
                    include_flagged=include_flagged, op_mix=op_mix, rank_by=rank_by,
                    step_operators=lambda: step_op_names(spec))
    if tuned is not TunedPolicy.OFF and not any(
            m.basis is Basis.TUNED for m in evidence.measurements):
        rec = replace(rec, warnings=(*rec.warnings, (
            f"--tuned {tuned}: no stored probe of this workload has a tuned configuration it "
            "allows, so the ranking is as without it; 'advisor probe MODEL.yaml --on OFFER "
            "--tune' measures one")))
    if not evidence.probes:
        return rec
    return replace(rec, advice=evidence.advice + rec.advice,
                   extra={**rec.extra, "probes": list(evidence.probes)})


def _check_names(spec: WorkloadSpec, catalog: Catalog, *, source: str) -> None:
    """``check_constraint_names``, its one line naming the file as every model.yaml error does."""
    try:
        check_constraint_names(spec, catalog)
    except UnknownNameError as exc:
        raise UnknownNameError(f"{source}: {exc}") from None
    except SpecError as exc:
        raise SpecError(exc.field, exc.problem, source=source) from None


def traced_op_mix(spec: WorkloadSpec) -> OpMix | None:
    """The cached (or freshly traced) operator mix of ``spec``, its FLOPs scaled to
    ``profile.flops_per_sample`` where model.yaml states it; None where the step cannot be
    traced (no torch, a model that does not run on fake tensors): the FLOPs prior stands in."""
    try:
        mix = op_mix_for_spec(spec)
    except AdvisorError:
        return None
    stated = spec.profile.flops_per_sample
    if stated is None or mix.flops_per_sample <= 0:
        return mix
    # profile.flops_per_sample states the FLOPs instead of measuring them: the traced classes
    # keep their shares and bytes, their FLOPs are scaled to the stated total
    scale = stated / mix.flops_per_sample
    return replace(mix, per_sample=tuple(replace(c, flops=c.flops * scale)
                                         for c in mix.per_sample))
