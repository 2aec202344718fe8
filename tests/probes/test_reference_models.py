"""The reference models rebuilt for their operator mixes: GNMT v2, Transformer-XL, NCF."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from probes.errors import ProbeError
from probes.models import ModelOptionError, gnmt, ncf, ssd, transformer_xl
from probes.workload import WorkloadRecipe, build_workload


def _params(builder: Any, **options: Any) -> int:
    with torch.device("meta"):
        built = builder(**options)
    return sum(p.numel() for p in built.model.parameters())


@pytest.mark.parametrize(("builder", "options", "expected"), [
    # GNMT v2 of DeepLearningExamples: "a total of 160,671,297 trainable parameters"
    # (MLBench's GNMT, the same model, 2020-10-02 blog post)
    (gnmt.build, {}, 160_671_297),
    # Transformer-XL wt103_base: 191,950,298 (Global-QSGD paper, Table 3, TransformerXL on
    # WikiText-103, the DeepLearningExamples model)
    (transformer_xl.build, {}, 191_950_298),
    # wt103_large by hand from the reference's modules: adaptive embedding 36,924,592 +
    # projections 1,392,640 (+ the head's own 1,048,576), bias 267,735, clusters 3,075,
    # 18 layers of 13,640,704, biases 2,048
    (transformer_xl.build, transformer_xl.LARGE, 285_167_482),
    # as Lambda ran them, no adaptive softmax: base without its 3 cluster logits (1,539);
    # large 267,735 x 1,024 + 267,735 + 18 x 13,640,704 + 2,048
    (transformer_xl.build, {"adaptive": False}, 191_948_759),
    (transformer_xl.build, {**transformer_xl.LARGE, "div_val": 1, "adaptive": False},
     519_963_095),
    # NCF (NeuMF) on ML-20M: embeddings 165,237 x (64 + 128) + MLP 106,944 + 129 ("31.8M")
    (ncf.build, {}, 31_832_577),
    # SSD300 v1.1 with its ResNet-50 backbone: 22,894,902 (the DeepLearningExamples model's
    # summary in yannqi/SSD-for-pytorch's README: "22894902 parameters")
    (ssd.build, {}, 22_894_902),
])
def test_parameter_count_matches_reference(builder: Any, options: dict[str, Any],
                                           expected: int) -> None:
    assert _params(builder, **options) == expected


_TINY = [
    ("probes.models.gnmt:build", {"vocab": 50, "hidden": 16, "seq_len": 5}),
    # base-like (one table) and large-like (div_val 4, projections) adaptive softmax
    ("probes.models.transformer_xl:build", {"layers": 2, "d_model": 16, "heads": 2,
                                            "d_head": 8, "d_inner": 32, "tgt_len": 6,
                                            "mem_len": 4}),
    ("probes.models.transformer_xl:build", {"layers": 2, "d_model": 64, "heads": 2,
                                            "d_head": 8, "d_inner": 32, "tgt_len": 6,
                                            "mem_len": 4, "div_val": 4}),
    # one softmax over the vocabulary (no --adaptive, as Lambda's runs)
    ("probes.models.transformer_xl:build", {"layers": 2, "d_model": 16, "heads": 2,
                                            "d_head": 8, "d_inner": 32, "tgt_len": 6,
                                            "mem_len": 4, "vocab": 300, "adaptive": False}),
    ("probes.models.ncf:build", {"users": 10, "items": 7, "factors": 4, "mlp_width": 16}),
    ("probes.models.ssd:build", {"num_classes": 3}),  # the architecture is fixed at 300 px
]


@pytest.mark.parametrize(("entrypoint", "options"), _TINY)
def test_tiny_model_trains_one_step_through_its_entrypoint(entrypoint: str,
                                                           options: dict[str, Any]) -> None:
    torch.manual_seed(0)
    built = build_workload(WorkloadRecipe(builtin=None, entrypoint=entrypoint,
                                          options=options))
    # 8 x 6 tokens: every adaptive-softmax cluster gets at least one; SSD's 300 px images are
    # seconds each on a CPU, so two of them
    loss = built.loss_fn(built.model, built.make_batch(2 if "ssd" in entrypoint else 8, "cpu"))
    loss.backward()
    grads = [p.grad for p in built.model.parameters()]
    assert loss.ndim == 0 and torch.isfinite(loss)
    trained = sum(g is not None and bool(g.abs().sum() > 0) for g in grads)
    # SSD's heads on the smallest maps get a gradient only where a box there is positive
    # or among the hardest negatives, which a batch of random images may not have
    assert trained >= (0.9 if "ssd" in entrypoint else 1.0) * len(grads)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_step_lstm_computes_and_differentiates_what_nn_lstm_does(bidirectional: bool) -> None:
    torch.manual_seed(0)
    reference = nn.LSTM(6, 5, bidirectional=bidirectional)
    mine = gnmt.StepLSTM(6, 5, bidirectional=bidirectional)
    mine.load_state_dict(reference.state_dict())
    x = torch.randn(4, 3, 6, requires_grad=True)
    y = x.detach().clone().requires_grad_()
    weights = torch.randn(4, 3, 10 if bidirectional else 5)
    ours_out, theirs_out = mine(x), reference(y)[0]
    torch.testing.assert_close(ours_out, theirs_out)
    (ours_out * weights).sum().backward()
    (theirs_out * weights).sum().backward()
    torch.testing.assert_close(x.grad, y.grad)
    for (name, ours), (_, theirs) in zip(mine.named_parameters(), reference.named_parameters(),
                                         strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad, msg=name)


def test_step_lstm_runs_cudnn_s_kernels_on_fake_tensors() -> None:
    """Traced as CUDA (fake tensors), a layer of T steps runs per step one recurrent product
    and one fused gate kernel forward, one fused gate kernel and (but the first step) one
    accumulating recurrent product backward; once: the input product, the input and both
    weight gradients and the bias sum (hand count for T = 5)."""
    from collections import Counter

    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: Counter[str] = Counter()

    class Count(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen[func.name().removeprefix("aten::")] += 1
            return func(*args, **(kwargs or {}))

    with FakeTensorMode(allow_non_fake_inputs=True):
        layer = gnmt.StepLSTM(6, 5)
        x = torch.randn(5, 3, 6)
        with Count():
            layer(x).sum().backward()
    steps = 5
    assert seen["_thnn_fused_lstm_cell"] == steps
    assert seen["_thnn_fused_lstm_cell_backward_impl"] == steps
    assert seen["mm"] == 1 + steps + 3  # input product, recurrent products, dx, dW_ih, dW_hh
    assert seen["addmm"] == steps - 1  # recurrent gradient accumulated into the output's
    assert seen["sigmoid"] == seen["tanh"] == seen["mul.Tensor"] == 0  # no unfused gates
    assert seen["add.Tensor"] == 0  # no per-step weight-gradient accumulation


@pytest.mark.parametrize("builder", [ncf.build, transformer_xl.build])
def test_fp16_model_casts_every_parameter(builder: Any) -> None:
    # apex AMP O2's model: embeddings and layer norms in fp16 too
    with torch.device("meta"):
        built = builder(fp16_model=True)
    assert {p.dtype for p in built.model.parameters()} == {torch.float16}


def test_ssd300_has_8732_default_boxes() -> None:
    assert ssd.default_boxes(300) == 38 * 38 * 4 + 19 * 19 * 6 + 10 * 10 * 6 + 5 * 5 * 6 + 9 * 4 + 4


def test_zipf_cluster_shares_sum_to_one_and_fall_with_rarity() -> None:
    shares = transformer_xl.zipf_cluster_shares(267735, (19997, 39997, 199997))
    assert sum(shares) == pytest.approx(1.0)
    assert shares[0] == pytest.approx(0.80, abs=0.01)  # the 20k most frequent words


@pytest.mark.parametrize(("builder", "options", "problem"), [
    (gnmt.build, {"hiden": 8}, ModelOptionError),  # unknown name
    (ncf.build, {"factors": 0}, ModelOptionError),
    (transformer_xl.build, {"d_model": 20, "div_val": 4}, ProbeError),  # 20 % 64
    (transformer_xl.build, {"div_val": 4, "adaptive": False}, ProbeError),  # needs clusters
])
def test_bad_option_is_named(builder: Any, options: dict[str, Any],
                             problem: type[Exception]) -> None:
    with pytest.raises(problem):
        builder(**options)
