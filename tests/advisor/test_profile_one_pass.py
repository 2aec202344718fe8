"""The cold profile traces the training step in one pass: the same figures as separate traces,
one model build, one steady step per batch size, both caches written."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

import advisor.profiling.fake_step as fake_step
import advisor.profiling.op_profile as op_profile
from advisor.profiling.fake_step import FakeStep
from advisor.profiling.memory_trace import trace_peak_bytes
from advisor.profiling.op_profile import OpClass, cached_op_mix, op_mix_for_spec, trace_op_mix
from advisor.profiling.profile import (
    _measure,
    _trace_batches,
    _with_memory,
    profile_workload,
    recipe_for,
)
from advisor.profiling.step_trace import trace_training_step
from advisor.spec import WorkloadSpec, parse_workload_spec
from probes.built import BuiltWorkload
from probes.workload import WorkloadRecipe, build_workload

pytest.importorskip("torch")

# 256 inputs -> 512 hidden (ReLU) -> 10 classes, as in test_memory_trace.
TINY_MLP = {"input_dim": 256, "hidden": 512, "layers": 1, "num_classes": 10}
TINY_PARAMS = 512 * 256 * 4 + 512 * 4 + 10 * 512 * 4 + 512  # as the CUDA allocator counts them


def _spec(builtin: str, options: dict[str, Any], *, precision: str,
          batch_size: int) -> WorkloadSpec:
    return parse_workload_spec({
        "name": f"{builtin}-one-pass", "model": {"builtin": builtin, "options": options},
        "batch_size": batch_size, "precision": precision, "data": {"samples": 100}})


@pytest.mark.parametrize("spec", [
    # fp32, no autocast: memory at batches 4 and 8, the operator mix at 2 and 4 (shared)
    _spec("mlp", TINY_MLP, precision="fp32", batch_size=8),
    # bf16 autocast, causal attention (the CPU and CUDA kernels count differently), batch 4:
    # memory and operator mix at the same two batches
    _spec("gpt2", {"hidden": 64, "layers": 2, "heads": 4, "seq_len": 32, "vocab": 128},
          precision="bf16", batch_size=4),
    # bf16 convolutions and batch norm at batches 2, 4 and 16, 32 (four steady steps); a
    # ResNet-18 (the builtin's depth option): the same layers, a third of ResNet-50's
    pytest.param(_spec("resnet50", {"image_size": 32, "num_classes": 10, "depth": 18},
                       precision="bf16", batch_size=8), marks=pytest.mark.slow),
], ids=["mlp-fp32", "gpt2-bf16", "resnet18-bf16"])
def test_one_pass_equals_separate_traces(spec: WorkloadSpec) -> None:
    recipe = recipe_for(spec, samples_per_device=spec.batch_size)
    one = trace_training_step(recipe, spec.precision,
                              memory_batches=_trace_batches(spec.batch_size), op_mix=True,
                              count_batch=4)
    memory = trace_peak_bytes(recipe, spec.precision,
                              batch_sizes=_trace_batches(spec.batch_size))
    assert one.memory == memory  # lines, traced peaks, what held them, notes: exactly
    assert one.op_mix == trace_op_mix(recipe, spec.precision)
    separate = _with_memory(spec, _measure(recipe_for(spec, samples_per_device=2),
                                           spec.precision, name=spec.name), memory)
    assert asdict(profile_workload(spec)) == asdict(separate)
    assert cached_op_mix(spec) == one.op_mix  # written by the same pass


def test_a_cold_profile_builds_once_and_writes_both_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec("mlp", TINY_MLP, precision="fp32", batch_size=8)
    builds: list[WorkloadRecipe] = []
    steps: list[int] = []
    step = fake_step._train_step  # noqa: SLF001 - counted, then run

    def counting_build(recipe: WorkloadRecipe) -> BuiltWorkload:
        builds.append(recipe)
        return build_workload(recipe)

    def counting_step(built: BuiltWorkload, batch: Any, state: FakeStep, *args: Any) -> None:
        steps.append(state.batch_size)
        step(built, batch, state, *args)

    monkeypatch.setattr(fake_step, "build_workload", counting_build)
    monkeypatch.setattr(fake_step, "_train_step", counting_step)
    profile_workload(spec)
    assert len(builds) == 1
    # set-up step, then the steady steps at 4 and 8: the memory trace's sizes, which the
    # operator mix shares (two more sizes would cost two more steps)
    assert steps == [4, 4, 8]
    monkeypatch.setattr(op_profile, "trace_op_mix", lambda *_: pytest.fail("traced again"))
    assert cached_op_mix(spec) is not None
    assert op_mix_for_spec(spec) == cached_op_mix(spec)


def test_one_pass_figures_equal_hand_counts() -> None:
    spec = _spec("mlp", TINY_MLP, precision="fp32", batch_size=8)
    profile = profile_workload(spec)
    mix = op_mix_for_spec(spec)
    # Forward: 2 FLOPs per weight; backward: the weight gradients of both layers and the
    # hidden layer's input gradient (the inputs need none).
    first, head = 2 * 256 * 512, 2 * 512 * 10
    assert profile.flops_per_sample == 2 * first + 3 * head
    assert sum(c.flops for c in mix.per_sample if c.op_class is OpClass.MATMUL) == \
        2 * first + 3 * head
    # The peak at batch 4 is in AdamW's foreach step: weights, gradients, both moments and the
    # sqrt(v) temporary, plus the batch (4x256 fp32 inputs, 4 int64 labels) and the loss.
    assert profile.memory_gib(4) * 2**30 == 5 * TINY_PARAMS + (4 * 256 * 4 + 512) + 512
    assert profile.params == 256 * 512 + 512 + 512 * 10 + 10
