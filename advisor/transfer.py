"""``TransferModel``: predict a workload's throughput by transferring reference ratios.

With probes of the workload, it finds reference workloads that behave alike on the probed
accelerators (their log-ratio profile matches) and carries their ratio to the target over
(the PARIS / Gavel idea); for accelerators no reference workload was measured on, each
reference workload's ridge regression on spec features stands in for its measurement.
Without probes it starts from the workload's FLOPs per sample and the reference models with
known FLOPs (achieved FLOP/s per accelerator). Intervals are quantiles of residuals measured
by leaving each reference workload out (and, for unseen accelerators, each accelerator).
With the workload's operator mix (``WorkloadFeatures.op_mix``), the no-probe prediction is
the operators' roofline with learned per-class efficiencies, corrected per accelerator by
its misses on the reference workloads measured there (``advisor.roofline``); it replaces
the FLOPs prior (``roofline_weight`` = 1) or is blended with it in log space.
Parts from a vendor with no reference rows at all (TPU, Gaudi, Trainium) keep the probed
fraction of datasheet peak; their interval is the unseen one widened, since no data can
measure that error.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Self

import numpy as np

from advisor._factor import FactorFit, fit_factors
from advisor._krige import SpecPrior, Twin, twin_and_shifts
from advisor._table import (
    FloatArray,
    ReferenceTable,
    fit_ridge,
    precision_twin,
    ridge_predict,
    spec_features,
    split_precision,
)
from advisor._transfer_core import TransferSettings, blend_predict
from advisor.errors import AdvisorError
from advisor.op_profile import reference_op_mixes
from advisor.reference import REFERENCE_CONV_FLOPS_FRACTION, ReferenceRow
from advisor.roofline import AnchoredRoofline, reference_samples
from advisor.scaling import ScalingModel
from advisor.spec import Precision
from advisor.throughput import (
    Basis,
    Measurement,
    ThroughputEstimate,
    ThroughputModel,
    WorkloadFeatures,
    peak_flops,
    precision_key,
)
from pricing import AcceleratorSpec

__all__ = ["TransferModel"]

_MEASURED_HALF_WIDTH = 0.03  # probe-to-probe spread of a stable probe (log space)
_DEFAULT_BATCH = 32  # per-device batch assumed when the workload does not say
_MIN_ROOFLINE_SAMPLES = 10  # reference rows with an operator mix needed to fit the roofline


class TransferModel(ThroughputModel):
    """Ratio transfer from similar reference workloads, spec regression as fallback.

    Hyper-parameters: ``tau`` (log-space dispersion at which a reference workload's weight
    falls to exp(-1/2)), ``top_k`` (most similar reference workloads averaged),
    ``single_probe_dispersion`` (assumed dispersion when only one probe is shared),
    ``precision_mismatch_weight`` (weight of reference rows of the other precision when the
    workload's precision is known), ``min_neighbours`` (reference workloads measured on the
    target needed before the spec regression is bypassed), ``ridge_alpha``,
    ``interval_coverage`` (central fraction of residuals the interval covers),
    ``foreign_widening`` (interval factor for vendors absent from the reference data),
    ``calibrate`` (measure residuals in ``fit``; off for fast repeated fits),
    ``random_state``, ``kind_width`` (difference in convolution share of FLOPs at which a
    reference workload's weight falls to exp(-1) when predicting without probes).
    The low-rank factorization of the reference table (``advisor._factor``) is blended in
    with ``factor_weight`` (target measured in the reference) and ``factor_weight_unseen``
    (target known by its specs only); ``factor_rank``, ``factor_alpha`` (ridge on the
    factors), ``factor_shrinkage`` (ridge pulling a new workload toward the mean one) and
    ``spec_alpha`` (ridge of accelerator factors on spec features) shape it.
    ``twin_shrinkage`` (0 = off): when the workload's name carries a precision
    (``resnet50/mixed``) or its precision is known, and the reference holds the same model
    at the other precision (its *precision twin*), the factorization's new row shrinks
    toward the twin's fitted row plus the mean fp32 -> mixed shift of the reference's model
    pairs, instead of toward the mean workload; a few probes then only correct the twin.
    Two more views are blended in (``advisor._krige``): with a twin and a target measured in
    the reference, the twin plus the kriged precision shift (``krige_weight``); for a
    target known by its specs only, the hierarchical spec regression whose prior comes from
    the reference workloads (or the twin) (``spec_prior_weight``). With many probes of a
    target measured in the reference, the workload's row is also kriged from the probes
    (``advisor._krige.krige``; it leans on the probes that co-vary with the target), blended
    in with weight ``row_krige_slope`` x (probes - 2), at most ``ROW_KRIGE_MAX`` (0 = off).
    ``roofline_weight``: weight of the operator roofline prior against the FLOPs prior for a
    workload with an operator mix and no probe (1 = roofline alone, 0 = off); the roofline
    is fitted on first use (``roofline()``), so fits for tables without mixes stay fast.
    """

    def __init__(self, *, tau: float = 0.06, top_k: int = 8,
                 single_probe_dispersion: float = 0.15, precision_mismatch_weight: float = 0.3,
                 min_neighbours: int = 3, ridge_alpha: float = 1.0,
                 interval_coverage: float = 0.9, foreign_widening: float = 2.0,
                 calibrate: bool = True, random_state: int = 0,
                 kind_width: float = 0.25, factor_weight: float = 0.5,
                 factor_weight_unseen: float = 0.5, factor_rank: int = 2,
                 factor_alpha: float = 0.1, factor_shrinkage: float = 0.3,
                 spec_alpha: float = 1.0, twin_shrinkage: float = 0.3,
                 krige_weight: float = 0.5, spec_prior_weight: float = 0.5,
                 row_krige_slope: float = 0.1, roofline_weight: float = 1.0) -> None:
        for name, value in [("tau", tau), ("single_probe_dispersion", single_probe_dispersion),
                            ("ridge_alpha", ridge_alpha), ("foreign_widening", foreign_widening)]:
            if not value > 0:
                raise AdvisorError(f"{name} must be > 0, got {value}")
        for name, value in [("factor_weight", factor_weight),
                            ("factor_weight_unseen", factor_weight_unseen),
                            ("krige_weight", krige_weight),
                            ("spec_prior_weight", spec_prior_weight),
                            ("row_krige_slope", row_krige_slope),
                            ("roofline_weight", roofline_weight)]:
            if not 0 <= value <= 1:
                raise AdvisorError(f"{name} must be in [0, 1], got {value}")
        if twin_shrinkage < 0:
            raise AdvisorError(f"twin_shrinkage must be >= 0 (0 = off), got {twin_shrinkage}")
        if factor_rank < 1 or not (factor_alpha > 0 and factor_shrinkage > 0 and spec_alpha > 0):
            raise AdvisorError("factor_rank must be >= 1 and factor_alpha, factor_shrinkage, "
                               "spec_alpha > 0")
        if not 0 < interval_coverage < 1:
            raise AdvisorError(f"interval_coverage must be in (0, 1), got {interval_coverage}")
        if not 0 < precision_mismatch_weight <= 1:
            raise AdvisorError("precision_mismatch_weight must be in (0, 1], got "
                               f"{precision_mismatch_weight}")
        self.tau = tau
        self.top_k = top_k
        self.single_probe_dispersion = single_probe_dispersion
        self.precision_mismatch_weight = precision_mismatch_weight
        self.min_neighbours = min_neighbours
        self.ridge_alpha = ridge_alpha
        self.interval_coverage = interval_coverage
        self.foreign_widening = foreign_widening
        self.calibrate = calibrate
        self.random_state = random_state
        self.kind_width = kind_width
        self.factor_weight = factor_weight
        self.factor_weight_unseen = factor_weight_unseen
        self.factor_rank = factor_rank
        self.factor_alpha = factor_alpha
        self.factor_shrinkage = factor_shrinkage
        self.spec_alpha = spec_alpha
        self.twin_shrinkage = twin_shrinkage
        self.krige_weight = krige_weight
        self.spec_prior_weight = spec_prior_weight
        self.row_krige_slope = row_krige_slope
        self.roofline_weight = roofline_weight

    # -- fitting ---------------------------------------------------------------------------

    def _settings(self) -> TransferSettings:
        return TransferSettings(tau=self.tau, single_probe_dispersion=self.single_probe_dispersion,
                                precision_mismatch_weight=self.precision_mismatch_weight,
                                min_neighbours=self.min_neighbours, top_k=self.top_k,
                                factor_weight=self.factor_weight,
                                factor_weight_unseen=self.factor_weight_unseen,
                                factor_shrinkage=self.factor_shrinkage,
                                twin_shrinkage=self.twin_shrinkage,
                                krige_weight=self.krige_weight,
                                spec_prior_weight=self.spec_prior_weight,
                                row_krige_slope=self.row_krige_slope)

    def _fit_factors(self, log_sps: FloatArray) -> FactorFit:
        """The factorization of a (possibly masked) copy of the reference table."""
        return fit_factors(log_sps, self.table_.features, rank=self.factor_rank,
                           alpha=self.factor_alpha, spec_alpha=self.spec_alpha,
                           seed=self.random_state)

    def fit(self, reference: Sequence[ReferenceRow],
            accelerators: Mapping[str, AcceleratorSpec]) -> Self:
        """Build the reference table, spec regressions, scaling and residual quantiles."""
        self.table_ = ReferenceTable.build(reference, accelerators)
        self.reference_ = tuple(reference)
        self.__dict__.pop("roofline_", None)
        if not self.table_.workloads:
            raise AdvisorError("reference data has no single-accelerator rows; cannot fit "
                               "the throughput model")
        self.coefs_ = fit_ridge(self.table_, alpha=self.ridge_alpha)
        self.factors_ = self._fit_factors(self.table_.log_sps)
        self.spec_prior_ = SpecPrior(self.table_)
        self.specs_ = dict(accelerators)
        seen = self.table_.seen()
        self.seen_ = {a for a, s in zip(self.table_.accelerators, seen, strict=True) if s}
        self.vendors_ = {accelerators[a].vendor for a in self.seen_ if a in accelerators}
        self.scaling_ = ScalingModel().fit(reference, accelerators)
        self.fraction_ = self._achieved_fractions()
        self.residual_quantiles_: dict[str, tuple[float, float]] = {}
        if self.calibrate:
            from advisor._calibration import residual_quantiles

            self.residual_quantiles_ = residual_quantiles(self, self.interval_coverage)
        return self

    def _achieved_fractions(self) -> dict[str, float]:
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

    # -- prediction ------------------------------------------------------------------------

    def scaling_efficiency(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Fraction of linear speed-up kept on ``count`` devices, from the scaling fit."""
        return self.scaling_.efficiency(accelerator, count)

    def _per_device_probes(self, measurements: Sequence[Measurement]) -> dict[str, float]:
        """Log samples/s per single device of each measured accelerator."""
        logs: dict[str, list[float]] = {}
        for m in measurements:
            spec = self.specs_.get(m.accelerator)
            efficiency = self.scaling_efficiency(spec, m.accelerator_count) if spec else 1.0
            per_device = m.samples_per_second / (m.accelerator_count * efficiency)
            logs.setdefault(m.accelerator, []).append(math.log(per_device))
        return {a: sum(v) / len(v) for a, v in logs.items()}

    def predict_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                    probes: Mapping[str, float]) -> tuple[float, str]:
        """Log single-device samples/s and the residual case (for the interval) it falls in.

        ``probes`` maps accelerator names to measured log single-device samples/s.
        """
        if accelerator.name in probes:
            return probes[accelerator.name], "measured"
        key = precision_key(workload.precision, accelerator) if workload.precision else None
        if accelerator.vendor not in self.vendors_:
            return self._foreign(workload, accelerator, probes, key), "foreign"
        seen = accelerator.name in self.seen_
        columns = {c: y for a, y in probes.items()
                   if (c := self.table_.column(a)) is not None}
        if columns:
            twin = self._twin(workload)
            result = blend_predict(
                self.table_, self.coefs_, self.factors_, columns,
                self.table_.column(accelerator.name),
                spec_features(accelerator), settings=self._settings(), precision_key=key,
                prior=self._twin_prior(twin), twin=twin, spec_prior=self.spec_prior_)
            if result is not None:
                kind = "unseen" if result.regression else "seen"
                return result.log_sps, f"{kind}{min(len(columns), 3)}"
        return self._no_probe(workload, accelerator, key), "prior" + ("" if seen else "_unseen")

    def roofline(self) -> AnchoredRoofline | None:
        """The anchored roofline prior fitted on the reference rows that have a shipped
        operator mix (None when too few have); fitted on first use, then kept."""
        if "roofline_" not in self.__dict__:
            samples = reference_samples(self.reference_, self.specs_, reference_op_mixes())
            self.roofline_ = None if len(samples) < _MIN_ROOFLINE_SAMPLES else AnchoredRoofline(
                conv_fractions=REFERENCE_CONV_FLOPS_FRACTION, kind_width=self.kind_width,
                precision_mismatch_weight=self.precision_mismatch_weight).fit(samples)
        return self.roofline_

    def _no_probe(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                  key: str | None) -> float:
        """No probe: the operator roofline (with an op mix), the FLOPs prior, or a blend."""
        roofline = None
        if workload.op_mix is not None and self.roofline_weight > 0:
            fitted = self.roofline()
            try:
                roofline = None if fitted is None else fitted.predict_log(
                    workload.op_mix, accelerator,
                    batch_size=workload.batch_size_per_device or _DEFAULT_BATCH,
                    tf32=workload.precision is Precision.TF32, precision_key=key or "mixed")
            except AdvisorError:  # a part with no bandwidth or TFLOPS figure
                roofline = None
        if roofline is None:
            return self._prior(workload, accelerator, key)
        if self.roofline_weight >= 1 or not workload.flops_per_sample:
            return roofline
        return (self.roofline_weight * roofline
                + (1 - self.roofline_weight) * self._prior(workload, accelerator, key))

    def _twin(self, workload: WorkloadFeatures) -> Twin | None:
        """The reference rows of the same model at the other precision, with the model pairs;
        None when the workload's name and precision say nothing or no twin is measured."""
        if not workload.name:
            return None
        split = split_precision(workload.name)
        if split is None and workload.precision is not None:
            split = (workload.name,
                     "fp32" if workload.precision.value in ("fp32", "tf32") else "mixed")
        if split is None:
            return None
        twins, pairs = precision_twin(self.table_, split[0], split[1])
        return Twin(twins, pairs) if twins and pairs else None

    def _twin_prior(self, twin: Twin | None) -> FloatArray | None:
        """Factorization row prior from the twin: its fitted [level, factors] plus the mean
        precision shift of the reference's model pairs."""
        if twin is None:
            return None
        params = self.factors_.row_params
        found = twin_and_shifts(params, twin, np.asarray(np.isfinite(params).all(axis=1)))
        return None if found is None else np.asarray(found[0] + found[1].mean(axis=0))

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
        """Same achieved fraction of datasheet peak as the probes (or the reference median)."""
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
        return (self._no_probe(workload, proxy, proxy_key)
                + math.log(peak / peak_flops(proxy, proxy_key or "mixed")))

    def _nearest_seen(self, peak: float, key: str) -> AcceleratorSpec | None:
        """The measured accelerator whose datasheet peak is closest (log scale) to ``peak``."""
        seen = [self.specs_[a] for a in sorted(self.seen_) if a in self.specs_]
        if not seen:
            return None
        return min(seen, key=lambda s: abs(math.log(peak_flops(s, key) / peak)))

    def _interval(self, case: str) -> tuple[float, float]:
        """Log-space (low, high) offsets for a residual case."""
        if case == "measured":
            return -_MEASURED_HALF_WIDTH, _MEASURED_HALF_WIDTH
        quantiles = self.residual_quantiles_
        if case == "foreign":
            low, high = quantiles.get("unseen3", quantiles.get("prior_unseen", (-0.4, 0.4)))
            return low * self.foreign_widening, high * self.foreign_widening
        fallback = {"prior_unseen": "prior", "unseen3": "unseen2", "unseen2": "unseen1",
                    "seen3": "seen2", "seen2": "seen1"}
        while case not in quantiles and case in fallback:
            case = fallback[case]
        return quantiles.get(case, (-0.5, 0.5))

    def predict(
        self,
        workload: WorkloadFeatures,
        accelerator: AcceleratorSpec,
        *,
        count: int = 1,
        measurements: Sequence[Measurement] = (),
    ) -> ThroughputEstimate:
        """Samples/s on ``count`` devices; measured where probed, with a residual interval."""
        probes = self._per_device_probes(measurements)
        exact = [m for m in measurements
                 if m.accelerator == accelerator.name and m.accelerator_count == count]
        if exact:
            value = statistics.mean(m.samples_per_second for m in exact)
            return ThroughputEstimate(value, value * math.exp(-_MEASURED_HALF_WIDTH),
                                      value * math.exp(_MEASURED_HALF_WIDTH), Basis.MEASURED)
        log_sps, case = self.predict_log(workload, accelerator, probes)
        low, high = self._interval(case)
        spread = self.scaling_.log_spread(accelerator, count)
        low, high = -math.hypot(low, spread), math.hypot(high, spread)
        scale = count * self.scaling_efficiency(accelerator, count)
        value = math.exp(log_sps) * scale
        basis = {"measured": Basis.MEASURED, "foreign": Basis.PRIOR,
                 "prior_unseen": Basis.PRIOR}.get(case, Basis.PREDICTED)
        return ThroughputEstimate(value, value * math.exp(min(low, 0.0)),
                                  value * math.exp(max(high, 0.0)), basis)
