"""The reference parts' size trend: how much of its roofline a part reaches, by its size.

On the reference table, the larger a part's peak tensor FLOP/s, the less of its operator
roofline a plain training step reaches (launch and other fixed costs do not shrink with the
peak); the roofline's per-part corrections (``AnchoredRoofline.anchor``) fall with it. A part
with no reference rows of its own vendor (TPUs, Gaudi, Trainium) gets no such correction, so
its datasheet roofline carries none of the trend; where it borrows the published correction
of a peer of another size (``PublishedAnchoring._peer_correction``), the peer's correction is
carried to it by the trend of the reference parts of its architecture class:

    shift(part, peer) = ridge(log tensor peak, log bandwidth)(part) - ridge(...)(peer)

the ridge regression (``ridge_at``, the roofline's ``anchor_ridge``) of those parts'
corrections for the workload on the two logs every datasheet gives (TPUs and Gaudi list no
fp32 peak). Held out by whole GPU families on the reference table, a correction borrowed
through such a regression misses less than the peers' plain mean (which leaves a part above
its peers too fast and one below them too slow).
"""

from __future__ import annotations

import math

from advisor.throughput.estimate import architecture_class
from advisor.throughput.roofline import MIN_ANCHORED, AnchoredRoofline, ridge_at
from pricing import AcceleratorSpec

__all__ = ["size_features", "size_shift"]


def size_features(spec: AcceleratorSpec) -> tuple[float, float] | None:
    """Logs of peak tensor (bf16/fp16) FLOP/s and memory bandwidth; None when the datasheet
    lacks one."""
    if not (spec.bf16_tflops and spec.memory_bandwidth_gbs > 0):
        return None
    return math.log(spec.bf16_tflops), math.log(spec.memory_bandwidth_gbs)


def size_shift(roofline: AnchoredRoofline, accelerator: AcceleratorSpec, peer: AcceleratorSpec,
               conv_fraction: float, precision_key: str) -> float:
    """Log shift carrying ``peer``'s correction to ``accelerator`` by the size trend of the
    reference parts of ``accelerator``'s architecture class (see the module); 0 where
    ``accelerator``'s own roofline correction already regresses on its figures
    (``AnchoredRoofline.regresses``: parts of its vendor and class have reference rows), where
    a figure is missing, or where fewer than ``MIN_ANCHORED`` reference parts of its class have
    them."""
    if roofline.regresses(accelerator):
        return 0.0
    ours, theirs = size_features(accelerator), size_features(peer)
    parts = {name: figures for name, spec in sorted(roofline.specs_.items())
             if architecture_class(spec) == architecture_class(accelerator)
             and (figures := size_features(spec)) is not None}
    if ours is None or theirs is None or len(parts) < MIN_ANCHORED:
        return 0.0
    features = list(parts.values())
    values = [roofline.anchor(name, conv_fraction, precision_key) for name in parts]
    return (ridge_at(features, values, ours, roofline.anchor_ridge)
            - ridge_at(features, values, theirs, roofline.anchor_ridge))
