"""Operator profile: classes, dtypes and FLOPs of one fake training step."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from advisor.profiling.op_profile import OpClass, OpCost, OpMix, classify_op, trace_op_mix
from advisor.spec import Precision
from probes.workload import WorkloadRecipe

pytest.importorskip("torch")

# A tiny conv net and a tiny transformer-ish block, as entrypoints the tracer builds.
_NETS = textwrap.dedent('''
    import torch
    from torch import nn

    def conv():
        model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.Flatten(),
                              nn.Linear(256, 10, bias=False))
        def make_batch(b, device):
            return torch.randn(b, 3, 8, 8, device=device), torch.randint(0, 10, (b,), device=device)
        def loss_fn(net, batch):
            return nn.functional.cross_entropy(net(batch[0]), batch[1])
        return model, make_batch, loss_fn

    def normed():
        model = nn.Sequential(nn.Linear(16, 32, bias=False), nn.LayerNorm(32), nn.Linear(32, 4))
        def make_batch(b, device):
            return torch.randn(b, 16, device=device), torch.randint(0, 4, (b,), device=device)
        def loss_fn(net, batch):
            return nn.functional.cross_entropy(net(batch[0]), batch[1])
        return model, make_batch, loss_fn

    class _LastStep(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(8, 16, batch_first=True)
            self.head = nn.Linear(16, 4, bias=False)
        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    def batchnormed():
        model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4),
                              nn.Flatten(), nn.Linear(256, 10, bias=False))
        def make_batch(b, device):
            return torch.randn(b, 3, 8, 8, device=device), torch.randint(0, 10, (b,), device=device)
        def loss_fn(net, batch):
            return nn.functional.cross_entropy(net(batch[0]), batch[1])
        return model, make_batch, loss_fn

    def dropped():
        model = nn.Sequential(nn.Linear(16, 32, bias=False), nn.Dropout(0.5),
                              nn.Linear(32, 4, bias=False))
        def make_batch(b, device):
            return torch.randn(b, 16, device=device), torch.randint(0, 4, (b,), device=device)
        def loss_fn(net, batch):
            return nn.functional.cross_entropy(net(batch[0]), batch[1])
        return model, make_batch, loss_fn

    def lstm(steps=10):
        def make_batch(b, device):
            return torch.randn(b, steps, 8, device=device), torch.randint(0, 4, (b,), device=device)
        def loss_fn(net, batch):
            return nn.functional.cross_entropy(net(batch[0]), batch[1])
        return _LastStep(), make_batch, loss_fn
''')


def _recipe(tmp_path: Path, name: str, **options: object) -> WorkloadRecipe:
    module = tmp_path / "tiny_nets_for_ops.py"
    module.write_text(_NETS)
    return WorkloadRecipe(builtin=None, entrypoint=f"tiny_nets_for_ops:{name}",
                          base_dir=str(tmp_path), options=options)


def _flops(mix: OpMix, op_class: OpClass, dtype: str | None = None) -> float:
    return sum(c.flops for c in mix.per_sample
               if c.op_class is op_class and (dtype is None or c.dtype == dtype))


@pytest.mark.parametrize(("name", "expected"), [
    ("aten::mm", OpClass.MATMUL),
    ("aten::addmm", OpClass.MATMUL),
    ("aten::convolution_backward", OpClass.CONVOLUTION),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", OpClass.ATTENTION),
    ("aten::native_layer_norm", OpClass.NORMALIZATION),
    ("aten::native_batch_norm_backward", OpClass.NORMALIZATION),
    ("aten::_log_softmax", OpClass.REDUCTION),
    ("aten::max_pool2d_with_indices", OpClass.REDUCTION),  # pooling: a windowed reduction
    ("aten::embedding_dense_backward", OpClass.EMBEDDING),
    ("aten::gelu", OpClass.ELEMENTWISE),
    ("aten::relu_", OpClass.ELEMENTWISE),
    ("aten::mkldnn_rnn_layer", OpClass.MATMUL),  # a fused LSTM/GRU layer: its gate matmuls
    ("aten::_cudnn_rnn_backward", OpClass.MATMUL),
    ("aten::lstm", OpClass.MATMUL),  # the outermost operator a GPU profile sees
    ("aten::_thnn_fused_lstm_cell", OpClass.ELEMENTWISE),  # the gates' arithmetic on CUDA
    ("aten::group_norm", OpClass.NORMALIZATION),
    ("aten::_to_copy", OpClass.OTHER),  # autocast's casts
    ("aten::empty.memory_format", None),  # allocation launches no kernel
])
def test_classify_op(name: str, expected: OpClass | None) -> None:
    assert classify_op(name) is expected


def test_conv_net_flops_equal_hand_count(tmp_path: Path) -> None:
    mix = trace_op_mix(_recipe(tmp_path, "conv"), Precision.FP32)
    conv_forward = 2 * 4 * 3 * 3 * 3 * 8 * 8  # 2 x C_out x C_in x k x k x H x W
    linear_forward = 2 * 256 * 10
    # Backward: the conv's input needs no gradient (weight gradient only); the linear
    # layer computes input and weight gradients.
    assert _flops(mix, OpClass.CONVOLUTION) == pytest.approx(2 * conv_forward)
    assert _flops(mix, OpClass.MATMUL) == pytest.approx(3 * linear_forward)
    assert all(c.dtype == "float32" for c in mix.per_sample)


def test_lstm_layer_is_matmul_work_step_by_step(tmp_path: Path) -> None:
    """A fused LSTM layer (one operator on the CPU, as under cuDNN) counts its gate matmuls,
    forward and backward, and launches kernels per time step, as cuDNN runs it."""
    mixes = {steps: trace_op_mix(_recipe(tmp_path, "lstm", steps=steps), Precision.FP32)
             for steps in (10, 20)}
    gates = 2 * (4 * 16 * 8 + 4 * 16 * 16)  # per token: input and hidden times the 4 gates
    head = 2 * 16 * 4
    for steps, mix in mixes.items():
        # backward is twice forward for the layer; the head's input gradient and weight
        # gradient make its backward twice its forward too
        assert _flops(mix, OpClass.MATMUL) == pytest.approx(3 * steps * gates + 3 * head)

    def kernels(mix: OpMix) -> float:
        return sum(c.kernels for c in mix.per_step if c.op_class is OpClass.MATMUL)

    # forward 2T + 1 and backward 2T + 2 kernels per layer: 10 more steps are 40 more kernels
    assert kernels(mixes[20]) - kernels(mixes[10]) == pytest.approx(40)


def test_dropout_is_cuda_s_fused_kernel(tmp_path: Path) -> None:
    """Dropout traced as CUDA runs it: one kernel forward (input read, output and a one-byte
    mask written) and one backward (gradient and mask read, gradient written), not the CPU's
    bernoulli_, div_ and mul with a noise tensor of the input's dtype."""
    mix = trace_op_mix(_recipe(tmp_path, "dropped"), Precision.FP32)
    width = 32  # dropped features per sample, fp32
    forward = width * 4 + width * 4 + width * 1
    backward = width * 4 + width * 1 + width * 4
    elementwise = sum(c.bytes_moved for c in mix.per_sample if c.op_class is OpClass.ELEMENTWISE)
    assert elementwise == pytest.approx(forward + backward)
    kernels = sum(c.kernels for c in mix.per_step if c.op_class is OpClass.ELEMENTWISE)
    assert kernels == 2


def test_training_batch_norm_reads_its_activations_twice(tmp_path: Path) -> None:
    """Batch norm traced as CUDA trains it, in two passes: forward reads the input for the
    statistics, then reads it again and writes the output (3 activations, not 2); backward
    reads the output gradient and the input for the reductions, then both again and writes
    the input gradient (5, not 3)."""
    mix = trace_op_mix(_recipe(tmp_path, "batchnormed"), Precision.FP32)
    activations = 4 * 8 * 8 * 4  # channels x H x W, fp32 bytes, per sample
    normalization = sum(c.bytes_moved for c in mix.per_sample
                        if c.op_class is OpClass.NORMALIZATION)
    assert normalization == pytest.approx((3 + 5) * activations)


def test_only_training_batch_norm_is_two_pass() -> None:
    import torch

    from advisor.profiling._torch_counting import reread_tensors

    x, stats = torch.ones(2, 4, 3, 3), torch.ones(4)
    forward = (x, stats, stats, stats, stats)
    assert reread_tensors("aten::native_batch_norm", (*forward, True, 0.1, 1e-5), {}) == [x]
    assert reread_tensors("aten::native_batch_norm", (*forward, False, 0.1, 1e-5), {}) == []
    grad = torch.ones(2, 4, 3, 3)
    backward = (grad, x, stats, stats, stats, stats, stats, True, 1e-5, [True] * 3)
    assert reread_tensors("aten::native_batch_norm_backward.default", backward, {}) == [grad, x]
    assert reread_tensors("aten::native_layer_norm", (x, [3], stats, stats, 1e-5), {}) == []


def test_mlp_flops_equal_hand_count() -> None:
    recipe = WorkloadRecipe(builtin="mlp", entrypoint=None,
                            options={"input_dim": 8, "hidden": 16, "layers": 1,
                                     "num_classes": 4})
    mix = trace_op_mix(recipe, Precision.FP32)
    first, head = 2 * 8 * 16, 2 * 16 * 4
    assert _flops(mix, OpClass.MATMUL) == pytest.approx(2 * first + 3 * head)


def test_optimizer_work_is_per_step(tmp_path: Path) -> None:
    mix = trace_op_mix(_recipe(tmp_path, "conv"), Precision.FP32)
    weights = 4 * 3 * 3 * 3 + 256 * 10
    optimizer = [c for c in mix.per_step if c.op_class is OpClass.OPTIMIZER]
    assert optimizer and sum(c.bytes_moved for c in optimizer) > 4 * 4 * weights
    assert not [c for c in mix.per_sample if c.op_class is OpClass.OPTIMIZER]


def test_bf16_autocast_moves_matmuls_to_bf16_and_keeps_norms_fp32(tmp_path: Path) -> None:
    mix = trace_op_mix(_recipe(tmp_path, "normed"), Precision.BF16)
    total = _flops(mix, OpClass.MATMUL)
    assert total > 0
    assert _flops(mix, OpClass.MATMUL, "bfloat16") == pytest.approx(total)
    norms = {c.dtype for c in mix.per_sample if c.op_class is OpClass.NORMALIZATION}
    assert norms == {"float32"}


def test_at_batch_shares_per_step_work_and_round_trips_json() -> None:
    mix = OpMix(per_sample=(OpCost(OpClass.MATMUL, "float32", 10.0, 4.0),),
                per_step=(OpCost(OpClass.OPTIMIZER, "float32", 0.0, 8.0, 2.0),))
    costs = {c.op_class: c for c in mix.at_batch(4)}
    assert costs[OpClass.OPTIMIZER].bytes_moved == 2.0
    assert costs[OpClass.MATMUL].flops == 10.0
    assert OpMix.from_dict(mix.to_dict()) == mix
