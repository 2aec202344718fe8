"""The throughput model: what a workload runs at on an accelerator it was never probed on.

``estimate`` holds the records (``Basis``, ``ThroughputEstimate``) and the model seam; the
model ``recommend`` uses is ``TransferModel`` (``transfer``: a scikit-learn estimator over
``_plain.PlainTransferModel`` and its private helpers: the factorization, kriging, tiers,
conformal calibration, the no-probe roofline prior), fitted on the shipped reference
measurements (``reference``) and cached on disk as its plain fitted state (``model_cache``);
``evaluation`` measures it against ``MedianRatioModel`` and ``NearestRatioModel``
(``baseline``), fitting the held-out models with scikit-learn's ``cross_validate``.

The names below are imported on first use (``import advisor.throughput`` never imports
scikit-learn; ``TransferModel`` does, a warm ``recommend`` does not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from advisor._lazy import lazy_exports

if TYPE_CHECKING:
    from advisor.throughput.baseline import MedianRatioModel, NearestRatioModel
    from advisor.throughput.estimate import (
        MIN_STEP_SECONDS,
        Basis,
        Measurement,
        ThroughputEstimate,
        ThroughputModel,
        WorkloadFeatures,
    )
    from advisor.throughput.evaluation import evaluate, evaluate_file, read_bench
    from advisor.throughput.model_cache import cached_transfer_model, fit_in_background
    from advisor.throughput.reference import (
        REFERENCE_CONV_FLOPS_FRACTION,
        REFERENCE_FLOPS_PER_SAMPLE,
        ReferenceRow,
        load_reference,
    )
    from advisor.throughput.transfer import TransferModel

__all__ = [
    "Basis",
    "MIN_STEP_SECONDS",
    "Measurement",
    "MedianRatioModel",
    "NearestRatioModel",
    "REFERENCE_CONV_FLOPS_FRACTION",
    "REFERENCE_FLOPS_PER_SAMPLE",
    "ReferenceRow",
    "ThroughputEstimate",
    "ThroughputModel",
    "TransferModel",
    "WorkloadFeatures",
    "cached_transfer_model",
    "evaluate",
    "evaluate_file",
    "fit_in_background",
    "load_reference",
    "read_bench",
]

_HOME = {
    "Basis": "estimate",
    "MIN_STEP_SECONDS": "estimate",
    "Measurement": "estimate",
    "MedianRatioModel": "baseline",
    "NearestRatioModel": "baseline",
    "REFERENCE_CONV_FLOPS_FRACTION": "reference",
    "REFERENCE_FLOPS_PER_SAMPLE": "reference",
    "ReferenceRow": "reference",
    "ThroughputEstimate": "estimate",
    "ThroughputModel": "estimate",
    "TransferModel": "transfer",
    "WorkloadFeatures": "estimate",
    "cached_transfer_model": "model_cache",
    "evaluate": "evaluation",
    "evaluate_file": "evaluation",
    "fit_in_background": "model_cache",
    "load_reference": "reference",
    "read_bench": "evaluation",
}

__getattr__, __dir__ = lazy_exports("advisor.throughput", _HOME, globals(), __all__)
