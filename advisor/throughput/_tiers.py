"""Two tiers of reference rows for ``TransferModel``: the table's own rows first, shipped
rows only as far as they behave like the probed workload.

When the reference holds rows of the evaluated table itself (``advisor model evaluate``
names them generation ``bench``) next to the shipped rows of other tables, the model is
fitted on the own rows alone (the *own* prediction: the probes' ratios carried by the
table's other workloads) and, apart, on all rows (the *pooled* prediction). The pooled one
is mixed in, in log space, with weight ``shipped_weight`` x similarity, where the
similarity is learned from the probes: per shipped workload, how well its ratio profile
agrees with the probed ratios (``exp(-0.5 (dispersion / tau)^2)``), shrunk toward zero
with few shared probes (times ``(n - 1) / K`` for ``n`` of the ``K`` probes shared, so zero
with one), and the best shipped workload counts. A table whose workloads behave unlike the
shipped ones, or whose accelerators the shipped rows never ran on, gets the own prediction
unchanged: shipped data can then not make it worse.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from advisor.throughput._table import FloatArray

__all__ = ["BENCH_GENERATION", "mix_tiers", "shipped_similarity"]

BENCH_GENERATION = "bench"  # generation of the rows ``advisor model evaluate`` reads


def shipped_similarity(log_sps: FloatArray, shipped: npt.NDArray[np.bool_],
                       probes: Mapping[int, float], *, tau: float) -> float:
    """In [0, 1): how alike the best ``shipped`` row of ``log_sps`` is to the probes
    (column -> log samples/s); 0 when no shipped row shares two probes."""
    if not probes or not shipped.any():
        return 0.0
    columns = np.fromiter(probes, dtype=int, count=len(probes))
    y = np.fromiter(probes.values(), dtype=float, count=len(probes))
    offsets = y[None, :] - log_sps[np.ix_(shipped, columns)]
    shared = np.isfinite(offsets).sum(axis=1)
    usable = shared >= 2
    if not usable.any():
        return 0.0
    offsets, shared = offsets[usable], shared[usable]
    centred = offsets - np.nanmean(offsets, axis=1)[:, None]
    dispersion = np.sqrt(np.nansum(centred ** 2, axis=1) / (shared - 1))
    coverage = (shared - 1) / len(probes)
    return float((np.exp(-0.5 * (dispersion / tau) ** 2) * coverage).max())


def mix_tiers(own: tuple[float, str], pooled: tuple[float, str], similarity: float, *,
              seen_weight: float, unseen_weight: float) -> tuple[float, str]:
    """The own (log samples/s, case) moved toward the pooled one by the tier weight of the
    own case (``seen*`` or ``unseen*``) times ``similarity``; cases without probes (prior,
    foreign) take the pooled prediction, which knows FLOPs and specs the own rows lack."""
    log_own, case = own
    if case == "measured":
        return own
    if not case.startswith(("seen", "unseen")):
        return pooled
    weight = (seen_weight if case.startswith("seen") else unseen_weight) * similarity
    return (1 - weight) * log_own + weight * pooled[0], case
