"""Memory from a traced step: hand-computed bytes, lines in the batch, precision, CUDA semantics."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.profiling.memory_trace import cuda_allocated_bytes, trace_peak_bytes
from advisor.spec import Precision
from probes.workload import WorkloadRecipe

MIB = 2**20
# 256 inputs -> 512 hidden (ReLU) -> 10 classes, cross-entropy.
TINY = {"input_dim": 256, "hidden": 512, "layers": 1, "num_classes": 10}
# Its parameter tensors as the CUDA allocator counts them: 512x256 weight, 512 bias, 10x512
# weight, 10 bias (40 bytes: one 512-byte block).
TINY_PARAMS = 512 * 256 * 4 + 512 * 4 + 10 * 512 * 4 + 512


def _recipe(**options: Any) -> WorkloadRecipe:
    return WorkloadRecipe(builtin="mlp", entrypoint=None, options=options or TINY)


@pytest.mark.parametrize(("nbytes", "allocated"), [
    (0, 0),                              # nothing asked, nothing allocated
    (1, 512),                            # the smallest block
    (513, 1024),                         # 512-byte multiples
    (MIB + 1, MIB + 512),                # 1-10 MiB: carved from 20 MiB segments, split
    (10 * MIB + 512, 10 * MIB + 512),    # own 12 MiB segment, 2 MiB - 512 left: split off
    (11 * MIB + MIB // 2, 12 * MIB),     # own 12 MiB segment, 0.5 MiB left: kept whole
])
def test_allocation_rounding_follows_the_caching_allocator(nbytes: int, allocated: int) -> None:
    assert cuda_allocated_bytes(nbytes) == allocated


def test_tiny_mlp_peak_equals_hand_computed_bytes() -> None:
    traced = trace_peak_bytes(_recipe(), Precision.FP32, batch_sizes=(4, 8))
    # At batch 4 the activations (a few KiB) are small next to the parameters, so the peak is
    # in AdamW's foreach step: weights, gradients, both moments and the sqrt(v) temporary,
    # each the parameters' size, plus the batch (4x256 fp32 inputs, 4 int64 labels: one
    # block) and the loss (one block).
    batch = 4 * 256 * 4 + 512
    assert dict(traced.traced)[4] == 5 * TINY_PARAMS + batch + 512
    assert traced.peak_bytes(4) == 5 * TINY_PARAMS + batch + 512


def test_the_steady_second_step_is_reported_with_adam_state() -> None:
    traced = trace_peak_bytes(_recipe(), Precision.FP32, batch_sizes=(2048, 4096))
    at_peak = dict(traced.at_peak)
    # Activations dominate at this batch; the peak is in the backward pass of the second step,
    # with the moments the first step allocated.
    assert at_peak["optimizer state"] == 2 * TINY_PARAMS
    assert at_peak["weights"] == TINY_PARAMS
    assert at_peak["forward"] > 4096 * 512 * 4  # at least the hidden layer's output


def test_peak_grows_linearly_with_batch() -> None:
    small = trace_peak_bytes(_recipe(), Precision.FP32, batch_sizes=(512, 1024))
    large = trace_peak_bytes(_recipe(), Precision.FP32, batch_sizes=(2048, 4096))
    # sizes are 512-byte multiples at these batches: the lines from 512 and 1024 are exact
    assert small.peak_bytes(2048) == dict(large.traced)[2048]
    assert small.peak_bytes(4096) == dict(large.traced)[4096]
    assert small.peak_bytes(4096) - small.peak_bytes(2048) == \
        2 * (small.peak_bytes(2048) - small.peak_bytes(1024))


def test_bf16_autocast_changes_activation_bytes() -> None:
    fp32 = trace_peak_bytes(_recipe(), Precision.FP32, batch_sizes=(2048, 4096))
    bf16 = trace_peak_bytes(_recipe(), Precision.BF16, batch_sizes=(2048, 4096))
    slope = {name: (dict(t.traced)[4096] - dict(t.traced)[2048]) / 2048
             for name, t in (("fp32", fp32), ("bf16", bf16))}
    assert 0.4 < slope["bf16"] / slope["fp32"] < 0.9  # bf16 copies, fp32 loss
    assert bf16.autocast == "cuda" and fp32.autocast == "none"


def test_cpu_trace_uses_cpu_semantics() -> None:
    traced = trace_peak_bytes(_recipe(), Precision.BF16, batch_sizes=(4, 8), device="cpu")
    assert traced.autocast == "cpu"
    # No allocator rounding, and AdamW's per-tensor loop: at the peak, weights, gradients and
    # both moments, plus sqrt(v) and sqrt(v) / bias correction of the largest parameter; the
    # batch (4x256 fp32, 4 int64), the fp32 loss and Adam's four fp32 step counters.
    params = 512 * 256 * 4 + 512 * 4 + 10 * 512 * 4 + 10 * 4
    assert traced.peak_bytes(4) == 4 * params + 2 * 512 * 256 * 4 + (4 * 256 * 4 + 4 * 8) + 4 + 16


def test_a_step_that_changes_with_the_batch_gets_a_line_through_the_peaks(
        tmp_path: Path) -> None:
    (tmp_path / "batch_dependent_mod.py").write_text(textwrap.dedent("""
        import torch
        def build():
            net = torch.nn.Linear(64, 64)
            def loss(model, x):
                y = model(x)
                if x.shape[0] > 4:  # one more operator at the larger batch
                    y = y.relu()
                return y.pow(2).mean()
            return net, lambda n, device: torch.randn(n, 64, device=device), loss
    """))
    recipe = WorkloadRecipe(builtin=None, entrypoint="batch_dependent_mod:build",
                            base_dir=str(tmp_path))
    try:
        traced = trace_peak_bytes(recipe, Precision.FP32, batch_sizes=(4, 8))
    finally:
        sys.modules.pop("batch_dependent_mod", None)
    assert len(traced.lines) == 1 and "different operators" in traced.notes[0]
    assert [traced.peak_bytes(b) for b in (4, 8)] == [p for _, p in traced.traced]


def test_a_model_initialised_with_trunc_normal_traces(tmp_path: Path) -> None:
    """torch's trunc_normal_ resamples until every value lies in its bounds, a loop on values
    fake tensors do not have (ViT, Swin and ConvNeXt initialise with it)."""
    (tmp_path / "trunc_init_mod.py").write_text(textwrap.dedent("""
        import torch
        def build():
            net = torch.nn.Linear(64, 64)
            torch.nn.init.trunc_normal_(net.weight, std=0.02)
            loss = lambda model, x: model(x).pow(2).mean()
            return net, lambda n, device: torch.randn(n, 64, device=device), loss
    """))
    recipe = WorkloadRecipe(builtin=None, entrypoint="trunc_init_mod:build",
                            base_dir=str(tmp_path))
    try:
        traced = trace_peak_bytes(recipe, Precision.FP32, batch_sizes=(4, 8))
        import torch

        real = torch.empty(3, 3)
        torch.nn.init.trunc_normal_(real, std=1.0, a=-0.5, b=0.5)  # the real one is back
    finally:
        sys.modules.pop("trunc_init_mod", None)
    weights = (64 * 64 + 64) * 4
    assert traced.peak_bytes(8) > 4 * weights  # weights, gradients and Adam's two moments
    assert float(real.abs().max()) <= 0.5


@pytest.mark.parametrize("batch_sizes", [(4, 4), (0, 4)])
def test_batch_sizes_must_be_two_positive_numbers(batch_sizes: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="batch_sizes"):
        trace_peak_bytes(_recipe(), Precision.FP32, batch_sizes=batch_sizes)


# --- what a CUDA device would run --------------------------------------------------------


@pytest.fixture
def fake() -> Iterator[None]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        yield


def test_policy_table_covers_every_op_cuda_autocasts() -> None:
    from advisor.profiling._cuda_emulation import ops_without_policy

    assert ops_without_policy() == []


@pytest.mark.usefixtures("fake")
def test_cuda_autocast_lists_differ_from_the_cpu_lists() -> None:
    import torch

    from advisor.profiling._cuda_emulation import cuda_autocast

    linear, norm = torch.nn.Linear(8, 8), torch.nn.LayerNorm(8)
    x = torch.randn(4, 8)

    def dtypes() -> list[torch.dtype]:
        h = linear(x)
        return [h.dtype, norm(h).dtype, torch.softmax(h, -1).dtype, h.pow(3).dtype]

    with cuda_autocast(torch.bfloat16):
        cuda = dtypes()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cpu = dtypes()
    # linear in bf16 on both; layer_norm, softmax and pow in fp32 on CUDA only
    assert cuda == [torch.bfloat16, torch.float32, torch.float32, torch.float32]
    assert cpu == [torch.bfloat16] * 4
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the override is gone afterwards
        assert torch.softmax(linear(x), -1).dtype == torch.bfloat16


@pytest.mark.usefixtures("fake")
def test_attention_with_dropout_takes_the_fused_kernel_as_on_cuda() -> None:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from advisor.profiling._cuda_emulation import cuda_attention

    class Ops(TorchDispatchMode):
        seen: list[str] = []

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    q = torch.randn(2, 4, 64, 16)
    for emulate in (False, True):
        Ops.seen = []
        with cuda_attention() if emulate else torch.autocast("cpu", enabled=False), Ops():
            torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
        fused = any("flash_attention" in op for op in Ops.seen)
        assert fused is emulate  # the CPU alone falls back to the unfused path under dropout
