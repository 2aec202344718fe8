"""Model patterns of popular libraries that must trace on fake tensors (else memory falls back
to the estimated sum): learned attention biases (T5, Swin), drop-path schedules read with
``item()`` while building (timm, Hugging Face ConvNeXt), grouped expert matmuls (MoE),
activation checkpointing, a model cast to bf16 while building."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.profiling.memory_trace import trace_peak_bytes
from advisor.profiling.op_profile import OpClass, trace_op_mix
from advisor.profiling.profile import MemoryBasis, profile_workload
from advisor.spec import Precision, WorkloadSpec, parse_workload_spec
from probes.workload import WorkloadRecipe

BIASED_ATTENTION = """
    import torch
    class Net(torch.nn.Module):  # T5 / Swin: a learned position bias is the attention mask
        def __init__(self, heads=4, length=16, dim=32):
            super().__init__()
            self.qkv = torch.nn.Linear(dim * heads, 3 * dim * heads)
            self.bias = torch.nn.Parameter(torch.zeros(1, heads, length, length))
            self.heads = heads
        def forward(self, x):
            b, n, _ = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
            return out.transpose(1, 2).reshape(b, n, -1)
    def build():
        make = lambda n, device: torch.randn(n, 16, 128, device=device)
        return Net(), make, lambda net, x: net(x).pow(2).mean()
"""

DROP_PATH_SCHEDULE = """
    import torch
    class Net(torch.nn.Module):  # timm / HF ConvNeXt: per-block rates read while building
        def __init__(self, depth=4, rate=0.1):
            super().__init__()
            rates = [x.item() for x in torch.linspace(0, rate, depth)]
            self.blocks = torch.nn.ModuleList(torch.nn.Linear(64, 64) for _ in rates)
            self.rates = torch.linspace(0, rate, depth).tolist()
            self.register_buffer("position", torch.arange(64).float())
        def forward(self, x):
            for block in self.blocks:
                x = x + block(x + self.position)
            return x
    def build():
        make = lambda n, device: torch.randn(n, 64, device=device)
        return Net(), make, lambda net, x: net(x).pow(2).mean()
"""

GROUPED_EXPERTS = """
    import torch
    class Net(torch.nn.Module):  # mixture of experts: each token through one expert's matrix
        def __init__(self, experts=4, dim=64, out=32):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(experts, dim, out) * 0.02)
        def forward(self, x):
            n = x.shape[0]
            offs = (torch.arange(1, 5, dtype=torch.int32) * (n // 4)).to(x.device)
            return torch._grouped_mm(x, self.weight, offs=offs)
    def build():
        make = lambda n, device: torch.randn(n, 64, device=device)
        return Net(), make, lambda net, x: net(x).pow(2).mean()
"""


CHECKPOINTED_ATTENTION = """
    import torch
    from torch.utils.checkpoint import checkpoint
    class Block(torch.nn.Module):
        def __init__(self, dim=128, heads=4):
            super().__init__()
            self.qkv, self.out, self.heads = torch.nn.Linear(dim, 3 * dim), torch.nn.Linear(dim, dim), heads
        def forward(self, x, mask):
            b, n, _ = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            a = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return x + self.out(a.transpose(1, 2).reshape(b, n, -1))
    class Net(torch.nn.Module):
        def __init__(self, checkpointed, depth=4):
            super().__init__()
            self.blocks, self.checkpointed = torch.nn.ModuleList(Block() for _ in range(depth)), checkpointed
        def forward(self, x):
            n = x.shape[1]  # a padding-style boolean mask, as Hugging Face models pass
            mask = torch.ones(x.shape[0], 1, n, n, dtype=torch.bool, device=x.device).tril()
            for block in self.blocks:
                x = checkpoint(block, x, mask, use_reentrant=False) if self.checkpointed else block(x, mask)
            return x
    def build(checkpointed=True, bf16_weights=False):
        net = Net(checkpointed)
        if bf16_weights:  # pure-bf16 training casts the model while building
            net = net.to(torch.bfloat16)
        dtype = torch.bfloat16 if bf16_weights else torch.float32
        make = lambda n, device: torch.randn(n, 64, 128, device=device, dtype=dtype)
        return net, make, lambda net, x: net(x).float().pow(2).mean()
"""


WriteModule = Callable[[str, str], WorkloadRecipe]  # (module name, source) -> its recipe


@pytest.fixture
def module(tmp_path: Path) -> Iterator[WriteModule]:
    names: list[str] = []

    def write(name: str, source: str) -> WorkloadRecipe:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        return WorkloadRecipe(builtin=None, entrypoint=f"{name}:build", base_dir=str(tmp_path))

    yield write
    for name in names:
        sys.modules.pop(name, None)


def _spec(recipe: WorkloadRecipe) -> WorkloadSpec:
    spec = parse_workload_spec({"name": "m", "model": {"entrypoint": recipe.entrypoint},
                                "batch_size": 8, "data": {"samples": 10}})
    return WorkloadSpec(**{**spec.__dict__, "source_dir": recipe.base_dir})


@pytest.mark.parametrize("precision", [Precision.FP32, Precision.BF16])
def test_a_learned_attention_bias_traces_with_cuda_semantics(module: WriteModule,
                                                             precision: Precision) -> None:
    recipe = module("biased_attention_mod", BIASED_ATTENTION)
    traced = trace_peak_bytes(recipe, precision, batch_sizes=(4, 8), device="cuda")
    bias = 4 * 16 * 16 * 4  # the fp32 parameter; its gradient and Adam moments: 4x in all
    assert traced.peak_bytes(8) > 4 * bias
    mix = trace_op_mix(recipe, precision)
    assert sum(c.flops for c in mix.per_sample if c.op_class is OpClass.ATTENTION) > 0


def test_a_drop_path_schedule_read_while_building_traces(module: WriteModule) -> None:
    recipe = module("drop_path_mod", DROP_PATH_SCHEDULE)
    traced = trace_peak_bytes(recipe, Precision.FP32, batch_sizes=(4, 8))
    weights = 4 * (64 * 64 + 64) * 4
    assert traced.peak_bytes(8) > 4 * weights  # weights, gradients and Adam's two moments
    profile = profile_workload(_spec(recipe), use_cache=False)
    assert profile.memory_basis is MemoryBasis.TRACED and not profile.trace_problem
    # 4 blocks forward and their weights' gradients; input gradients past the first block only
    assert profile.flops_per_sample == (4 + 4 + 3) * 2 * 64 * 64


def test_grouped_expert_matmuls_trace_in_fp32_and_count_their_flops(module: WriteModule) -> None:
    recipe = module("grouped_experts_mod", GROUPED_EXPERTS)
    profile = profile_workload(_spec(recipe), use_cache=False)
    assert profile.memory_basis is MemoryBasis.TRACED, profile.trace_problem
    # per token: forward 2*64*32 and the experts' gradient as much again (the data needs none)
    assert profile.flops_per_sample == 2 * 2 * 64 * 32
    mix = trace_op_mix(recipe, Precision.FP32)
    matmul = sum(c.flops for c in mix.per_sample if c.op_class is OpClass.MATMUL)
    assert matmul == pytest.approx(2 * 2 * 64 * 32, rel=0.01)
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), pytest.raises(RuntimeError, match="BF16"):  # nothing left behind
        torch._grouped_mm(torch.randn(8, 64), torch.randn(4, 64, 32),
                          offs=torch.tensor([2, 4, 6, 8], dtype=torch.int32))


@pytest.mark.parametrize("precision", [Precision.FP32, Precision.BF16])
def test_activation_checkpointing_traces_with_cuda_semantics_and_saves_memory(
        module: WriteModule, precision: Precision) -> None:
    recipe = module("checkpointed_mod", CHECKPOINTED_ATTENTION)
    peaks = {}
    for checkpointed in (True, False):
        recipe = replace(recipe, options={"checkpointed": checkpointed})
        # backward recomputes each block; the recomputation must take the same kernels
        peaks[checkpointed] = trace_peak_bytes(recipe, precision, batch_sizes=(8, 16),
                                               device="cuda").peak_bytes(16)
    assert peaks[True] < 0.8 * peaks[False]


def test_a_model_cast_to_bf16_while_building_traces(module: WriteModule) -> None:
    recipe = module("bf16_weights_mod", CHECKPOINTED_ATTENTION)
    casts = {}
    for bf16 in (False, True):
        recipe = replace(recipe, options={"checkpointed": False, "bf16_weights": bf16})
        casts[bf16] = trace_peak_bytes(recipe, Precision.FP32, batch_sizes=(8, 16),
                                       device="cuda").peak_bytes(16)
    assert casts[True] < 0.7 * casts[False]  # every parameter, gradient, moment and activation halves
