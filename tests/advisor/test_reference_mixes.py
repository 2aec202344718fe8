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
    # Lambda's command lines, no adaptive softmax: 3 x (16 layers x 9,043,968 per token +
    # one softmax 2 x 267,735 x 512 = 274,160,640)
    ("transformerxlbase", 1_256_592_384),
    # 3 x (18 layers x 34,603,008 per token at 256 + 256 tokens: projections 12,582,912 +
    # 2,097,152, feed-forward 16,777,216, scores and context 3,145,728; + one softmax
    # 2 x 267,735 x 1,024 = 548,321,280)
    ("transformerxllarge", 3_513_526_272),
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


@pytest.mark.parametrize("model", ["ncf", "transformerxlbase", "transformerxllarge"])
def test_apex_o2_mixed_mix_runs_the_model_in_fp16(model: str) -> None:
    # apex AMP O2 casts the model: embeddings, layer norms and softmax compute in fp16; only
    # the per-sample loss is taken in fp32 (a few bytes a sample, as the references do)
    mix = _MIXES[f"{model}/mixed"]
    fp32 = sum(c.bytes_moved for c in mix.per_sample if c.dtype == "float32")
    assert fp32 < 0.01 * sum(c.bytes_moved for c in mix.per_sample)
    assert {c.dtype for c in mix.per_sample if c.flops > 0} == {"float16"}
    assert REFERENCE_RECIPES[model].apex_o2


def test_gnmt_mixed_mix_is_apex_o2_with_the_reference_loss_in_fp32() -> None:
    # --math fp16 is apex O2 (keep_batchnorm_fp32=False): embedding, LSTMs, attention and
    # classifier in fp16; only LabelSmoothing's log-softmax over the vocabulary writes fp32
    mix = _MIXES["gnmt/mixed"]
    assert {c.dtype for c in mix.per_sample if c.op_class is OpClass.EMBEDDING} == {"float16"}
    assert {c.dtype for c in mix.per_sample if c.flops > 0} == {"float16"}
    assert {c.op_class for c in mix.per_sample if c.dtype == "float32"} <= {
        OpClass.ELEMENTWISE, OpClass.REDUCTION}
    assert REFERENCE_RECIPES["gnmt"].apex_o2


@pytest.mark.parametrize("model", ["gnmt", "ncf", "transformerxlbase", "transformerxllarge"])
def test_apex_o2_optimizer_updates_fp32_master_weights_and_copies_them(model: str) -> None:
    # the fp32 step's update of the master weights, plus 12 bytes a parameter of copies
    # (fp16 gradients to fp32, fp32 weights back to fp16)
    def optimizer(key: str) -> float:
        return sum(c.bytes_moved for c in _MIXES[key].per_step
                   if c.op_class is OpClass.OPTIMIZER)

    recipe = REFERENCE_RECIPES[model]
    copies = 12 * recipe.parameters() / recipe.units_per_sample
    assert optimizer(f"{model}/mixed") == pytest.approx(optimizer(f"{model}/fp32") + copies)


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
