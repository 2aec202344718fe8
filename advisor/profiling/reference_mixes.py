"""The shipped operator mixes of the reference models (``advisor/data/reference_op_mix.json``):
how each is traced, and the function that traces them all.

Each reference model of ``advisor/data/reference_throughput.csv`` with a mix is rebuilt in
plain torch with the configuration its benchmark ran (``ReferenceRecipe.source`` names it;
``advisor/data/reference_op_mix.md`` gives the parameter and FLOPs checks) and traced by
``trace_op_mix`` at both reference precisions. A mix counts the unit of the model's
reference rows: where a row counts tokens while its batch counts sequences (GNMT,
Transformer-XL), the traced mix of one sequence is divided by the tokens in it, both parts:
evaluated at the batch in sequences (``OpMix.at_batch``) it gives the work of one token.

Run ``python -m advisor.profiling.reference_mixes`` after changing a reference model, a
built-in it uses or the tracer; it rewrites the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.profiling.op_profile import (
    _CACHE_VERSION,
    REFERENCE_OP_MIX_JSON,
    TRACE_BATCHES,
    OpCost,
    OpMix,
    trace_op_mix,
)
from advisor.spec import Precision
from probes import WorkloadRecipe

__all__ = ["REFERENCE_RECIPES", "ReferenceRecipe", "per_unit", "write_reference_op_mixes"]


@dataclass(frozen=True)
class ReferenceRecipe:
    """How one reference model is built for tracing: a ``builtin`` name or an ``entrypoint``
    (``module:function``), with ``options``; ``units_per_sample`` is how many of its rows'
    units (tokens) one traced sample (a sequence, a sentence pair) holds; ``source`` names
    the reference implementation and configuration the options follow."""

    source: str
    options: Mapping[str, Any] = field(default_factory=dict)
    builtin: str | None = None
    entrypoint: str | None = None
    units_per_sample: int = 1

    def recipe(self, precision: Precision) -> WorkloadRecipe:
        """The workload recipe traced at ``precision``."""
        return WorkloadRecipe(builtin=self.builtin, entrypoint=self.entrypoint,
                              options=dict(self.options), batch_size=TRACE_BATCHES[0],
                              precision=precision)


_GNMT_TOKENS = 25  # tokens per sentence, each side (WMT16 En-De, sentences capped at 50)
_TXL_LARGE = {"layers": 18, "d_model": 1024, "heads": 16, "d_head": 64, "d_inner": 4096,
              "tgt_len": 384, "mem_len": 384, "div_val": 4, "dropout": 0.2,
              "attention_dropout": 0.2}

# The shipped reference models. BERT on SQuAD fine-tunes at 384 tokens with a per-token span
# head (two logits), close to the classification head's cost; ResNet-50 at 224 x 224 with
# 1000 classes. GNMT's rows count source plus target tokens (DeepLearningExamples' trainer
# logs tok/s as their sum), Transformer-XL's the target tokens of a segment.
REFERENCE_RECIPES: dict[str, ReferenceRecipe] = {
    "resnet50": ReferenceRecipe(
        "torchvision ResNet-50 v1.5 (the built-in)", builtin="resnet50",
        options={"image_size": 224, "num_classes": 1000}),
    "bert_base_squad": ReferenceRecipe(
        "BERT-base (Devlin et al. 2019) fine-tuned on SQuAD at 384 tokens (the built-in)",
        builtin="bert", options={"hidden": 768, "layers": 12, "heads": 12, "ffn": 3072,
                                 "seq_len": 384, "task": "classification"}),
    "bert_large_squad": ReferenceRecipe(
        "BERT-large (Devlin et al. 2019) fine-tuned on SQuAD at 384 tokens (the built-in)",
        builtin="bert", options={"hidden": 1024, "layers": 24, "heads": 16, "ffn": 4096,
                                 "seq_len": 384, "task": "classification"}),
    "gnmt": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/Translation/GNMT (GNMT v2) defaults",
        entrypoint="probes.models.gnmt:build", options={"seq_len": _GNMT_TOKENS},
        units_per_sample=2 * _GNMT_TOKENS),
    "ncf": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/Recommendation/NCF defaults (ML-20M)",
        entrypoint="probes.models.ncf:build"),
    "ssd": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/Detection/SSD (SSD300 v1.1, ResNet-50 backbone)",
        entrypoint="probes.models.ssd:build"),
    "transformerxlbase": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL wt103_base.yaml",
        entrypoint="probes.models.transformer_xl:build", units_per_sample=192),
    "transformerxllarge": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL "
        "wt103_large.yaml", entrypoint="probes.models.transformer_xl:build",
        options=_TXL_LARGE, units_per_sample=384),
}
# Reference precision -> traced precision: "mixed" rows ran fp16 AMP.
_REFERENCE_PRECISIONS = {"fp32": Precision.FP32, "mixed": Precision.FP16}


def per_unit(mix: OpMix, units: int) -> OpMix:
    """``mix`` of one sample divided by the ``units`` it holds, both parts (see the module
    docstring); ``mix`` itself when ``units`` is 1."""
    if units == 1:
        return mix

    def scaled(costs: tuple[OpCost, ...]) -> tuple[OpCost, ...]:
        return tuple(OpCost(c.op_class, c.dtype, c.flops / units, c.bytes_moved / units,
                            c.kernels / units) for c in costs)

    return OpMix(scaled(mix.per_sample), scaled(mix.per_step))


def write_reference_op_mixes(path: Path = REFERENCE_OP_MIX_JSON,
                             models: Mapping[str, ReferenceRecipe] | None = None) -> None:
    """Trace every ``REFERENCE_RECIPES`` model (or ``models``) at both reference precisions
    into ``path``; raises AdvisorError when one does not trace."""
    mixes = {}
    for model, recipe in sorted((models or REFERENCE_RECIPES).items()):
        for key, precision in _REFERENCE_PRECISIONS.items():
            mix = trace_op_mix(recipe.recipe(precision), precision)
            mixes[f"{model}/{key}"] = per_unit(mix, recipe.units_per_sample).to_dict()
    path.write_text(json.dumps({"version": _CACHE_VERSION, "mixes": mixes}, indent=1) + "\n")


if __name__ == "__main__":
    write_reference_op_mixes()
