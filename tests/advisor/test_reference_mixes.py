"""The shipped reference operator mixes: every reference recipe traced, FLOPs per unit as
counted by hand, the LSTM's work counted as cuDNN runs it, and the per-token division."""

from __future__ import annotations

import pytest

from advisor.profiling.op_profile import OpClass, OpCost, OpMix, reference_op_mixes
from advisor.profiling.reference_mixes import REFERENCE_RECIPES, per_unit
from advisor.throughput.reference import load_reference

_MIXES = reference_op_mixes()


def test_every_reference_recipe_is_shipped_at_both_precisions() -> None:
    assert set(_MIXES) == {f"{m}/{p}" for m in REFERENCE_RECIPES for p in ("fp32", "mixed")}


def test_every_recipe_names_reference_rows() -> None:
    assert set(REFERENCE_RECIPES) <= {row.model for row in load_reference()}


@pytest.mark.parametrize(("model", "flops_per_unit"), [
    # 3 x forward: 25 source tokens x (LSTMs 92,274,688 + keys 2,097,152) + 25 target
    # tokens x (LSTMs 92,274,688 + query 2,097,152 + scores and context 102,400 + classifier
    # 66,191,360), over 50 tokens; the first step's recurrent input gradient is not computed
    ("gnmt", 382_556_160),
    # 3 x (16 layers x 9,043,968 per token + adaptive softmax 43,281,500 at the Zipf shares)
    ("transformerxlbase", 563_955_000),
    # 3 x (18 x 36,175,872 + head 43,057,152 + embedding projections 1,725,700 + tails
    # 3,157,000)
    ("transformerxllarge", 2_097_317_000),
    # 3 x 2 x (256 x 256 + 256 x 128 + 128 x 64 + 128)
    ("ncf", 639_744),
    # 3 x 2 x 20.213 G multiply-adds forward (the DeepLearningExamples SSD300's summary in
    # yannqi/SSD-for-pytorch's README: "Model FLOPs: 20.213G"; traced 20.08 G)
    ("ssd", 3 * 2 * 20.213e9),
])
@pytest.mark.parametrize("precision", ["fp32", "mixed"])
def test_flops_per_unit_match_the_hand_count(model: str, flops_per_unit: float,
                                             precision: str) -> None:
    assert _MIXES[f"{model}/{precision}"].flops_per_sample == pytest.approx(
        flops_per_unit, rel=0.01)


@pytest.mark.parametrize(("precision", "dtype"), [("fp32", "float32"), ("mixed", "float16")])
def test_gnmt_lstm_work_is_matmul_run_step_by_step(precision: str, dtype: str) -> None:
    mix = _MIXES[f"gnmt/{precision}"]
    matmul = [c for c in mix.per_sample if c.op_class is OpClass.MATMUL]
    assert [c.dtype for c in matmul] == [dtype]
    assert mix.flops_fraction(OpClass.MATMUL) > 0.99
    # per sentence pair: 9 LSTM directions x 25 steps, each step one recurrent product in
    # the forward and one in the backward but the first (its weight gradient is one product
    # over all steps, as cuDNN's backward-weights call computes it), on top of each layer's
    # input and weight-gradient products
    kernels = sum(c.kernels for c in mix.per_step if c.op_class is OpClass.MATMUL)
    assert kernels * REFERENCE_RECIPES["gnmt"].units_per_sample >= 9 * (2 * 25 - 1)


def test_transformer_xl_attention_runs_as_batched_products_not_a_fused_kernel() -> None:
    mix = _MIXES["transformerxlbase/mixed"]
    assert mix.flops_fraction(OpClass.ATTENTION) == 0.0
    assert {c.op_class for c in mix.per_sample} >= {OpClass.MATMUL, OpClass.REDUCTION,
                                                    OpClass.NORMALIZATION, OpClass.EMBEDDING}


def test_ncf_writes_the_dense_embedding_gradient_every_step() -> None:
    # embedding backward writes a gradient the size of the tables (165,237 x 192 fp32),
    # whatever the batch: a per-step cost, next to the optimizer's update of them
    steps = {c.op_class: c.bytes_moved for c in _MIXES["ncf/fp32"].per_step}
    assert steps[OpClass.EMBEDDING] >= 165_237 * 192 * 4
    assert steps[OpClass.OPTIMIZER] > steps[OpClass.EMBEDDING]


def test_per_unit_divides_both_parts() -> None:
    mix = OpMix((OpCost(OpClass.MATMUL, "float32", 100.0, 50.0, 0.0),),
                (OpCost(OpClass.OPTIMIZER, "float32", 0.0, 400.0, 8.0),))
    token = per_unit(mix, 4)
    assert token.per_sample == (OpCost(OpClass.MATMUL, "float32", 25.0, 12.5, 0.0),)
    assert token.per_step == (OpCost(OpClass.OPTIMIZER, "float32", 0.0, 100.0, 2.0),)
    # at a batch of b sequences, the work per token is the sequence's at b over 4
    assert token.at_batch(2) == tuple(
        OpCost(c.op_class, c.dtype, c.flops / 4, c.bytes_moved / 4, c.kernels / 4)
        for c in mix.at_batch(2))
    assert per_unit(mix, 1) is mix
