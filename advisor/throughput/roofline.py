"""``RooflinePrior``: samples/s from an operator mix, bounded by each accelerator's roofline.

Time per sample on an accelerator is a sum over the mix's (operator class, dtype) entries of

    max(flops / (peak FLOP/s of the dtype's path x flops efficiency[class, path]),
        bytes / (memory bandwidth x bytes efficiency[class]))

plus ``kernel_overhead_s`` per kernel launched (shared out over the batch). The efficiencies
are bounded in (0, 1] and learned from measured throughput of workloads whose operator mix
is known (the Habitat / NeuSight idea: predict bounded utilisation per operator class, not
raw latency); classes the data says little about stay near the prior efficiency, which can
be set per class and path (``class_priors``: ``AnchoredRoofline`` uses the fractions of peak
that single kernels reached on six GPUs, ``advisor.throughput.kernel_efficiency``).

Compute paths (``compute_path``) make the precision explicit: bf16/fp16 operators run on
tensor cores at ``bf16_tflops`` where the part has them (``tensor``); fp32 operators run at
the TF32 tensor-core rate (half the dense bf16 rate on Ampere and newer) only when TF32 is
enabled (``tf32``), otherwise on the CUDA cores at ``fp32_tflops`` (``simt``). What autocast
keeps in fp32 (norms, softmax, losses) is traced as fp32 and priced as such.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

import numpy as np

from advisor.errors import AdvisorError
from advisor.profiling import COMPUTE_CLASSES, OpClass, OpCost, OpMix
from advisor.throughput.estimate import architecture_class
from advisor.throughput.kernel_efficiency import KernelPriors, shipped_kernel_priors
from advisor.throughput.reference import ReferenceRow
from pricing import AcceleratorSpec

__all__ = ["MIN_ANCHORED", "AnchoredRoofline", "PATHS", "RooflinePrior", "RooflineSample",
           "anchor_features", "class_peers", "compute_path", "reference_samples",
           "reference_samples_by_generation", "ridge_at"]

PATHS = ("tensor", "tf32", "simt")
_HALF = ("bfloat16", "float16")


def compute_path(dtype: str, spec: AcceleratorSpec, *, tf32: bool) -> tuple[str, float]:
    """(path, peak FLOP/s) of a matmul-like operator computing in ``dtype`` on ``spec``."""
    bf16 = (spec.bf16_tflops or 0.0) * 1e12
    fp32 = (spec.fp32_tflops or 0.0) * 1e12
    if dtype in _HALF:
        native = spec.tensor_cores and bf16 > 0 and (dtype == "float16" or spec.supports_bf16)
        if native:
            return "tensor", bf16
        return "simt", max(fp32, bf16 if dtype == "float16" else 0.0) or bf16
    if fp32 <= 0:  # TPUs, Gaudi: fp32 matmuls run as bf16 passes
        return "tensor", bf16
    if tf32 and spec.tensor_cores and spec.supports_bf16 and bf16 > 0:
        return "tf32", max(fp32, bf16 / 2)
    return "simt", fp32


@dataclass(frozen=True, slots=True)
class RooflineSample:
    """One measurement to learn from: ``samples_per_second`` of a workload with ``op_mix``
    at per-device ``batch_size`` on ``accelerator``, TF32 enabled or not."""

    op_mix: OpMix
    batch_size: int
    accelerator: AcceleratorSpec
    tf32: bool
    samples_per_second: float
    group: str = ""  # samples of one group (model/precision) share one unit of weight


class RooflinePrior:
    """Roofline time per sample with learned per-class efficiencies (scikit-learn style).

    Hyper-parameters: ``prior_efficiency`` (where every efficiency starts and is pulled
    back to), ``class_priors`` (per class and path, where those efficiencies start instead:
    ``kernel_efficiency.kernel_priors``, measured on single kernels; ``class_prior_weight``
    scales the pull toward those), ``regularization`` (strength of that pull, on the logit
    scale, per parameter), ``kernel_overhead_s`` (device time per kernel launched, beyond its
    roofline). Learned: ``flops_efficiency_`` per (compute class, path) and
    ``bytes_efficiency_`` per class, all in (0, 1]; ``n_samples_``; ``log_rmse_``.
    """

    def __init__(self, *, prior_efficiency: float = 0.5, regularization: float = 0.05,
                 kernel_overhead_s: float = 2e-6, class_priors: KernelPriors | None = None,
                 class_prior_weight: float = 1.0) -> None:
        if not 0 < prior_efficiency <= 1:
            raise AdvisorError(f"prior_efficiency must be in (0, 1], got {prior_efficiency}")
        if regularization <= 0:
            raise AdvisorError(f"regularization must be > 0, got {regularization}")
        if kernel_overhead_s < 0:
            raise AdvisorError(f"kernel_overhead_s must be >= 0, got {kernel_overhead_s}")
        if class_prior_weight <= 0:
            raise AdvisorError(f"class_prior_weight must be > 0, got {class_prior_weight}")
        self.prior_efficiency = prior_efficiency
        self.regularization = regularization
        self.kernel_overhead_s = kernel_overhead_s
        self.class_priors = class_priors
        self.class_prior_weight = class_prior_weight

    # -- parameters ----------------------------------------------------------------------

    @staticmethod
    def _keys() -> tuple[list[tuple[OpClass, str]], list[OpClass]]:
        return [(c, p) for c in COMPUTE_CLASSES for p in PATHS], list(OpClass)

    def _unpack(self, theta: np.ndarray) -> tuple[dict[tuple[OpClass, str], float],
                                                   dict[OpClass, float]]:
        flops_keys, bytes_keys = self._keys()
        values = 1.0 / (1.0 + np.exp(-theta))
        return (dict(zip(flops_keys, values[:len(flops_keys)].tolist(), strict=True)),
                dict(zip(bytes_keys, values[len(flops_keys):].tolist(), strict=True)))

    def _prior_theta(self) -> np.ndarray:
        flops_keys, bytes_keys = self._keys()
        known = self.class_priors or KernelPriors({}, {})
        priors = [known.flops_efficiency.get(k, self.prior_efficiency) for k in flops_keys]
        priors += [known.bytes_efficiency.get(k, self.prior_efficiency) for k in bytes_keys]
        p = np.minimum(np.array(priors), 1 - 1e-6)
        return np.asarray(np.log(p / (1 - p)))

    def _prior_weights(self) -> np.ndarray:
        """Per parameter, the weight of its pull toward its prior: ``class_prior_weight``
        where ``class_priors`` gives one, else 1."""
        flops_keys, bytes_keys = self._keys()
        known = self.class_priors or KernelPriors({}, {})
        measured = [k in known.flops_efficiency for k in flops_keys]
        measured += [k in known.bytes_efficiency for k in bytes_keys]
        return np.where(measured, self.class_prior_weight, 1.0)

    # -- the roofline --------------------------------------------------------------------

    def _terms(self, costs: Sequence[OpCost], spec: AcceleratorSpec, *, tf32: bool,
               ) -> tuple[list[tuple[float, int, float, int]], float]:
        """Per cost: (seconds at full flops efficiency, flops parameter index, seconds at
        full bandwidth, bytes parameter index); and the kernel overhead seconds."""
        flops_keys, bytes_keys = self._keys()
        bandwidth = spec.memory_bandwidth_gbs * 1e9
        if bandwidth <= 0:
            raise AdvisorError(f"accelerator {spec.name} has no memory bandwidth figure")
        terms, kernels = [], 0.0
        for cost in costs:
            kernels += cost.kernels
            flops_index, flops_s = 0, 0.0
            if cost.flops > 0 and cost.op_class in COMPUTE_CLASSES:
                path, peak = compute_path(cost.dtype, spec, tf32=tf32)
                if peak <= 0:
                    raise AdvisorError(f"accelerator {spec.name} has no TFLOPS figure")
                flops_index, flops_s = flops_keys.index((cost.op_class, path)), cost.flops / peak
            bytes_index = len(flops_keys) + bytes_keys.index(cost.op_class)
            terms.append((flops_s, flops_index, cost.bytes_moved / bandwidth, bytes_index))
        return terms, kernels * self.kernel_overhead_s

    @staticmethod
    def _time(terms: Sequence[tuple[float, int, float, int]], overhead_s: float,
              efficiency: np.ndarray) -> float:
        return overhead_s + sum(max(f / float(efficiency[fi]), b / float(efficiency[bi]))
                                for f, fi, b, bi in terms)

    # -- fitting and prediction -------------------------------------------------------------

    def fit(self, samples: Sequence[RooflineSample]) -> Self:
        """Learn the efficiencies from measured samples (log-error least squares, pulled
        toward ``prior_efficiency``); returns self."""
        from scipy.optimize import minimize

        rows = []
        for s in samples:
            if s.samples_per_second <= 0 or s.batch_size < 1:
                continue
            terms, overhead = self._terms(s.op_mix.at_batch(s.batch_size), s.accelerator,
                                          tf32=s.tf32)
            rows.append((terms, overhead, -math.log(s.samples_per_second), s.group))
        if not rows:
            raise AdvisorError("no usable measurements to fit the roofline prior on")
        counts: dict[str, int] = {}
        for row in rows:
            counts[row[3]] = counts.get(row[3], 0) + 1
        weights = np.array([1.0 / counts[r[3]] for r in rows])
        weights /= weights.sum()
        theta0 = self._prior_theta()
        pull = self.regularization * self._prior_weights() / len(theta0)
        # Every row's terms in flat arrays: the loss is evaluated a thousand times (numerical
        # gradients), so it runs in numpy, not in a Python loop per term.
        row_of = np.array([i for i, r in enumerate(rows) for _ in r[0]], dtype=np.intp)
        flops_s, flops_at, bytes_s, bytes_at = (
            np.array([term[k] for r in rows for term in r[0]], dtype=dtype)
            for k, dtype in ((0, float), (1, np.intp), (2, float), (3, np.intp)))
        overheads = np.array([r[1] for r in rows])
        targets = np.array([r[2] for r in rows])

        def log_errors(theta: np.ndarray) -> np.ndarray:
            efficiency = 1.0 / (1.0 + np.exp(-theta))
            per_term = np.maximum(flops_s / efficiency[flops_at], bytes_s / efficiency[bytes_at])
            seconds = overheads + np.bincount(row_of, weights=per_term, minlength=len(rows))
            return np.asarray(np.log(seconds) - targets)

        def loss(theta: np.ndarray) -> float:
            return float((weights * log_errors(theta) ** 2).sum()
                         + float((pull * (theta - theta0) ** 2).sum()))

        result = minimize(loss, theta0, method="L-BFGS-B", bounds=[(-8.0, 12.0)] * len(theta0))
        self.theta_ = np.asarray(result.x)
        self.flops_efficiency_, self.bytes_efficiency_ = self._unpack(self.theta_)
        self.log_rmse_ = float(np.sqrt(np.mean(log_errors(self.theta_) ** 2)))
        self.n_samples_ = len(rows)
        return self

    def seconds_per_sample(self, op_mix: OpMix, accelerator: AcceleratorSpec, *,
                           batch_size: int, tf32: bool) -> float:
        """Predicted device seconds per sample at per-device ``batch_size``."""
        efficiency = 1.0 / (1.0 + np.exp(-getattr(self, "theta_", self._prior_theta())))
        terms, overhead = self._terms(op_mix.at_batch(batch_size), accelerator, tf32=tf32)
        return self._time(terms, overhead, efficiency)

    def samples_per_second(self, op_mix: OpMix, accelerator: AcceleratorSpec, *,
                           batch_size: int, tf32: bool) -> float:
        """Predicted samples/s on one device at per-device ``batch_size``."""
        return 1.0 / self.seconds_per_sample(op_mix, accelerator, batch_size=batch_size,
                                             tf32=tf32)


def reference_samples(reference: Sequence[ReferenceRow], accelerators: Mapping[str, AcceleratorSpec],
                      mixes: Mapping[str, OpMix]) -> list[RooflineSample]:
    """Single-device reference rows whose ``model/precision`` has an operator mix, one sample
    (the median) per generation, workload, accelerator and batch. Reference ``fp32`` rows
    count as TF32 (the reference software enabled it on Ampere and newer)."""
    groups: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    for r in reference:
        key = f"{r.model}/{r.precision}"
        if (r.accelerator_count == 1 and key in mixes and r.accelerator in accelerators
                and r.batch_size_per_accelerator >= 1 and r.samples_per_second > 0
                and accelerators[r.accelerator].memory_bandwidth_gbs > 0):
            groups[(r.generation, key, r.accelerator, r.batch_size_per_accelerator)].append(
                r.samples_per_second)
    return [RooflineSample(mixes[key], batch, accelerators[name], True,
                           statistics.median(values), group=key)
            for (_, key, name, batch), values in sorted(groups.items())]


def reference_samples_by_generation(reference: Sequence[ReferenceRow],
                                    accelerators: Mapping[str, AcceleratorSpec],
                                    mixes: Mapping[str, OpMix]) -> dict[str, list[RooflineSample]]:
    """``reference_samples`` of each software generation apart, by generation (sorted): a
    residual difference is only taken within one generation (the tables' two generations ran
    one GPU about 10% apart)."""
    return {generation: reference_samples([r for r in reference if r.generation == generation],
                                          accelerators, mixes)
            for generation in sorted({r.generation for r in reference})}


class AnchoredRoofline:
    """The roofline prior corrected, per accelerator, by how far it missed the reference
    workloads measured there (their log residual, weighted by how alike they are).

    ``conv_fractions`` maps reference model names to their convolution share of FLOPs;
    ``kind_width`` and ``precision_mismatch_weight`` weight a reference workload's residual
    as ``TransferModel``'s FLOPs prior weights its measurements. The correction is the
    weighted mean residual when the weights sum to at least one, shrunk toward zero below.

    An accelerator no reference workload ran on borrows its correction from the
    accelerators of its class (vendor, tensor cores, bf16) that have one: a ridge regression
    (penalty ``anchor_ridge``) of their corrections for the workload on the logs of their
    peak FLOP/s (tensor and fp32) and memory bandwidth, evaluated at its own figures; with
    fewer than ``MIN_ANCHORED`` such accelerators it gets none.

    ``roofline`` (unfitted) is the prior to fit; by default one whose efficiencies start
    from, and are pulled toward, the single-kernel measurements' (``shipped_kernel_priors``).
    A fitted one remembers its predictions: change a setting on a copy (``copy.copy``), or
    refit.
    """

    def __init__(self, *, conv_fractions: Mapping[str, float], kind_width: float = 0.25,
                 precision_mismatch_weight: float = 0.3, anchor_ridge: float = 0.1,
                 roofline: RooflinePrior | None = None) -> None:
        if anchor_ridge <= 0:
            raise AdvisorError(f"anchor_ridge must be > 0, got {anchor_ridge}")
        self.conv_fractions = dict(conv_fractions)
        self.kind_width = kind_width
        self.precision_mismatch_weight = precision_mismatch_weight
        self.anchor_ridge = anchor_ridge
        self.roofline = roofline

    def fit(self, samples: Sequence[RooflineSample]) -> Self:
        """Fit the roofline and record each sample's log residual; returns self."""
        self.__dict__.pop("answers_", None)
        roofline = self.roofline or RooflinePrior(class_priors=shipped_kernel_priors())
        self.roofline_ = roofline.fit(samples)
        residuals: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.specs_: dict[str, AcceleratorSpec] = {}
        for s in samples:
            predicted = self.roofline_.samples_per_second(s.op_mix, s.accelerator,
                                                          batch_size=s.batch_size, tf32=s.tf32)
            residuals[(s.accelerator.name, s.group)].append(
                math.log(s.samples_per_second / predicted))
            self.specs_[s.accelerator.name] = s.accelerator
        self.residuals_: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for (name, group), values in sorted(residuals.items()):
            self.residuals_[name].append((group, statistics.mean(values)))
        return self

    def predict_log(self, op_mix: OpMix, accelerator: AcceleratorSpec, *, batch_size: int,
                    tf32: bool, precision_key: str) -> float:
        """Log samples/s on one device: roofline plus the similar references' residual
        (remembered: one ranking asks the same of a part again for each anchor and peer)."""
        key = (op_mix, accelerator, batch_size, tf32, precision_key)
        answers = self._answers()
        if key not in answers:
            base = math.log(self.roofline_.samples_per_second(op_mix, accelerator,
                                                              batch_size=batch_size, tf32=tf32))
            conv = op_mix.flops_fraction(OpClass.CONVOLUTION) or 0.0
            answers[key] = base + (self.anchor(accelerator.name, conv, precision_key)
                                   if accelerator.name in self.residuals_
                                   else self._borrowed_anchor(accelerator, conv, precision_key))
        return answers[key]

    def _answers(self) -> dict[tuple[object, ...], float]:
        """This fit's answers so far, by question (fit starts them afresh; never pickled),
        dropped whole past ``_MAX_ANSWERS``."""
        answers: dict[tuple[object, ...], float] | None = self.__dict__.get("answers_")
        if answers is None or len(answers) > _MAX_ANSWERS:
            answers = self.__dict__["answers_"] = {}
        return answers

    def __getstate__(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if k != "answers_"}

    def anchor_terms(self, name: str, conv_fraction: float,
                     precision_key: str) -> list[tuple[str, float, float]]:
        """(group, log residual, weight) of each reference workload run on ``name``: the
        weight falls with how far its convolution share is from ``conv_fraction``, and by
        ``precision_mismatch_weight`` for another precision than ``precision_key``."""
        terms = []
        for group, residual in self.residuals_[name]:
            model, _, precision = group.partition("/")
            theirs = self.conv_fractions.get(model)
            distance = 0.5 if theirs is None else abs(theirs - conv_fraction)
            weight = math.exp(-((distance / self.kind_width) ** 2))
            if precision != precision_key:
                weight *= self.precision_mismatch_weight
            terms.append((group, residual, weight))
        return terms

    def anchor(self, name: str, conv_fraction: float, precision_key: str) -> float:
        """``name``'s weighted mean residual over the reference workloads run on it
        (remembered, as ``predict_log``: the borrowed anchors ask it of every peer)."""
        key = ("anchor", name, conv_fraction, precision_key)
        answers = self._answers()
        if key not in answers:
            terms = self.anchor_terms(name, conv_fraction, precision_key)
            answers[key] = sum(w * r for _, r, w in terms) / max(sum(w for *_, w in terms), 1.0)
        return answers[key]

    def regresses(self, accelerator: AcceleratorSpec) -> bool:
        """Whether a part with no reference rows borrows a correction regressed from the
        anchored accelerators of its class: its figures are known and at least
        ``MIN_ANCHORED`` of them have theirs."""
        return (anchor_features(accelerator) is not None
                and len(class_peers(accelerator, self.specs_)) >= MIN_ANCHORED)

    def _borrowed_anchor(self, accelerator: AcceleratorSpec, conv_fraction: float,
                         precision_key: str) -> float:
        """The correction regressed from the anchored accelerators of its class (0 where
        ``regresses`` says it borrows none)."""
        if not self.regresses(accelerator):
            return 0.0
        ours = anchor_features(accelerator)
        assert ours is not None  # regresses: its figures are known
        seen = class_peers(accelerator, self.specs_)
        return ridge_at(list(seen.values()),
                        [self.anchor(name, conv_fraction, precision_key) for name in seen],
                        ours, self.anchor_ridge)


MIN_ANCHORED = 3  # anchored accelerators of a class needed to regress an unseen one's
_MAX_ANSWERS = 4096  # remembered predictions of one fit (a ranking asks about 100)


def anchor_features(spec: AcceleratorSpec) -> tuple[float, float, float] | None:
    """Logs of peak tensor (bf16/fp16) and fp32 FLOP/s and memory bandwidth; None when the
    datasheet lacks one."""
    if not (spec.bf16_tflops and spec.fp32_tflops and spec.memory_bandwidth_gbs > 0):
        return None
    return (math.log(spec.bf16_tflops), math.log(spec.fp32_tflops),
            math.log(spec.memory_bandwidth_gbs))


def class_peers(spec: AcceleratorSpec, specs: Mapping[str, AcceleratorSpec]
                ) -> dict[str, tuple[float, float, float]]:
    """The parts of ``specs`` (by name, sorted) of ``spec``'s vendor and architecture class,
    other than ``spec`` itself, that have ``anchor_features``, with them."""
    return {name: figures for name, other in sorted(specs.items())
            if name != spec.name and other.vendor == spec.vendor
            and architecture_class(other) == architecture_class(spec)
            and (figures := anchor_features(other)) is not None}


def ridge_at(features: Sequence[Sequence[float]], values: Sequence[float],
             at: Sequence[float], ridge: float) -> float:
    """A ridge regression of ``values`` on ``features`` (both centred, penalty ``ridge``),
    evaluated at ``at``: how an unseen part's figure is borrowed from its class's parts."""
    x, y = np.array(features), np.array(values)
    center = x.mean(axis=0)
    centered = x - center
    coef = np.linalg.solve(centered.T @ centered + ridge * np.eye(len(center)),
                           centered.T @ (y - y.mean()))
    return float(y.mean() + (np.asarray(at) - center) @ coef)
