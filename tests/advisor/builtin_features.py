"""The built-in examples' workload features (``examples/resnet50.yaml``, ``examples/bert.yaml``,
...): FLOPs, convolution share and traced operator mix, stored in
``tests/data/builtin_features.json`` so throughput tests need no trace
(``python tests/advisor/test_family_order_throughput.py`` writes it again)."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from advisor.profiling import OpMix
from advisor.spec import Precision
from advisor.throughput import TransferModel, WorkloadFeatures, load_reference
from advisor.throughput.published import load_published
from pricing import load_accelerators

__all__ = ["BERT", "FEATURES_JSON", "RESNET", "anchored_model", "builtin_features"]

FEATURES_JSON = Path(__file__).parent.parent / "data" / "builtin_features.json"


def builtin_features() -> dict[str, WorkloadFeatures]:
    """``example/precision`` (``resnet50/bf16``) -> the example's features at that precision."""
    data = json.loads(FEATURES_JSON.read_text())
    return {key: WorkloadFeatures(
        precision=Precision(item["precision"]), flops_per_sample=item["flops_per_sample"],
        conv_flops_fraction=item["conv_flops_fraction"], params=item["params"],
        name=Path(item["spec"]).stem, op_mix=OpMix.from_dict(item["op_mix"]),
        batch_size_per_device=item["batch_size_per_device"]) for key, item in data.items()}


RESNET, BERT = builtin_features()["resnet50/bf16"], builtin_features()["bert/bf16"]


@functools.cache
def anchored_model() -> TransferModel:
    """The default model fitted on the reference rows and anchored to every published row,
    fitted once per test process (tests that re-anchor it do so on a ``copy.copy``)."""
    return TransferModel().fit(load_reference(), accelerators=load_accelerators(),
                               published=load_published())
