"""Per-operator transfer: a step probed on one accelerator, carried to another class by class.

A probe measures the whole step on accelerator B. The step's time per sample is split by
operator class (``OpClass``: matmul, convolution, attention, normalization, elementwise,
reduction, embedding, optimizer, other): by the probe's own per-class device times where it
recorded them (``ProbeResult.op_class_seconds``, per step), else by the operator roofline's
per-class estimate on B; either way scaled so the parts sum to the measured time. Each
class's part is then carried to the target A by the ratio of what bounds it on each device
(the Habitat idea, USENIX ATC'21; this is our own, simpler version on class totals):

    t_c(A) = t_c(B) x r_c(A) / r_c(B)
    r_c(X) = max(sum over the class's (dtype) entries of
                   max(flops / (peak FLOP/s of the dtype's path on X x flops efficiency[c, path]),
                       bytes / (bandwidth of X x bytes efficiency[c]))
                 + kernels x kernel overhead,
                 kernels x launch floor)

with the efficiencies ``RooflinePrior`` learned from the reference rows (so a class bound by
compute on its dtype's path scales with that path's peak, one bound by bandwidth with the
bandwidth, one made of small kernels by neither). Last, the whole step is corrected by the
difference of the two devices' corrections over the bare roofline, so the per-device misses
the model knows of are not carried from B to A: ``TransferModel`` passes what each device's
no-probe prediction adds to the roofline (its anchor, and a published anchor for a part with
no reference rows); by default, the ``AnchoredRoofline``'s anchors (how far the roofline missed
the reference workloads measured on each device, borrowed from its peers where it has none).
With ``pair_shift``, that difference is then moved toward how the roofline missed the
reference workloads alike in operator mix measured on both devices
(``advisor.throughput._pair_shift``): the pair's own evidence, where the reference has it.
With the pair shift's ``shrinkage`` (``advisor.throughput._probe_shrink``), only the share
``beta`` of the probe's own no-probe miss on B (its no-probe figure there over the probe) is
carried: ``1 - beta`` of it is given back, so the figure is A's no-probe one moved by
``beta`` of that miss plus the pair shift, ``beta`` learned per architecture-class pair from
how the reference models' held-out misses on two parts move together.

With a split in proportion to the roofline's own estimate this reduces to the probe times the
ratio of the two devices' no-probe predictions; recorded class times make the split the step's
own. A probe on A itself is reproduced exactly.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping

from advisor.errors import AdvisorError
from advisor.profiling import COMPUTE_CLASSES, OpClass, OpMix
from advisor.spec import Precision
from advisor.throughput._pair_shift import PairShift
from advisor.throughput.estimate import precision_key
from advisor.throughput.roofline import AnchoredRoofline, RooflinePrior, compute_path
from pricing import AcceleratorSpec

__all__ = ["LAUNCH_FLOOR_S", "OpTransfer", "class_seconds", "split_step"]

# Device time no kernel goes below, whatever its work: launch latency plus the tail of an
# almost empty grid, a few microseconds on current NVIDIA GPUs (CUDA's documented launch
# overhead is of that order). A class of many small kernels scales with neither peak.
LAUNCH_FLOOR_S = 4e-6


def class_seconds(prior: RooflinePrior, op_mix: OpMix, spec: AcceleratorSpec, *,
                  batch_size: int, tf32: bool,
                  launch_floor_s: float = LAUNCH_FLOOR_S) -> dict[OpClass, float]:
    """Roofline device seconds per sample of each operator class of ``op_mix`` on ``spec`` at
    per-device ``batch_size``, with ``prior``'s learned efficiencies (its prior ones when not
    fitted) and each class at least ``launch_floor_s`` per kernel; classes with no work are
    left out. AdvisorError when the part lacks a bandwidth or TFLOPS figure it needs."""
    efficiency_f = getattr(prior, "flops_efficiency_", None)
    efficiency_b = getattr(prior, "bytes_efficiency_", None)
    default = prior.prior_efficiency
    bandwidth = spec.memory_bandwidth_gbs * 1e9
    if bandwidth <= 0:
        raise AdvisorError(f"accelerator {spec.name} has no memory bandwidth figure")
    seconds: dict[OpClass, float] = defaultdict(float)
    kernels: dict[OpClass, float] = defaultdict(float)
    for cost in op_mix.at_batch(batch_size):
        flops_s = 0.0
        if cost.flops > 0 and cost.op_class in COMPUTE_CLASSES:
            path, peak = compute_path(cost.dtype, spec, tf32=tf32)
            if peak <= 0:
                raise AdvisorError(f"accelerator {spec.name} has no TFLOPS figure")
            eff = efficiency_f.get((cost.op_class, path), default) if efficiency_f else default
            flops_s = cost.flops / (peak * eff)
        eff_b = efficiency_b.get(cost.op_class, default) if efficiency_b else default
        bytes_s = cost.bytes_moved / (bandwidth * eff_b)
        seconds[cost.op_class] += max(flops_s, bytes_s) + cost.kernels * prior.kernel_overhead_s
        kernels[cost.op_class] += cost.kernels
    return {c: max(s, kernels[c] * launch_floor_s) for c, s in seconds.items()
            if max(s, kernels[c] * launch_floor_s) > 0}


def split_step(measured_s: float, estimate: Mapping[OpClass, float],
               recorded: Mapping[str, float] | None = None) -> dict[OpClass, float]:
    """``measured_s`` (a step's, or a sample's, time) split over operator classes: in
    proportion to ``recorded`` (the probe's own device seconds per class, keyed by class
    name; unknown names count as ``other``) when it holds any time, else to ``estimate``
    (the roofline's seconds per class). The parts sum to ``measured_s``."""
    if not (math.isfinite(measured_s) and measured_s > 0):
        raise AdvisorError(f"measured step time must be a finite number > 0, got {measured_s}")
    weights: dict[OpClass, float] = defaultdict(float)
    for name, value in (recorded or {}).items():
        if math.isfinite(value) and value > 0:
            op_class = OpClass(name) if name in OpClass.__members__.values() else OpClass.OTHER
            weights[op_class] += value
    if not weights:
        weights.update({c: v for c, v in estimate.items() if v > 0})
    total = sum(weights.values())
    if total <= 0:
        raise AdvisorError("no operator class has any time to split the step over")
    return {c: measured_s * v / total for c, v in weights.items()}


class OpTransfer:
    """A probe on one accelerator carried to another operator class by operator class (see
    the module), with the efficiencies and per-device anchors of a fitted
    ``AnchoredRoofline``. Stateless beyond it; ``launch_floor_s`` is the per-kernel floor;
    ``pair_shift`` (None: off) corrects the pair by the alike reference workloads measured
    on both devices."""

    def __init__(self, roofline: AnchoredRoofline, *,
                 launch_floor_s: float = LAUNCH_FLOOR_S,
                 pair_shift: PairShift | None = None) -> None:
        if launch_floor_s < 0:
            raise AdvisorError(f"launch_floor_s must be >= 0, got {launch_floor_s}")
        self.roofline = roofline
        self.launch_floor_s = launch_floor_s
        self.pair_shift = pair_shift

    def _anchor(self, op_mix: OpMix, spec: AcceleratorSpec, *, batch_size: int,
                precision: Precision | None) -> float:
        """The anchored roofline's log correction for ``spec`` (its prediction less the bare
        roofline's)."""
        tf32 = precision is Precision.TF32
        bare = self.roofline.roofline_.samples_per_second(op_mix, spec, batch_size=batch_size,
                                                          tf32=tf32)
        key = precision_key(precision, spec) if precision is not None else "mixed"
        return self.roofline.predict_log(op_mix, spec, batch_size=batch_size, tf32=tf32,
                                         precision_key=key) - math.log(bare)

    def predict_log(self, op_mix: OpMix, *, probed: AcceleratorSpec, probed_log_sps: float,
                    target: AcceleratorSpec, batch_size: int, precision: Precision | None,
                    probed_batch_size: int | None = None,
                    recorded: Mapping[str, float] | None = None,
                    corrections: tuple[float, float] | None = None,
                    borrow: Mapping[str, AcceleratorSpec] | None = None) -> float:
        """Log samples/s on one ``target`` device at per-device ``batch_size`` from
        ``probed_log_sps`` measured on one ``probed`` device at ``probed_batch_size`` (None:
        the same batch); ``recorded`` is the probe's device seconds per class (per step; None
        or empty: split by the roofline); ``corrections`` the (target, probed) log
        corrections of the devices' no-probe predictions over the bare roofline (None: the
        anchored roofline's anchors); ``borrow`` the parts that may borrow the pair shift's
        residuals from their peers (``PairShift``). The probed device at the probed batch is
        answered with the probe."""
        probed_batch = probed_batch_size or batch_size
        if target.name == probed.name and probed_batch == batch_size:
            return probed_log_sps
        prior = self.roofline.roofline_
        tf32 = precision is Precision.TF32

        def per_class(spec: AcceleratorSpec, batch: int) -> dict[OpClass, float]:
            return class_seconds(prior, op_mix, spec, batch_size=batch, tf32=tf32,
                                 launch_floor_s=self.launch_floor_s)

        on_probed, on_target = per_class(probed, probed_batch), per_class(target, batch_size)
        parts = split_step(math.exp(-probed_log_sps), on_probed, recorded)
        whole = sum(on_target.values()) / sum(on_probed.values())  # a class the mix lacks
        seconds = sum(t * (on_target[c] / on_probed[c] if c in on_probed and c in on_target
                           else whole) for c, t in parts.items())
        if corrections is None:
            corrections = (self._anchor(op_mix, target, batch_size=batch_size,
                                        precision=precision),
                           self._anchor(op_mix, probed, batch_size=probed_batch,
                                        precision=precision))
        shift = corrections[0] - corrections[1]
        if self.pair_shift is not None:
            shift = self.pair_shift.shift(op_mix, precision_key(precision, target),
                                          target=target.name, probed=probed.name,
                                          prior_shift=shift, borrow=borrow)
        value = -math.log(seconds) + shift
        shrinkage = self.pair_shift.shrinkage if self.pair_shift is not None else None
        beta = shrinkage.beta(target, probed) if shrinkage is not None else 1.0
        if beta < 1:  # carry only beta of the probe's miss on B: (1 - beta) of it back
            bare = prior.samples_per_second(op_mix, probed, batch_size=probed_batch, tf32=tf32)
            value += (1 - beta) * (math.log(bare) + corrections[1] - probed_log_sps)
        return value
