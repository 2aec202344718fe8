"""The shipped operator mixes of the reference models (``advisor/data/reference_op_mix.json``):
how each is traced, and the function that traces them all.

Each reference model of ``advisor/data/reference_throughput.csv`` with a mix is rebuilt in
plain torch with the configuration its benchmark ran (``ReferenceRecipe.source`` names it;
``advisor/data/reference_op_mix.md`` gives the parameter and FLOPs checks) and traced by
``trace_op_mix`` at both reference precisions. A mix counts the unit of the model's
reference rows: where a row counts tokens while its batch counts sequences (GNMT,
Transformer-XL), the traced mix of one sequence is divided by the tokens in it, both parts:
evaluated at the batch in sequences (``OpMix.at_batch``) it gives the work of one token.

The configurations are those Lambda's benchmark ran (``lambdal/deeplearning-benchmark``'s
``pytorch/scripts/config_v*`` command lines on the ``lambda/benchmark`` branch of
``LambdaLabsML/DeepLearningExamples``), not the reference's own defaults where they differ.
Where a reference's mixed precision is apex AMP O2 (``ReferenceRecipe.apex_o2``) the mixed
mix is the step of the model cast to fp16 with no autocast, and the optimizer's part is the
fp32 one plus O2's two copies between the fp16 model and its fp32 master weights.

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
    OpClass,
    OpCost,
    OpMix,
    trace_op_mix,
)
from advisor.spec import Precision
from probes import WorkloadRecipe, build_workload

__all__ = ["REFERENCE_RECIPES", "ReferenceRecipe", "per_unit", "write_reference_op_mixes"]


@dataclass(frozen=True)
class ReferenceRecipe:
    """How one reference model is built for tracing: a ``builtin`` name or an ``entrypoint``
    (``module:function``), with ``options``; ``units_per_sample`` is how many of its rows'
    units (tokens) one traced sample (a sequence, a sentence pair) holds; ``source`` names
    the reference implementation and configuration the options follow; ``apex_o2``: the
    reference's mixed precision is apex AMP O2 (the model cast to fp16, embeddings, layer
    norms and softmax included, fp32 master weights in the optimizer), traced through the
    entrypoint's ``fp16_model`` option, not autocast."""

    source: str
    options: Mapping[str, Any] = field(default_factory=dict)
    builtin: str | None = None
    entrypoint: str | None = None
    units_per_sample: int = 1
    apex_o2: bool = False

    def recipe(self, precision: Precision) -> WorkloadRecipe:
        """The workload recipe traced at ``precision``."""
        return WorkloadRecipe(builtin=self.builtin, entrypoint=self.entrypoint,
                              options=dict(self.options), batch_size=TRACE_BATCHES[0],
                              precision=precision)

    def mixed_mix(self) -> OpMix:
        """The mix of the reference's mixed-precision step: fp16 autocast, or apex O2's
        (``_apex_o2_mix``)."""
        if not self.apex_o2:
            return trace_op_mix(self.recipe(Precision.FP16), Precision.FP16)
        fp16_model = WorkloadRecipe(builtin=self.builtin, entrypoint=self.entrypoint,
                                    options={**self.options, "fp16_model": True},
                                    batch_size=TRACE_BATCHES[0], precision=Precision.FP32)
        return _apex_o2_mix(trace_op_mix(fp16_model, Precision.FP32),
                            trace_op_mix(self.recipe(Precision.FP32), Precision.FP32),
                            self.parameters())

    def parameters(self) -> int:
        """The model's parameter count (built on the meta device: no memory)."""
        import torch

        with torch.device("meta"):
            built = build_workload(self.recipe(Precision.FP32))
        return sum(int(p.numel()) for p in built.model.parameters())


# apex AMP O2's step around the optimizer: the fp16 gradients copied (unscaled, checked for
# overflow) into fp32 master gradients, 2 + 4 bytes a parameter, and the updated fp32 master
# weights copied back into the fp16 model, 4 + 2; one multi-tensor kernel each
_O2_COPY_BYTES_PER_PARAMETER = 12
_O2_COPY_KERNELS = 2


def _apex_o2_mix(fp16_model: OpMix, fp32: OpMix, parameters: int) -> OpMix:
    """The step of an fp16 model trained with apex O2: ``fp16_model``'s forward and backward,
    the optimizer's update of the fp32 master weights as ``fp32`` traces it, and O2's copies
    between the two."""
    def optimizer(costs: tuple[OpCost, ...]) -> list[OpCost]:
        return [c for c in costs if c.op_class is OpClass.OPTIMIZER]

    others = [c for c in fp16_model.per_step if c.op_class is not OpClass.OPTIMIZER]
    copies = OpCost(OpClass.OPTIMIZER, "float32", 0.0,
                    float(_O2_COPY_BYTES_PER_PARAMETER * parameters), _O2_COPY_KERNELS)
    return OpMix(fp16_model.per_sample, (*others, *optimizer(fp32.per_step), copies))


_GNMT_TOKENS = 25  # tokens per sentence, each side (WMT16 En-De, sentences capped at 50)
# Transformer-XL as Lambda ran it: its command lines pass neither ``--adaptive`` nor
# ``--config_file`` (so none of the YAML's settings), hence one softmax over the 267,735 words
# and ``div_val`` 1; the large model with 256 target and 256 memory tokens (not the YAML's 384)
_TXL_BASE = {"adaptive": False}
_TXL_LARGE = {"layers": 18, "d_model": 1024, "heads": 16, "d_head": 64, "d_inner": 4096,
              "tgt_len": 256, "mem_len": 256, "div_val": 1, "dropout": 0.2,
              "attention_dropout": 0.2, "adaptive": False}

# The shipped reference models. BERT on SQuAD fine-tunes at 384 tokens with a per-token span
# head (two logits), close to the classification head's cost; ResNet-50 at 224 x 224 with
# 1000 classes. GNMT's rows count source plus target tokens (DeepLearningExamples' trainer
# logs tok/s as their sum), Transformer-XL's the target tokens of a segment. NCF's, GNMT's and
# Transformer-XL's mixed rows ran apex AMP O2 (NCF's ``--amp`` and Transformer-XL's ``--fp16``
# in the version Lambda ran, their default ``--apex_amp_opt_level`` O2; GNMT's ``--math fp16``,
# whose trainer calls ``amp.initialize(..., opt_level='O2', keep_batchnorm_fp32=False)``, and
# Lambda's GNMT logs print "Selected optimization level O2").
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
        "NVIDIA DeepLearningExamples PyTorch/Translation/GNMT (GNMT v2) defaults, mixed "
        "precision apex AMP O2 (--math fp16)",
        entrypoint="probes.models.gnmt:build", options={"seq_len": _GNMT_TOKENS},
        units_per_sample=2 * _GNMT_TOKENS, apex_o2=True),
    "ncf": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/Recommendation/NCF defaults (ML-20M), mixed "
        "precision apex AMP O2", entrypoint="probes.models.ncf:build", apex_o2=True),
    "ssd": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/Detection/SSD (SSD300 v1.1, ResNet-50 backbone)",
        entrypoint="probes.models.ssd:build"),
    "transformerxlbase": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL, Lambda's "
        "base command line (wt103_base.yaml's model, no adaptive softmax), apex AMP O2",
        entrypoint="probes.models.transformer_xl:build", options=_TXL_BASE,
        units_per_sample=192, apex_o2=True),
    "transformerxllarge": ReferenceRecipe(
        "NVIDIA DeepLearningExamples PyTorch/LanguageModeling/Transformer-XL, Lambda's "
        "large command line (wt103_large.yaml's layers, 256 + 256 tokens, no adaptive "
        "softmax), apex AMP O2", entrypoint="probes.models.transformer_xl:build",
        options=_TXL_LARGE, units_per_sample=256, apex_o2=True),
}

def per_unit(mix: OpMix, units: int) -> OpMix:
    """``mix`` of one sample divided by the ``units`` it holds, both parts (see the module
    docstring); ``mix`` itself when ``units`` is 1."""
    if units == 1:
        return mix

    def scaled(costs: tuple[OpCost, ...]) -> tuple[OpCost, ...]:
        return tuple(OpCost(c.op_class, c.dtype, c.flops / units, c.bytes_moved / units,
                            c.kernels / units) for c in costs)

    return OpMix(scaled(mix.per_sample), scaled(mix.per_step))


def write_reference_op_mixes(path: Path = REFERENCE_OP_MIX_JSON) -> None:
    """Trace every ``REFERENCE_RECIPES`` model at both reference precisions into ``path``;
    raises AdvisorError when one does not trace."""
    mixes = {}
    for model, recipe in sorted(REFERENCE_RECIPES.items()):
        traced = {"fp32": trace_op_mix(recipe.recipe(Precision.FP32), Precision.FP32),
                  "mixed": recipe.mixed_mix()}
        for key, mix in traced.items():
            mixes[f"{model}/{key}"] = per_unit(mix, recipe.units_per_sample).to_dict()
    path.write_text(json.dumps({"version": _CACHE_VERSION, "mixes": mixes}, indent=1) + "\n")


if __name__ == "__main__":
    write_reference_op_mixes()
