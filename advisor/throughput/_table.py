"""The reference data as a matrix: log single-device throughput, workloads x accelerators.

Internal to the throughput model. A reference *workload* is (software generation, model,
precision): ratios between accelerators are only ever taken inside one row, so generations
are never mixed. Also holds the spec features of every accelerator and a per-workload ridge
regression of log throughput on those features (the fallback for accelerators a workload,
or the whole reference, has no measurement on).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from advisor.throughput.estimate import peak_flops
from advisor.throughput.reference import REFERENCE_FLOPS_PER_SAMPLE, ReferenceRow
from pricing import AcceleratorSpec

__all__ = ["FloatArray", "ReferenceTable", "precision_twin", "spec_features", "split_precision"]

FloatArray = npt.NDArray[np.float64]
N_FEATURES = 7


def spec_features(spec: AcceleratorSpec) -> FloatArray:
    """log peak fp32, log peak fp32 as the reference ran it (TF32 tensor cores on Ampere and
    newer), log peak tensor (bf16/fp16), log bandwidth, log memory, tensor cores, bf16.

    The two flags mark architecture classes (Pascal and older / Volta-Turing / Ampere and
    newer on NVIDIA) whose kernels differ beyond what the peak figures say.

    Parts without an fp32 figure (TPU, Gaudi) use their bf16 peak, parts without a tensor
    figure their fp32 peak. Memory matters because the reference used the largest batch
    that fits.
    """
    fp32 = spec.fp32_tflops or spec.bf16_tflops or 1.0
    tensor = spec.bf16_tflops or fp32
    effective = peak_flops(spec, "fp32") / 1e12 if spec.fp32_tflops else fp32
    return np.array([math.log(fp32), math.log(effective), math.log(tensor),
                     math.log(spec.memory_bandwidth_gbs), math.log(spec.memory_gib),
                     1.0 if spec.tensor_cores else 0.0, 1.0 if spec.supports_bf16 else 0.0])


@dataclass
class ReferenceTable:
    """Log samples/s per (workload, accelerator) with NaN where not measured."""

    workloads: list[str]
    precisions: list[str]
    flops: FloatArray          # FLOPs per sample per workload, NaN when unknown
    accelerators: list[str]
    log_sps: FloatArray        # (n_workloads, n_accelerators)
    features: FloatArray       # (n_accelerators, N_FEATURES), NaN rows without a spec

    @classmethod
    def build(cls, reference: Sequence[ReferenceRow],
              specs: Mapping[str, AcceleratorSpec]) -> ReferenceTable:
        """Single-device rows only; repeated measurements are averaged in log space."""
        values: dict[tuple[str, str], list[float]] = defaultdict(list)
        meta: dict[str, tuple[str, str]] = {}
        for row in reference:
            if row.accelerator_count != 1 or row.samples_per_second <= 0:
                continue
            key = f"{row.generation}/{row.model}/{row.precision}"
            values[(key, row.accelerator)].append(math.log(row.samples_per_second))
            meta[key] = (row.precision, row.model)
        workloads = sorted(meta)
        accelerators = sorted({a for _, a in values} | set(specs))
        w_index = {w: i for i, w in enumerate(workloads)}
        a_index = {a: i for i, a in enumerate(accelerators)}
        log_sps = np.full((len(workloads), len(accelerators)), np.nan)
        for (w, a), logs in values.items():
            log_sps[w_index[w], a_index[a]] = sum(logs) / len(logs)
        features = np.full((len(accelerators), N_FEATURES), np.nan)
        for a, i in a_index.items():
            if a in specs:
                features[i] = spec_features(specs[a])
        flops = np.array([REFERENCE_FLOPS_PER_SAMPLE.get(meta[w][1], np.nan) for w in workloads])
        return cls(workloads, [meta[w][0] for w in workloads], flops, accelerators, log_sps,
                   features)

    def column(self, accelerator: str) -> int | None:
        """Column index of an accelerator, None when the table does not know it."""
        try:
            return self.accelerators.index(accelerator)
        except ValueError:
            return None

    def seen(self) -> npt.NDArray[np.bool_]:
        """Per accelerator: measured for at least one workload."""
        return np.asarray(np.isfinite(self.log_sps).any(axis=0))


def fit_ridge(table: ReferenceTable, *, alpha: float,
              exclude_column: int | None = None) -> FloatArray:
    """Per-workload ridge coefficients (intercept first) of log samples/s on spec features.

    Features are standardised over the accelerators with specs; the intercept is not
    penalised (``sklearn.linear_model.Ridge``, one multi-output fit per set of measured
    accelerators). ``exclude_column`` drops one accelerator (to test predicting it unseen).
    Workloads with fewer than 3 usable points get NaN coefficients. The result is a plain
    array: [intercept, coefficients, feature means, feature scales] per workload.
    """
    from sklearn.linear_model import Ridge  # fitting only: predictions need no scikit-learn

    x = table.features
    usable = np.asarray(np.isfinite(x).all(axis=1))
    mean = np.nanmean(x[usable], axis=0)
    std = np.nanstd(x[usable], axis=0)
    std[std == 0] = 1.0
    z = (x - mean) / std
    masks: npt.NDArray[np.bool_] = np.isfinite(table.log_sps) & usable[None, :]
    if exclude_column is not None:
        masks[:, exclude_column] = False
    same_mask: dict[bytes, list[int]] = defaultdict(list)
    for w, mask in enumerate(masks):
        if mask.sum() >= 3:
            same_mask[mask.tobytes()].append(w)
    coefs = np.full((len(table.workloads), N_FEATURES + 1), np.nan)
    for rows in same_mask.values():
        mask = masks[rows[0]]
        fitted = Ridge(alpha=alpha).fit(z[mask], table.log_sps[np.ix_(rows, mask)].T)
        coefs[rows, 0] = fitted.intercept_
        coefs[rows, 1:] = fitted.coef_
    return np.asarray(np.concatenate([coefs, np.tile(mean, (len(coefs), 1)),
                                      np.tile(std, (len(coefs), 1))], axis=1))


def ridge_predict(coefs: FloatArray, features: FloatArray) -> FloatArray:
    """Per-workload predicted log samples/s at one accelerator's spec features."""
    k = N_FEATURES + 1
    mean, std = coefs[:, k:k + N_FEATURES], coefs[:, k + N_FEATURES:]
    z = (features - mean) / std
    return np.asarray(coefs[:, 0] + (coefs[:, 1:k] * z).sum(axis=1))


_PRECISION_TOKENS = {"fp32": "fp32", "tf32": "fp32", "mixed": "mixed", "amp": "mixed",
                     "fp16": "mixed", "bf16": "mixed"}


def split_precision(name: str) -> tuple[str, str] | None:
    """(name without its precision token, ``fp32`` or ``mixed``); None without a token.

    ``resnet50/mixed`` -> (``resnet50``, ``mixed``); table keys ``generation/model/precision``
    keep their generation (``lambda_v1/resnet50/fp32`` -> (``lambda_v1/resnet50``, ``fp32``)),
    and a benchmark row's key ``bench/resnet50/fp32/unknown`` gives ``bench/resnet50``.
    """
    parts = [p for p in name.split("/") if p.lower() != "unknown"]
    for i in range(len(parts) - 1, -1, -1):
        token = _PRECISION_TOKENS.get(parts[i].lower())
        if token is not None:
            return "/".join(parts[:i] + parts[i + 1:]), token
    return None


def precision_twin(table: ReferenceTable, name: str, token: str,
                   ) -> tuple[list[int], list[tuple[int, int]]]:
    """Rows of the same model at the other precision than ``token`` (any generation), and
    every (row at ``token``, row at the other precision) pair of one model in the table."""
    rows: dict[str, dict[str, int]] = defaultdict(dict)
    twins = []
    for w, key in enumerate(table.workloads):
        split = split_precision(key)
        if split is None:
            continue
        rows[split[0]][split[1]] = w
        model = split[0].split("/", 1)[1] if "/" in split[0] else split[0]
        if split[1] != token and model == name:
            twins.append(w)
    other = "fp32" if token == "mixed" else "mixed"
    pairs = [(p[token], p[other]) for p in rows.values() if len(p) == 2]
    return twins, pairs
