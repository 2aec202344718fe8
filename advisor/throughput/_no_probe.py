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

import math
import statistics
from collections.abc import Mapping

import numpy as np

from advisor.errors import AdvisorError
from advisor.profiling import OpMix, reference_op_mixes
from advisor.spec import Precision
from advisor.throughput._calibration import conformal_bounds
from advisor.throughput._table import FloatArray, ReferenceTable, ridge_predict, spec_features
from advisor.throughput.estimate import WorkloadFeatures, peak_flops, precision_key
from advisor.throughput.reference import (
    REFERENCE_CONV_FLOPS_FRACTION,
    REFERENCE_FLOPS_PER_SAMPLE,
    ReferenceRow,
)
from advisor.throughput.roofline import AnchoredRoofline, RooflineSample, reference_samples
from pricing import AcceleratorSpec

__all__ = ["NoProbePrior", "reference_features"]

_DEFAULT_BATCH = 32  # per-device batch assumed when the workload does not say
_MIN_ROOFLINE_SAMPLES = 10  # reference rows with an operator mix needed to fit the roofline
# The reference ran ``fp32`` rows with TF32 on Ampere and newer, ``mixed`` rows fp16 AMP.
_REFERENCE_PRECISIONS = {"fp32": Precision.TF32, "mixed": Precision.FP16}


def reference_features(row: ReferenceRow, op_mixes: Mapping[str, OpMix]) -> WorkloadFeatures:
    """What the no-probe prediction knows of a reference row's workload: its precision, the
    shipped FLOPs per sample and convolution share of its model, its operator mix from
    ``op_mixes`` (``reference_op_mixes()``; None where not shipped) and its batch."""
    return WorkloadFeatures(
        precision=_REFERENCE_PRECISIONS.get(row.precision),
        flops_per_sample=REFERENCE_FLOPS_PER_SAMPLE.get(row.model),
        name=f"{row.model}/{row.precision}",
        conv_flops_fraction=REFERENCE_CONV_FLOPS_FRACTION.get(row.model),
        op_mix=op_mixes.get(f"{row.model}/{row.precision}"),
        batch_size_per_device=row.batch_size_per_accelerator or None)


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

    def roofline_bounds(self, coverage: float) -> dict[str, tuple[float, float]]:
        """``{"roofline": (-half, half)}``: the wider end of the conformal bounds of the anchored
        roofline's log residuals on each reference model's rows, predicted by the roofline
        refitted without that model (efficiencies and anchors alike), on both sides; empty
        when too few rows have an op mix."""
        samples = reference_samples(self.reference_, self.specs_, reference_op_mixes())
        def model_of(sample: RooflineSample) -> str:
            return sample.group.split("/")[0]

        residuals = []
        for model in sorted({model_of(s) for s in samples}):
            rest = [s for s in samples if model_of(s) != model]
            if len(rest) < _MIN_ROOFLINE_SAMPLES:
                continue
            fitted = AnchoredRoofline(
                conv_fractions=REFERENCE_CONV_FLOPS_FRACTION, kind_width=self.kind_width,
                precision_mismatch_weight=self.precision_mismatch_weight).fit(rest)
            for s in samples:
                if model_of(s) == model:
                    predicted = fitted.predict_log(
                        s.op_mix, s.accelerator, batch_size=s.batch_size, tf32=s.tf32,
                        precision_key=s.group.split("/")[-1])
                    residuals.append(math.log(s.samples_per_second) - predicted)
        if len(residuals) < _MIN_ROOFLINE_SAMPLES:
            return {}
        # Symmetric: with a handful of held-out models, which way their residuals lean says
        # which models the table has, not which way a new workload's error goes.
        low, high = conformal_bounds(residuals, coverage)
        half = max(-low, high)
        return {"roofline": (-half, half)}

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
