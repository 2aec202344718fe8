"""The no-probe half of ``TransferModel``: what a workload runs at before any probe.

With the workload's operator mix (``WorkloadFeatures.op_mix``) the prediction is the
operators' roofline with learned per-class efficiencies, corrected per accelerator by its
misses on the reference workloads measured there (``advisor.throughput.roofline``); otherwise, or
blended with it (``roofline_weight``), the FLOPs-known reference workloads scaled by FLOPs
per sample, leaning on those of the same kind (convolution share of FLOPs). Parts from a
vendor with no reference rows get the operator roofline on their own figures with no
correction (the probed fraction of peak when probed; without an op mix the nearest part's).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Mapping, Sequence

import numpy as np

from advisor.errors import AdvisorError
from advisor.profiling import OpClass, OpMix, reference_op_mixes
from advisor.spec import Precision
from advisor.throughput._calibration import (
    conformal_bounds,
    interval,
    weighted_conformal_half_width,
)
from advisor.throughput._table import FloatArray, ReferenceTable, ridge_predict, spec_features
from advisor.throughput.estimate import (
    WorkloadFeatures,
    architecture_class,
    peak_flops,
    precision_key,
)
from advisor.throughput.reference import (
    REFERENCE_CONV_FLOPS_FRACTION,
    REFERENCE_FLOPS_PER_SAMPLE,
    ReferenceRow,
)
from advisor.throughput.roofline import AnchoredRoofline, RooflineSample, reference_samples
from advisor.throughput.scaling import REFERENCE_PARAMS
from pricing import AcceleratorSpec

__all__ = ["NoProbePrior", "mix_distance", "novelty_weights", "reference_features",
           "roofline_case"]

_DEFAULT_BATCH = 32  # per-device batch assumed when the workload does not say
_MIN_ROOFLINE_SAMPLES = 10  # reference rows with an operator mix needed to fit the roofline
_MIN_CLASS_RESIDUALS = 20  # held-out residuals an architecture class needs for its own bounds
_UNSEEN_FOLDS = 5  # accelerator folds of the unseen roofline bounds (each fold refits it)
# The reference ran ``fp32`` rows with TF32 on Ampere and newer, ``mixed`` rows fp16 AMP.
_REFERENCE_PRECISIONS = {"fp32": Precision.TF32, "mixed": Precision.FP16}


def roofline_case(case: str, accelerator: AcceleratorSpec) -> str:
    """The residual case of a roofline figure for ``accelerator``'s architecture class
    (``roofline@tc-bf16``); ``interval`` falls back to ``case`` where the class has no
    bounds of its own."""
    tensor_cores, bf16 = architecture_class(accelerator)
    return f"{case}@{'tc' if tensor_cores else 'simt'}{'-bf16' if bf16 else ''}"


def reference_features(row: ReferenceRow, op_mixes: Mapping[str, OpMix]) -> WorkloadFeatures:
    """What the no-probe prediction knows of a reference row's workload: its precision, the
    shipped FLOPs per sample, parameters and convolution share of its model, its operator
    mix from ``op_mixes`` (``reference_op_mixes()``; None where not shipped) and its batch;
    it runs in the reference stack."""
    params = REFERENCE_PARAMS.get(row.model)
    return WorkloadFeatures(
        precision=_REFERENCE_PRECISIONS.get(row.precision),
        flops_per_sample=REFERENCE_FLOPS_PER_SAMPLE.get(row.model),
        params=None if params is None else int(params),
        name=f"{row.model}/{row.precision}",
        conv_flops_fraction=REFERENCE_CONV_FLOPS_FRACTION.get(row.model),
        op_mix=op_mixes.get(f"{row.model}/{row.precision}"),
        batch_size_per_device=row.batch_size_per_accelerator or None, reference_stack=True)


@functools.lru_cache(maxsize=256)  # a ranking asks it of one workload's mix per offer kind
def _mix_shares(mix: OpMix) -> FloatArray:
    """Per operator class, the share of the per-sample FLOPs and of the bytes moved, each
    half of the vector (a recommender's embeddings move bytes, a transformer's matmuls do
    FLOPs)."""
    flops = np.array([sum(c.flops for c in mix.per_sample if c.op_class is k) for k in OpClass])
    moved = np.array([sum(c.bytes_moved for c in mix.per_sample if c.op_class is k)
                      for k in OpClass])
    return np.concatenate([flops / max(flops.sum(), 1e-300), moved / max(moved.sum(), 1e-300)])


def mix_distance(a: OpMix, b: OpMix) -> float:
    """How unlike two operator mixes are: the total variation of their per-class FLOPs
    shares plus that of their bytes shares, halved (0: alike, 1: nothing in common)."""
    return float(np.abs(_mix_shares(a) - _mix_shares(b)).sum() / 4)


def novelty_weights(mix: OpMix, references: Mapping[str, OpMix]) -> dict[str, float]:
    """Per reference group (``model/precision``): how alike its held-out residual's novelty is
    to ``mix``'s, ``exp(-((n_g - n) / h)^2)``. A novelty is the distance from a mix to the
    nearest mix the fit knew: ``n`` of ``mix`` to every group's, ``n_g`` of a group to every
    other model's (its own model was held out when its residual was measured). How far a
    roofline misses follows how far its nearest reference is, whatever the kind: a model
    with a sibling of its kind in the fit is predicted like a workload near a reference.
    The width ``h`` is fixed by rule, not tuned: the widest distance between two precisions'
    mixes of one reference model, at least 0.05."""
    if not references:
        return {}
    ours = min(mix_distance(mix, other) for other in references.values())
    theirs = {group: min((mix_distance(other, third) for g, third in references.items()
                          if g.partition("/")[0] != group.partition("/")[0]), default=1.0)
              for group, other in references.items()}
    width = max(_precision_spread(references), 0.05)
    return {group: math.exp(-(((novelty - ours) / width) ** 2))
            for group, novelty in theirs.items()}


def _precision_spread(references: Mapping[str, OpMix]) -> float:
    """The widest distance between two precisions' mixes of one reference model (0: none)."""
    by_model: dict[str, list[OpMix]] = {}
    for group, other in references.items():
        by_model.setdefault(group.partition("/")[0], []).append(other)
    return max((mix_distance(x, y) for mixes in by_model.values()
                for i, x in enumerate(mixes) for y in mixes[i + 1:]), default=0.0)


@functools.lru_cache(maxsize=64)  # one workload's mix against the same groups, offer after offer
def _novelty_weights_of(mix: OpMix, groups: frozenset[str]) -> dict[str, float]:
    """``novelty_weights`` of ``mix`` against the shipped reference mixes of ``groups``."""
    mixes = reference_op_mixes()
    return novelty_weights(mix, {g: mixes[g] for g in sorted(groups) if g in mixes})


@functools.lru_cache(maxsize=256)  # a ranking asks it of one mix per residual case
def _mix_half_of(mix: OpMix, found: tuple[tuple[str, float], ...], pooled: float,
                  coverage: float) -> float:
    """``NoProbePrior._mix_half`` of held-out residuals ``found`` (group, log residual): the
    weighted conformal quantile of the |residuals| by ``novelty_weights``; where too little
    weight is alike (a workload further from every reference than any held-out one was), the
    widest held-out miss and at least ``pooled``."""
    weights = _novelty_weights_of(mix, frozenset(g for g, _ in found))
    scores = [abs(r) for _, r in found]
    half = weighted_conformal_half_width(scores, [weights.get(g, 0.0) for g, _ in found],
                                         coverage)
    return max(pooled, max(scores)) if math.isinf(half) else half


class NoProbePrior:
    """Mixin of ``TransferModel``: the no-probe predictions from its fitted state."""

    table_: ReferenceTable
    reference_: tuple[ReferenceRow, ...]
    specs_: dict[str, AcceleratorSpec]
    coefs_: FloatArray
    seen_: set[str]
    fraction_: dict[str, float]
    kind_width: float
    precision_mismatch_weight: float
    roofline_weight: float
    interval_coverage: float

    def achieved_fractions(self) -> dict[str, float]:
        """Median achieved fraction of peak per precision key over FLOPs-known references."""
        values: dict[str, list[float]] = {"fp32": [], "mixed": []}
        table = self.table_
        for w, flops in enumerate(table.flops):
            if not math.isfinite(flops):
                continue
            for a, name in enumerate(table.accelerators):
                spec = self.specs_.get(name)
                if spec is None or not math.isfinite(table.log_sps[w, a]):
                    continue
                peak = peak_flops(spec, table.precisions[w])
                values.setdefault(table.precisions[w], []).append(
                    math.exp(table.log_sps[w, a]) * flops / peak)
        return {k: statistics.median(v) if v else 0.3 for k, v in values.items()}

    def roofline(self) -> AnchoredRoofline | None:
        """The anchored roofline prior fitted on the reference rows that have a shipped
        operator mix (None when too few have); fitted on first use, then kept."""
        if "roofline_" not in self.__dict__:
            samples = reference_samples(self.reference_, self.specs_, reference_op_mixes())
            self.roofline_ = None if len(samples) < _MIN_ROOFLINE_SAMPLES else AnchoredRoofline(
                conv_fractions=REFERENCE_CONV_FLOPS_FRACTION, kind_width=self.kind_width,
                precision_mismatch_weight=self.precision_mismatch_weight).fit(samples)
        return self.roofline_

    def _roofline_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                      key: str | None) -> float | None:
        """The anchored operator roofline's log samples/s; None without an op mix, a fitted
        roofline or the part's bandwidth and TFLOPS figures."""
        fitted = self.roofline() if workload.op_mix is not None else None
        if fitted is None or workload.op_mix is None:
            return None
        try:
            return fitted.predict_log(
                workload.op_mix, accelerator,
                batch_size=workload.batch_size_per_device or _DEFAULT_BATCH,
                tf32=workload.precision is Precision.TF32, precision_key=key or "mixed")
        except AdvisorError:  # a part with no bandwidth or TFLOPS figure
            return None

    def _no_probe(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                  key: str | None) -> tuple[float, bool]:
        """No probe: the operator roofline (with an op mix), the FLOPs prior, or a blend; and
        whether the roofline alone answered (its intervals are its own, ``roofline_bounds``)."""
        roofline = self._roofline_log(workload, accelerator, key) if self.roofline_weight > 0 else None
        if roofline is None:
            return self._prior(workload, accelerator, key), False
        if self.roofline_weight >= 1 or not workload.flops_per_sample:
            return roofline, True
        return (self.roofline_weight * roofline
                + (1 - self.roofline_weight) * self._prior(workload, accelerator, key)), False

    def _fitted_roofline(self, samples: list[RooflineSample]) -> AnchoredRoofline:
        return AnchoredRoofline(
            conv_fractions=REFERENCE_CONV_FLOPS_FRACTION, kind_width=self.kind_width,
            precision_mismatch_weight=self.precision_mismatch_weight).fit(samples)

    def _held_out_roofline(self, samples: list[RooflineSample],
                           folds: Sequence[tuple[str, str]],
                           ) -> list[tuple[RooflineSample, float]]:
        """Each sample's log residual, predicted by the roofline refitted without every
        sample that shares its model or its accelerator fold (``folds``: per sample, its
        (model, accelerator fold); "" leaves none out on that side); held-out sets leaving
        too few samples to fit are skipped."""
        found = []
        for model, accelerators in sorted(set(folds)):
            rest = [s for s, (m, a) in zip(samples, folds, strict=True)
                    if (not model or m != model) and (not accelerators or a != accelerators)]
            if len(rest) < _MIN_ROOFLINE_SAMPLES:
                continue
            fitted = self._fitted_roofline(rest)
            for s, fold in zip(samples, folds, strict=True):
                if fold == (model, accelerators):
                    predicted = fitted.predict_log(
                        s.op_mix, s.accelerator, batch_size=s.batch_size, tf32=s.tf32,
                        precision_key=s.group.split("/")[-1])
                    found.append((s, math.log(s.samples_per_second) - predicted))
        return found

    def roofline_bounds(self, coverage: float) -> dict[str, tuple[float, float]]:
        """Held-out bounds of the anchored roofline's log residuals, overall and per
        architecture class (``roofline_case``; a class with fewer than
        ``_MIN_CLASS_RESIDUALS`` residuals takes the overall ones). ``roofline``: each
        reference model's rows predicted by the roofline refitted without that model
        (efficiencies and anchors alike); ``roofline_unseen`` (a new workload on a part with
        no reference rows, which borrows its anchor from its peers): the wider of those and
        the bounds of each fold of accelerators (``_UNSEEN_FOLDS`` folds of the sorted names)
        predicted without its rows. (Measured on the three FLOPs-known reference models, a
        model and a fold held out together missed no more than the model alone.) Symmetric,
        the wider end on both sides: with a handful of held-out models, which way their
        residuals lean says which models the table has, not a new one's error. Empty when
        too few rows have an op mix."""
        samples = reference_samples(self.reference_, self.specs_, reference_op_mixes())
        if len(samples) < _MIN_ROOFLINE_SAMPLES:
            return {}
        names = sorted({s.accelerator.name for s in samples})
        folds = {name: str(i % _UNSEEN_FOLDS) for i, name in enumerate(names)}
        bounds: dict[str, float] = {}
        self.roofline_residuals_: dict[str, tuple[tuple[str, float], ...]] = {}
        for case, held_out in (
                ("roofline", [(s.group.split("/")[0], "") for s in samples]),
                ("roofline_unseen", [("", folds[s.accelerator.name]) for s in samples])):
            found = self._held_out_roofline(samples, held_out)
            by_case: dict[str, list[float]] = {case: [r for _, r in found]}
            kept: dict[str, list[tuple[str, float]]] = {case: [(s.group, r) for s, r in found]}
            for s, residual in found:
                by_case.setdefault(roofline_case(case, s.accelerator), []).append(residual)
                kept.setdefault(roofline_case(case, s.accelerator), []).append(
                    (s.group, residual))
            self.roofline_residuals_.update({k: tuple(v) for k, v in kept.items()})
            for name, residuals in by_case.items():
                if len(residuals) >= (_MIN_ROOFLINE_SAMPLES if name == case
                                      else _MIN_CLASS_RESIDUALS):
                    low, high = conformal_bounds(residuals, coverage)
                    bounds[name] = max(-low, high)
        for name in [n for n in bounds if n.startswith("roofline_unseen")]:
            seen = name.replace("roofline_unseen", "roofline")
            bounds[name] = max(bounds[name], bounds.get(seen, bounds.get("roofline", 0.0)))
        return {name: (-half, half) for name, half in bounds.items()}

    def no_probe_interval(self, workload: WorkloadFeatures, case: str, *,
                          quantiles: Mapping[str, tuple[float, float]],
                          foreign_widening: float) -> tuple[float, float]:
        """Log (low, high) of a residual case (``interval``); a roofline case of a workload
        with an operator mix is judged by the held-out misses of references as novel as it
        (``mix_half_width``)."""
        pooled = interval(quantiles, case, foreign_widening=foreign_widening)
        if not case.startswith("roofline") or workload.op_mix is None:
            return pooled
        half = self.mix_half_width(workload.op_mix, case, pooled=max(-pooled[0], pooled[1]))
        return pooled if half is None else (-half, half)

    def mix_half_width(self, mix: OpMix, case: str, *, pooled: float) -> float | None:
        """Half-width of a roofline case for a workload of operator mix ``mix``: the weighted
        conformal quantile of the held-out |residuals|, each weighted by how alike its
        reference's novelty (distance to the nearest other model's mix) is to the
        workload's (``novelty_weights``); where the alike residuals are too few, the widest
        held-out miss and at least ``pooled``.
        ``roofline_unseen`` takes the wider of its folds' and the model-held-out figure, as
        ``roofline_bounds`` does. None when no residuals were kept (an older fit)."""
        kept = getattr(self, "roofline_residuals_", {})
        base, _, _ = case.partition("@")
        names = [case, "roofline" + case[len(base):]] if base == "roofline_unseen" else [case]
        halves = [h for name in names if (h := self._mix_half(mix, kept, name, pooled))]
        return max(halves) if halves else None

    def _mix_half(self, mix: OpMix, kept: Mapping[str, tuple[tuple[str, float], ...]],
                   case: str, pooled: float) -> float | None:
        found = kept.get(case, ())
        if len(found) < _MIN_CLASS_RESIDUALS:
            found = kept.get(case.partition("@")[0], ())
        if not found:
            return None
        return _mix_half_of(mix, tuple(found), pooled, self.interval_coverage)

    def _prior(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
               key: str | None) -> float:
        """No probe: FLOPs-known reference workloads, scaled by FLOPs per sample."""
        if not workload.flops_per_sample:
            raise AdvisorError("the workload has no FLOPs per sample and no probe; profile it, "
                               "give profile.flops_per_sample in model.yaml, or probe it")
        table = self.table_
        known = np.isfinite(table.flops)
        column = table.column(accelerator.name)
        measured = table.log_sps[:, column] if column is not None else np.full(len(known), np.nan)
        regressed = ridge_predict(self.coefs_, spec_features(accelerator))
        base = np.where(np.isfinite(measured), measured, regressed)
        pred = base + np.log(np.where(known, table.flops, np.nan) / workload.flops_per_sample)
        same_precision = np.array(table.precisions) == (key or "fp32")
        weight = np.where(same_precision, 1.0, self.precision_mismatch_weight)
        weight = weight * self._kind_similarity(workload)
        usable = known & np.isfinite(pred)
        # Prefer the strongest evidence present: measured on this accelerator over regressed,
        # rows of the workload's precision over the other precision.
        for better in (np.isfinite(measured), same_precision):
            if (usable & better & (weight > 0.05)).any():
                usable &= better
        if not usable.any():
            return self._foreign(workload, accelerator, {}, key)
        return float((weight[usable] * pred[usable]).sum() / weight[usable].sum())

    def _kind_similarity(self, workload: WorkloadFeatures) -> FloatArray:
        """Per reference workload: how alike its convolution share is to the workload's.

        Convolutional and attention workloads reach very different fractions of peak, so a
        ResNet-like workload should lean on ResNet-50's measurements, a transformer on BERT's.
        """
        ours = workload.conv_flops_fraction
        theirs = np.array([REFERENCE_CONV_FLOPS_FRACTION.get(w.split("/")[1], np.nan)
                           for w in self.table_.workloads])
        if ours is None:
            return np.ones(len(theirs))
        distance = np.where(np.isfinite(theirs), np.abs(theirs - ours), 0.5)
        return np.asarray(np.exp(-((distance / self.kind_width) ** 2)))

    def _foreign(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                 probes: Mapping[str, float], key: str | None) -> float:
        """Same achieved fraction of datasheet peak as the probes; with none, the operator
        roofline on the part's own figures (or the nearest measured part's fraction)."""
        if not probes and self.roofline_weight > 0:
            roofline = self._roofline_log(workload, accelerator, key)
            if roofline is not None:
                return roofline
        peak = peak_flops(accelerator, key or "mixed")
        fractions = []
        for name, log_sps in probes.items():
            spec = self.specs_.get(name)
            if spec is not None:
                probe_key = precision_key(workload.precision, spec) if workload.precision else key
                fractions.append(log_sps - math.log(peak_flops(spec, probe_key or "mixed")))
        if fractions:
            return sum(fractions) / len(fractions) + math.log(peak)
        proxy = self._nearest_seen(peak, key or "mixed")
        if proxy is None:
            if not workload.flops_per_sample:
                raise AdvisorError("the workload has no FLOPs per sample and no probe; profile "
                                   "it, give profile.flops_per_sample in model.yaml, or probe it")
            fraction = self.fraction_.get(key or "mixed", 0.3)
            return math.log(fraction * peak / workload.flops_per_sample)
        proxy_key = precision_key(workload.precision, proxy) if workload.precision else key
        return (self._no_probe(workload, proxy, proxy_key)[0]
                + math.log(peak / peak_flops(proxy, proxy_key or "mixed")))

    def _nearest_seen(self, peak: float, key: str) -> AcceleratorSpec | None:
        """The measured accelerator whose datasheet peak is closest (log scale) to ``peak``."""
        seen = [self.specs_[a] for a in sorted(self.seen_) if a in self.specs_]
        if not seen:
            return None
        return min(seen, key=lambda s: abs(math.log(peak_flops(s, key) / peak)))
