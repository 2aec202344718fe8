"""What probes on some accelerators say of the others: the probe half of ``TransferModel``.

A probe is first made one device (``_per_device_probes``: a probe on N devices through the
scaling efficiency at the step's communication load). One probed accelerator is then carried
to the other parts of its vendor operator class by operator class (``_op_transfer_log``,
``advisor.throughput._op_transfer``), where the workload's operator mix is known. A part with
no reference rows, which has no column in the pooled model for a probe to move, is its
no-probe figure moved by the probes' misses (``_probes_miss``), so a probe that lands on its
own prediction moves nothing.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError
from advisor.spec import Precision
from advisor.throughput._calibration import residual_case, unlike_probes
from advisor.throughput._no_probe import _DEFAULT_BATCH
from advisor.throughput._op_transfer import OpTransfer
from advisor.throughput.estimate import Measurement, WorkloadFeatures, architecture_class
from advisor.throughput.scaling import ScalingModel
from pricing import AcceleratorSpec

if TYPE_CHECKING:
    from advisor.throughput._pair_shift import PairShift
    from advisor.throughput.roofline import AnchoredRoofline

__all__ = ["ProbeCarrying"]


class ProbeCarrying:
    """Mixin of ``TransferModel``: probes made one device and carried to other parts."""

    specs_: dict[str, AcceleratorSpec]
    scaling_: ScalingModel

    if TYPE_CHECKING:  # the model's own, or its other mixins'
        def roofline(self) -> AnchoredRoofline | None: ...

        def _pair_shift(self, roofline: AnchoredRoofline) -> PairShift | None: ...

        def predict_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                        probes: Mapping[str, float], *,
                        measurements: Sequence[Measurement] = ()) -> tuple[float, str]: ...

        def _architecture_of(self, name: str) -> tuple[bool, bool] | None: ...

        def _reference_parts(self) -> set[str]: ...

        def _peers(self, accelerator: AcceleratorSpec) -> list[str]: ...

    def _per_device_probes(self, workload: WorkloadFeatures,
                           measurements: Sequence[Measurement]) -> dict[str, float]:
        """Log samples/s per single device of each measured accelerator (a probe on N
        devices through the scaling efficiency at the step's communication load)."""
        logs: dict[str, list[float]] = {}
        for m in measurements:
            spec = self.specs_.get(m.accelerator)
            per_device = m.samples_per_second / m.accelerator_count
            if spec is not None:
                per_device = self.scaling_.one_device(
                    m.samples_per_second, spec, m.accelerator_count, params=workload.params,
                    batch_size_per_device=m.batch_size or workload.batch_size_per_device)
            logs.setdefault(m.accelerator, []).append(math.log(per_device))
        return {a: sum(v) / len(v) for a, v in logs.items()}

    def _op_transfer_log(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                         probes: Mapping[str, float], measurements: Sequence[Measurement],
                         ) -> tuple[float, str] | None:
        """The one probe carried to ``accelerator`` by operator class, each device's
        correction being what its no-probe prediction adds to the bare roofline, then the
        pair shift (a part with no reference rows borrows its peers' residuals there unless
        it has published anchors, which speak for it directly); None where
        the workload has no operator mix, no roofline is fitted, the probed part is unknown
        or of another vendor, or a part lacks the figures the roofline needs."""
        (name, log_sps), = probes.items()
        probed = self.specs_.get(name)
        roofline = self.roofline() if workload.op_mix is not None else None
        if (probed is None or roofline is None or workload.op_mix is None
                or probed.vendor != accelerator.vendor):
            return None
        own = [m for m in measurements if m.accelerator == name]
        batch = workload.batch_size_per_device or _DEFAULT_BATCH
        probed_batch = next((m.batch_size for m in own if m.batch_size), batch)
        recorded = next((dict(m.op_class_seconds) for m in own if m.op_class_seconds), None)
        tf32 = workload.precision is Precision.TF32
        try:
            corrections = tuple(
                self.predict_log(replace(workload, batch_size_per_device=b), spec, {})[0]
                - math.log(roofline.roofline_.samples_per_second(workload.op_mix, spec,
                                                                 batch_size=b, tf32=tf32))
                for spec, b in ((accelerator, batch), (probed, probed_batch)))
            value = OpTransfer(roofline, pair_shift=self._pair_shift(roofline)).predict_log(
                workload.op_mix, probed=probed, probed_log_sps=log_sps, target=accelerator,
                batch_size=batch, precision=workload.precision, probed_batch_size=probed_batch,
                recorded=recorded, corrections=(corrections[0], corrections[1]),
                borrow={s.name: s for s in (accelerator, probed) if self._may_borrow(s)})
        except AdvisorError:  # a part without the bandwidth or TFLOPS figure
            return None
        unlike = unlike_probes([self._architecture_of(name)], architecture_class(accelerator))
        return value, residual_case(accelerator.name not in self._reference_parts(), 1,
                                    unlike=unlike)

    def _probes_miss(self, workload: WorkloadFeatures, accelerator: AcceleratorSpec,
                     probes: Mapping[str, float]) -> float:
        """The log shift probes on other parts give an unmeasured part with no reference rows:
        the mean over the probed parts of each one's no-probe miss (its log probe less its
        no-probe prediction) times the share of it that carries to ``accelerator`` (the probe
        shrinkage's beta; the whole miss where nothing measures the share, as between
        vendors). A part with no reference rows has no column in the pooled model for a probe
        to move: re-predicting it from the probed columns moved a TPU or Gaudi by -40% to
        +100% after an NVIDIA probe that agreed with its own prediction."""
        roofline = self.roofline()
        shift = self._pair_shift(roofline) if roofline is not None else None
        shrink = shift.shrinkage if shift is not None else None
        carried = []
        for name, log_sps in sorted(probes.items()):
            spec = self.specs_.get(name)
            if spec is None:
                continue
            miss = log_sps - self.predict_log(workload, spec, {})[0]
            carried.append(miss * (shrink.beta(accelerator, spec) if shrink else 1.0))
        return statistics.fmean(carried) if carried else 0.0

    def _may_borrow(self, spec: AcceleratorSpec) -> bool:
        """Whether the pair shift may borrow residuals for ``spec`` from its roofline peers:
        not where published runs speak for it, its own (a published anchor) or its anchored
        peers' (whose correction its no-probe prediction, and so the transfer's correction,
        already carries: borrowing as well moved a probe that agreed with the prediction)."""
        return spec.name not in getattr(self, "anchors_", {}) and not self._peers(spec)
