"""From a log prediction to an estimate: the estimate half of ``TransferModel``.

``estimate`` answers a probed device count with the probe's own interval; any other device
count with the model's log prediction (``predict_log``) and the interval of its residual case
(``_case_interval``: the reference residuals held out; for a published anchor, the anchor's
no-probe error with the ratio's spread), widened by the uncertainty of the scaling efficiency
to N devices and never above N times one device.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from advisor.throughput._calibration import MEASURED_HALF_WIDTH
from advisor.throughput._no_probe import roofline_case
from advisor.throughput.estimate import (
    Basis,
    Measurement,
    ThroughputEstimate,
    WorkloadFeatures,
)
from advisor.throughput.scaling import ScalingModel
from pricing import AcceleratorSpec

__all__ = ["Estimating"]


def _measured_half_width(measurements: Sequence[Measurement]) -> float:
    """Log half-width of probes' throughput: the widest probe's own 95% half-width, or the
    usual probe-to-probe spread where a probe does not say."""
    return max(math.log1p(m.rel_halfwidth) if m.rel_halfwidth is not None
               else MEASURED_HALF_WIDTH for m in measurements)


class Estimating:
    """Mixin of ``TransferModel``: ``estimate`` and the intervals of its residual cases."""

    scaling_: ScalingModel
    residual_quantiles_: dict[str, tuple[float, float]]
    foreign_widening: float

    if TYPE_CHECKING:  # the model's own, or its other mixins'
        def predict_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                        probes: Mapping[str, float], *,
                        measurements: Sequence[Measurement] = ()) -> tuple[float, str]: ...

        def _per_device_probes(self, workload: WorkloadFeatures,
                               measurements: Sequence[Measurement]) -> dict[str, float]: ...

        def no_probe_interval(self, workload: WorkloadFeatures, case: str, *,
                              quantiles: Mapping[str, tuple[float, float]],
                              foreign_widening: float) -> tuple[float, float]: ...

        def published_bounds(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                             anchor: tuple[float, float],
                             case_interval: Callable[[str], tuple[float, float]]
                             ) -> tuple[float, float]: ...

    def estimate(
        self,
        workload: WorkloadFeatures,
        accelerator: AcceleratorSpec,
        *,
        count: int = 1,
        measurements: Sequence[Measurement] = (),
    ) -> ThroughputEstimate:
        """Samples/s on ``count`` devices; measured where probed, with a residual interval."""
        probes = self._per_device_probes(workload, measurements)
        own = [m for m in measurements if m.accelerator == accelerator.name]
        exact = [m for m in own if m.accelerator_count == count]
        tuned = any(m.basis is Basis.TUNED for m in own)
        if exact:  # the probe's own interval
            value = statistics.mean(m.samples_per_second for m in exact)
            half = _measured_half_width(exact)
            return ThroughputEstimate(value, value * math.exp(-half), value * math.exp(half),
                                      Basis.TUNED if tuned else Basis.MEASURED)
        log_sps, case = self.predict_log(workload, accelerator, probes,
                                         measurements=measurements)
        if case == "measured":  # this accelerator was probed on another device count
            low, high = -_measured_half_width(own), _measured_half_width(own)
        else:
            low, high = self._case_interval(workload, accelerator, case, no_probe=not probes)
            if probes and workload.op_mix is not None:
                # probes elsewhere never widen the interval (issue 29): where the workload's
                # kind gives the no-probe roofline the narrower held-out interval, the probe's
                # figure keeps that width (the probe still moves the figure)
                _, alone_case = self.predict_log(workload, accelerator, {})
                alone_low, alone_high = self._case_interval(workload, accelerator, alone_case,
                                                            no_probe=True)
                if alone_high - alone_low < high - low:
                    low, high = alone_low, alone_high
        # N devices add the scaling efficiency's uncertainty, and never beat N times one; the
        # efficiency knows the step's communication load where parameters and batch are known
        load = self.scaling_.load(workload.params, workload.batch_size_per_device,
                                  math.exp(log_sps))
        efficiency = self.scaling_.efficiency(accelerator, count, load=load)
        worst, best = self.scaling_.efficiency_interval(accelerator, count, load=load)
        low = -math.hypot(low, math.log(efficiency / worst))
        high = min(math.hypot(high, math.log(best / efficiency)),
                   high + math.log(1.0 / efficiency))
        value = math.exp(log_sps) * count * efficiency
        basis = {"measured": Basis.TUNED if tuned else Basis.MEASURED, "foreign": Basis.PRIOR,
                 "prior_unseen": Basis.PRIOR, "roofline_unseen": Basis.PRIOR,
                 }.get(case.partition("@")[0], Basis.PREDICTED)
        return ThroughputEstimate(value, value * math.exp(min(low, 0.0)),
                                  value * math.exp(max(high, 0.0)), basis)

    def _case_interval(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                       case: str, *, no_probe: bool = False) -> tuple[float, float]:
        """Log (low, high) of a predicted residual case, before scaling to N devices; a
        prediction with no probe (``no_probe``) of a workload outside the reference stack
        reaches at least the stack spread either way (``stack_half_width_``, which ``fit``
        learns from ``stack_shifts``: the reference figures' held-out error is that of the
        reference stack, and a stack of its own moves a workload as far as two stacks moved
        one reference workload)."""
        low, high = self._evidence_interval(workload, accelerator, case)
        if no_probe and not workload.reference_stack:
            floor = getattr(self, "stack_half_width_", 0.0)
            return min(low, -floor), max(high, floor)
        return low, high

    def _evidence_interval(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                           case: str) -> tuple[float, float]:
        """``_case_interval`` from the reference residuals alone (the reference stack)."""
        # a published anchor's figure carries the anchor part's no-probe error: the
        # roofline's of its architecture class (as a reference part of that class gets)
        # where the workload's operators are known, else the FLOPs prior's
        anchor_case = (roofline_case("roofline", accelerator) if workload.op_mix is not None
                       else "prior")
        def interval(of: str) -> tuple[float, float]:
            return self.no_probe_interval(workload, of, quantiles=self.residual_quantiles_,
                                          foreign_widening=self.foreign_widening)

        low, high = interval(anchor_case if case == "published" else case)
        if case == "published":  # the anchor's no-probe error and the ratio's spread (the
            # cross-suite rule's measured error, and the prior's share, for cross-suite anchors)
            return self.published_bounds(workload, accelerator, (low, high), interval)
        return low, high
