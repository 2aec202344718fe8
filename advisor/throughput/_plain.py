"""``PlainTransferModel``: predict a workload's throughput by transferring reference ratios.

This is ``advisor.throughput.transfer.TransferModel`` without scikit-learn's base classes:
the same hyper-parameters (stated once, in ``__init__``), fitting and predictions. The
estimator adds ``get_params``, ``set_params``, ``clone`` and scoring; this class is what the
model cache pickles and ``recommend`` unpickles, so a warm start never imports scikit-learn.

With probes of the workload, it finds reference workloads that behave alike on the probed
accelerators (their log-ratio profile matches) and carries their ratio to the target over
(the PARIS / Gavel idea); for accelerators no reference workload was measured on, each
reference workload's ridge regression on spec features stands in for its measurement.
Without probes it starts from the workload's FLOPs per sample and the reference models with
known FLOPs (achieved FLOP/s per accelerator). Intervals are quantiles of residuals measured
by leaving each reference workload out (and, for unseen accelerators, each accelerator).
With the workload's operator mix (``WorkloadFeatures.op_mix``), the no-probe prediction is
the operators' roofline with learned per-class efficiencies, corrected per accelerator by
its misses on the reference workloads measured there (``advisor.throughput.roofline``); it replaces
the FLOPs prior (``roofline_weight`` = 1) or is blended with it in log space.
Parts from a vendor with no reference rows at all (TPU, Gaudi, Trainium) keep the probed
fraction of datasheet peak, or with no probe the operator roofline on their own figures; their
interval is the unseen one widened, since no data can measure that error. When the
reference holds the evaluated table's own rows next to shipped ones, the own rows lead and
shipped rows count by their similarity (``advisor.throughput._tiers``).
Parts with no reference rows but published training figures (``fit``'s ``published``, or
``anchor_to``) are anchored to the published per-chip ratio to a part that has reference rows
(``advisor.throughput._anchored``); their peers without any published figure borrow the
correction and stay a prior.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from advisor.errors import AdvisorError
from advisor.profiling import OpClass, reference_op_mixes
from advisor.throughput._anchored import PublishedAnchoring
from advisor.throughput._calibration import (
    residual_case,
    residual_quantiles,
    stack_half_width,
    stack_shifts,
    unlike_probes,
)
from advisor.throughput._estimating import Estimating
from advisor.throughput._factor import FactorFit, fit_factors
from advisor.throughput._krige import SpecPrior, Twin, twin_and_shifts
from advisor.throughput._no_probe import (
    NoProbePrior,
    reference_features,
    roofline_case,
)
from advisor.throughput._pair_shift import PairShift
from advisor.throughput._params import check_hyper_parameters
from advisor.throughput._probe_carry import ProbeCarrying
from advisor.throughput._probe_shrink import ProbeShrinkage, stack_variance
from advisor.throughput._size_trend import size_shift
from advisor.throughput._table import (
    FloatArray,
    ReferenceTable,
    fit_ridge,
    precision_twin,
    spec_features,
    split_precision,
)
from advisor.throughput._tiers import BENCH_GENERATION, mix_tiers, shipped_similarity
from advisor.throughput._transfer_core import Query, TransferSettings, blend_predict
from advisor.throughput.estimate import (
    Measurement,
    ThroughputModel,
    WorkloadFeatures,
    architecture_class,
    precision_key,
    reference_targets,
)
from advisor.throughput.published import PublishedRow
from advisor.throughput.reference import ReferenceRow
from advisor.throughput.roofline import AnchoredRoofline
from advisor.throughput.scaling import ScalingModel
from pricing import AcceleratorSpec

__all__ = ["PlainTransferModel"]


def _split_precision(workload: WorkloadFeatures) -> tuple[str, str] | None:
    """(model name, ``fp32`` or ``mixed``) from the workload's name (``resnet50/mixed``) or,
    failing that, its name and precision; None when they say nothing."""
    if not workload.name:
        return None
    split = split_precision(workload.name)
    if split is None and workload.precision is not None:  # the name plus its precision's token
        split = split_precision(f"{workload.name}/{workload.precision.value}")
    return split


class PlainTransferModel(Estimating, ProbeCarrying, PublishedAnchoring, NoProbePrior,
                         ThroughputModel):
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
    The low-rank factorization of the reference table (``advisor.throughput._factor``) is blended in
    with ``factor_weight`` (target measured in the reference) and ``factor_weight_unseen``
    (target known by its specs only); ``factor_rank``, ``factor_alpha`` (ridge on the
    factors), ``factor_shrinkage`` (ridge pulling a new workload toward the mean one) and
    ``spec_alpha`` (ridge of accelerator factors on spec features) shape it.
    ``twin_shrinkage`` (0 = off): when the workload's name carries a precision
    (``resnet50/mixed``) or its precision is known, and the reference holds the same model
    at the other precision (its *precision twin*), the factorization's new row shrinks
    toward the twin's fitted row plus the mean fp32 -> mixed shift of the reference's model
    pairs, instead of toward the mean workload; a few probes then only correct the twin.
    Two more views are blended in (``advisor.throughput._krige``): with a twin and a target measured in
    the reference, the twin plus the kriged precision shift (``krige_weight``); for a
    target known by its specs only, the hierarchical spec regression whose prior comes from
    the reference workloads (or the twin) (``spec_prior_weight``). With many probes of a
    target measured in the reference, the workload's row is also kriged from the probes
    (``advisor.throughput._krige.krige``; it leans on the probes that co-vary with the target), blended
    in with weight ``row_krige_slope`` x (probes - 2), at most ``ROW_KRIGE_MAX`` (0 = off).
    For a target known by its specs only, or of an architecture class (tensor cores, bf16)
    none of the probes has, the probes' two-term time fit (FLOPs / peak + bytes / bandwidth,
    ``advisor.throughput._time_fit``) is blended in with ``time_fit_weight``.
    ``roofline_weight``: weight of the operator roofline prior against the FLOPs prior for a
    workload with an operator mix and no probe (1 = roofline alone, 0 = off); the roofline
    is fitted on first use (``roofline()``), so fits for tables without mixes stay fast.
    Tiers (``advisor.throughput._tiers``): reference rows of generation ``own_generation`` (None = off)
    lead when other rows are present too; the pooled model is mixed in with weight
    ``shipped_weight`` (target seen in the own rows) or ``shipped_weight_unseen`` times the
    probes' similarity to the best shipped workload (``similarity_tau``).
    Published anchors (``advisor.throughput._anchored``): ``published_cross_kind_weight``
    (trust in a ratio published for the other kind of workload, convolutional or attention)
    and ``published_peer_count`` (pseudo-parts shrinking a peer-borrowed correction).
    ``op_transfer``: with one probed accelerator and the workload's operator mix, carry the
    probe to other parts of its vendor operator class by operator class
    (``advisor.throughput._op_transfer``) instead of by the reference workloads' ratio
    (False: the ratio transfer always); ``pair_shift``: there, correct the probed pair by
    how the roofline missed the reference workloads alike in operator mix measured on both
    devices (``advisor.throughput._pair_shift``; False: by the devices' anchors alone) and
    carry the share of the probe's own miss the reference models' held-out misses support
    (``advisor.throughput._probe_shrink``).
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
                 row_krige_slope: float = 0.1, time_fit_weight: float = 0.25,
                 roofline_weight: float = 1.0,
                 own_generation: str | None = BENCH_GENERATION, shipped_weight: float = 0.3,
                 shipped_weight_unseen: float = 0.6, similarity_tau: float = 0.1,
                 published_cross_kind_weight: float = 0.5,
                 published_peer_count: float = 1.0, op_transfer: bool = True,
                 pair_shift: bool = True) -> None:
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
        self.time_fit_weight = time_fit_weight
        self.roofline_weight = roofline_weight
        self.own_generation = own_generation
        self.shipped_weight = shipped_weight
        self.shipped_weight_unseen = shipped_weight_unseen
        self.similarity_tau = similarity_tau
        self.published_cross_kind_weight = published_cross_kind_weight
        self.published_peer_count = published_peer_count
        self.op_transfer = op_transfer
        self.pair_shift = pair_shift
        self._check_params()

    def _check_params(self) -> None:
        """AdvisorError naming the first hyper-parameter out of its range; run by ``__init__``
        and again by ``fit`` (``set_params`` sets values unchecked, as in scikit-learn)."""
        check_hyper_parameters(self.hyper_parameters())

    def hyper_parameters(self) -> dict[str, Any]:
        """The ``__init__`` keyword parameters and their values (the estimator's
        ``get_params``, without importing scikit-learn)."""
        names = list(inspect.signature(PlainTransferModel.__init__).parameters)[1:]
        return {name: getattr(self, name) for name in names}

    def plain(self) -> PlainTransferModel:
        """This model, fitted or not, as a ``PlainTransferModel``: the same hyper-parameters
        and fitted state (shared, not copied) and none of scikit-learn's classes."""
        copy = PlainTransferModel.__new__(PlainTransferModel)
        copy.__dict__.update(self.__dict__)
        return copy

    # -- fitting ---------------------------------------------------------------------------

    def _settings(self) -> TransferSettings:
        return TransferSettings(**{f.name: getattr(self, f.name)
                                   for f in fields(TransferSettings)})

    def _fit_factors(self, log_sps: FloatArray) -> FactorFit:
        """The factorization of a (possibly masked) copy of the reference table."""
        return fit_factors(log_sps, self.table_.features, rank=self.factor_rank,
                           alpha=self.factor_alpha, spec_alpha=self.spec_alpha,
                           seed=self.random_state)

    def fit(self, X: Sequence[ReferenceRow], y: npt.ArrayLike | None = None, *,
            accelerators: Mapping[str, AcceleratorSpec],
            published: Sequence[PublishedRow] = ()) -> Self:
        """Fit on reference rows ``X`` (their samples/s, or ``y`` in their place) and the
        accelerators' specs: build the reference table, spec regressions, scaling and
        residual quantiles; with own rows and shipped rows (see the class), also the pooled
        model of all rows; anchor the parts with no reference rows to the ``published``
        figures (``anchor_to``). Returns self."""
        self._check_params()
        reference = reference_targets(X, y)
        own = [r for r in reference if r.generation == self.own_generation]
        self.pooled_: PlainTransferModel | None = None
        if own and len(own) < len(reference):
            self.pooled_ = PlainTransferModel(
                **{**self.hyper_parameters(), "own_generation": None, "calibrate": False},
            ).fit(reference, accelerators=accelerators)
            table = self.pooled_.table_
            self.shipped_rows_ = np.array([not w.startswith(f"{self.own_generation}/")
                                           for w in table.workloads])
        self.table_ = ReferenceTable.build(own if self.pooled_ else reference, accelerators)
        self.reference_ = tuple(reference)
        self.__dict__.pop("roofline_", None)
        self.__dict__.pop("pair_shift_", None)
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
        # the pooled model fitted the same rows already
        self.scaling_: ScalingModel = (self.pooled_.scaling_ if self.pooled_ is not None
                                       else ScalingModel().fit(reference, accelerators))
        self.fraction_ = self.achieved_fractions()
        self.residual_quantiles_: dict[str, tuple[float, float]] = {}
        if self.calibrate:
            self.residual_quantiles_ = residual_quantiles(
                self.table_, self.coefs_, settings=self._settings(),
                coverage=self.interval_coverage, ridge_alpha=self.ridge_alpha,
                fit_factors=self._fit_factors, seed=self.random_state,
                architectures=[self._architecture_of(a) for a in self.table_.accelerators])
            self.residual_quantiles_.update(self.roofline_bounds(self.interval_coverage))
        # a user's step runs in a stack of its own: how far stacks move one workload
        self.stack_shifts_ = stack_shifts(reference, published)
        self.stack_half_width_ = stack_half_width(self.stack_shifts_, self.interval_coverage)
        return self.anchor_to(published)

    def _reference_parts(self) -> set[str]:
        """Accelerators with reference rows (own or, with tiers, shipped)."""
        return self.seen_ | (self.pooled_.seen_ if self.pooled_ is not None else set())

    def roofline(self) -> AnchoredRoofline | None:
        """The anchored roofline prior (see ``NoProbePrior.roofline``); the pooled model's when
        there is one: it is fitted on the same reference rows with the same settings."""
        return self.pooled_.roofline() if self.pooled_ is not None else super().roofline()

    def _pair_shift(self, roofline: AnchoredRoofline) -> PairShift | None:
        """The probed pair's correction from ``roofline``'s misses on the reference rows
        (``advisor.throughput._pair_shift``), measured on first use; None when
        ``pair_shift`` is off."""
        if not self.pair_shift:
            return None
        if "pair_shift_" not in self.__dict__:
            mixes = reference_op_mixes()
            self.pair_shift_ = PairShift.from_reference(
                self.reference_, self.specs_, mixes, roofline.roofline_,
                precision_weight=roofline.precision_mismatch_weight,
                ridge=roofline.anchor_ridge, shrinkage=ProbeShrinkage.from_reference(
                    self.reference_, self.specs_, mixes, refit=self._fitted_roofline,
                    stack_variance=stack_variance(self.stack_shifts_.values())))
        return self.pair_shift_

    def warm(self) -> None:
        """Fit now what is otherwise fitted on first use (the roofline, and the pair shift
        with the probe shrinkage, whose held-out refits take seconds), so a pickled model
        holds it."""
        roofline = self.roofline()
        if roofline is not None:
            self._pair_shift(roofline)

    # -- prediction ------------------------------------------------------------------------

    def scaling_efficiency(self, accelerator: AcceleratorSpec, count: int) -> float:
        """Fraction of linear speed-up kept on ``count`` devices, from the scaling fit."""
        return self.scaling_.efficiency(accelerator, count)

    def predict_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                    probes: Mapping[str, float], *,
                    measurements: Sequence[Measurement] = ()) -> tuple[float, str]:
        """Log single-device samples/s and the residual case (for the interval) it falls in.

        ``probes`` maps accelerator names to measured log single-device samples/s;
        ``measurements`` (optional) are the probes themselves, for their batch and recorded
        per-class times. One probed accelerator of the target's vendor is carried over by
        operator class where the workload's mix is known (``op_transfer``). A part with no
        reference rows and no probe is anchored to published figures (case ``published``) or
        borrows its peers' correction (``_anchored``).
        """
        if self.op_transfer and len(probes) == 1 and accelerator.name not in probes:
            carried = self._op_transfer_log(workload, accelerator, probes, measurements)
            if carried is not None:
                return carried
        if accelerator.name in probes or accelerator.name in self._reference_parts():
            return self._reference_log(workload, accelerator, probes)
        return self._published_log(workload, accelerator, probes)

    def _size_shift(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                    peer: AcceleratorSpec) -> float:
        """Log shift carrying ``peer``'s published correction to ``accelerator`` by the
        reference parts' size trend (``advisor.throughput._size_trend``); 0 without an
        operator mix or a fitted roofline (the prior is then not the roofline)."""
        roofline = self.roofline() if workload.op_mix is not None else None
        if roofline is None or workload.op_mix is None:
            return 0.0
        key = precision_key(workload.precision, accelerator) if workload.precision else None
        return size_shift(roofline, accelerator, peer,
                          workload.op_mix.flops_fraction(OpClass.CONVOLUTION) or 0.0,
                          key or "mixed")

    def _reference_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                       probes: Mapping[str, float]) -> tuple[float, str]:
        """``predict_log`` from the reference rows alone (no published anchor)."""
        if self.pooled_ is None or accelerator.name in probes:
            return self._predict_log(workload, accelerator, probes)
        pooled = self.pooled_.predict_log(workload, accelerator, probes)
        table = self.pooled_.table_
        columns = {c: y for a, y in probes.items() if (c := table.column(a)) is not None}
        if not columns:  # nothing for the own rows to carry: the pooled model's prior
            return pooled
        similarity = shipped_similarity(table.log_sps, self.shipped_rows_, columns,
                                        tau=self.similarity_tau)
        try:
            own = self._predict_log(workload, accelerator, probes)
        except AdvisorError:  # own rows give no ratio and know no FLOPs: the pooled answer
            return pooled
        return mix_tiers(own, pooled, similarity, seen_weight=self.shipped_weight,
                         unseen_weight=self.shipped_weight_unseen)

    def _predict_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                     probes: Mapping[str, float]) -> tuple[float, str]:
        if accelerator.name in probes:
            return probes[accelerator.name], "measured"
        key = precision_key(workload.precision, accelerator) if workload.precision else None
        if accelerator.vendor not in self.vendors_:
            return self._foreign(workload, accelerator, probes, key), "foreign"
        seen = accelerator.name in self.seen_
        columns = {c: y for a, y in probes.items()
                   if (c := self.table_.column(a)) is not None}
        if columns:
            split = _split_precision(workload)
            twin = self._twin(split)
            unlike = unlike_probes([self._architecture_of(a) for a in probes],
                                   architecture_class(accelerator))
            query = Query(columns, self.table_.column(accelerator.name),
                          spec_features(accelerator), precision_key=key,
                          peak=key or (split[1] if split else None), unlike_probes=unlike)
            result = blend_predict(self.table_, self.coefs_, self.factors_, query,
                                   settings=self._settings(), prior=self._twin_prior(twin),
                                   twin=twin, spec_prior=self.spec_prior_)
            if result is not None:
                return result.log_sps, residual_case(result.regression, len(columns),
                                                     unlike=unlike)
        value, roofline = self._no_probe(workload, accelerator, key)
        if roofline:  # the roofline's own held-out bounds, of the part's architecture class
            return value, roofline_case("roofline" if seen else "roofline_unseen", accelerator)
        return value, "prior" + ("" if seen else "_unseen")

    def _architecture_of(self, name: str) -> tuple[bool, bool] | None:
        """The architecture class of an accelerator by name; None when it has no spec."""
        return architecture_class(self.specs_[name]) if name in self.specs_ else None

    def _twin(self, split: tuple[str, str] | None) -> Twin | None:
        """The reference rows of the same model at the other precision, with the model pairs;
        None when the workload's name and precision say nothing or no twin is measured."""
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

    def predict(self, X: Sequence[ReferenceRow]) -> npt.NDArray[np.float64]:
        """Predicted samples/s of each reference-like row's workload on its accelerator and
        device count, with no probe (the no-probe path of ``estimate`` on
        ``reference_features``); NaN where that cannot predict: the row's model has no
        shipped FLOPs per sample or operator mix, or its accelerator no spec."""
        mixes = reference_op_mixes()
        out = np.full(len(X), np.nan)
        for i, row in enumerate(X):
            spec = self.specs_.get(row.accelerator)
            if spec is None:
                continue
            try:
                out[i] = self.estimate(reference_features(row, mixes), spec,
                                       count=row.accelerator_count).samples_per_second
            except AdvisorError:  # no FLOPs and no operator mix: nothing to predict from
                continue
        return out
