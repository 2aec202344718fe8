"""The aten operators of one training step, traced on fake tensors, cached by fingerprint."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.profiling import op_names
from advisor.profiling.op_names import cached_step_op_names, load_op_names, step_op_names
from advisor.spec import WorkloadSpec, parse_workload_spec
from advisor.storage import profile_cache_dir

# A tiny model whose forward samples a grid (F.grid_sample: aten grid_sampler_2d, which
# torch_xla and torch-neuronx run on the host CPU: advisor/data/backend_operator_support.csv).
GRID_MODEL = """
    import torch
    import torch.nn.functional as F

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(2, 2, 3, padding=1)
        def forward(self, x):
            grid = torch.zeros(x.shape[0], 4, 4, 2)
            return F.grid_sample(self.conv(x), grid, align_corners=False).mean()

    def build():
        def make_batch(n, device):
            return torch.randn(n, 2, 4, 4, device=device)
        return Net(), make_batch, lambda net, batch: net(batch)
"""
BROKEN_MODEL = """
    def build():
        raise RuntimeError("this model does not build")
"""


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(op_names, "_MEMO", {})


def entrypoint_spec(folder: Path, module: str, source: str) -> Iterator[WorkloadSpec]:
    """A spec training ``module:build`` written into ``folder``; the module forgotten after."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    spec = parse_workload_spec({"name": module, "model": {"entrypoint": f"{module}:build"},
                                "batch_size": 4, "data": {"samples": 100}})
    try:
        yield replace(spec, source_dir=str(folder))
    finally:
        sys.modules.pop(module, None)


@pytest.fixture
def grid_spec(tmp_path: Path) -> Iterator[WorkloadSpec]:
    yield from entrypoint_spec(tmp_path, "grid_model_mod", GRID_MODEL)


def test_the_step_names_its_forward_backward_and_optimizer_operators(
        grid_spec: WorkloadSpec) -> None:
    names = step_op_names(grid_spec)
    assert names is not None
    assert {"grid_sampler_2d", "grid_sampler_2d_backward"} <= names  # the model's own
    assert {"convolution", "convolution_backward"} <= names  # forward and backward
    assert {"addcdiv_", "lerp_"} <= names  # AdamW's per-tensor update
    assert not any("::" in n or "." in n for n in names)  # no namespace, no overload


def test_the_names_are_cached_by_the_specs_fingerprint(grid_spec: WorkloadSpec) -> None:
    names = step_op_names(grid_spec)
    assert cached_step_op_names(grid_spec) == names
    assert (profile_cache_dir() / f"{grid_spec.fingerprint()}.opnames.json").is_file()


def test_a_cached_set_is_read_without_tracing(grid_spec: WorkloadSpec,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    names = step_op_names(grid_spec)
    monkeypatch.setattr(op_names, "_MEMO", {})

    def no_trace(*_args: object) -> frozenset[str]:
        raise AssertionError("traced again")

    monkeypatch.setattr(op_names, "trace_op_names", no_trace)
    assert step_op_names(grid_spec) == names


def test_a_step_that_does_not_trace_gives_none(tmp_path: Path) -> None:
    for spec in entrypoint_spec(tmp_path, "broken_model_mod", BROKEN_MODEL):
        assert step_op_names(spec) is None
        assert cached_step_op_names(spec) is None  # a failure is not cached


def test_without_torch_there_are_no_names(grid_spec: WorkloadSpec,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def no_torch() -> object:
        raise ImportError("No module named 'torch'")

    monkeypatch.setattr(op_names, "_recorder", no_torch)
    assert step_op_names(grid_spec) is None


@pytest.mark.parametrize("text", [
    "not json",  # unreadable
    '{"version": 0, "names": ["mm"]}',  # an older cache format
    '{"version": 1, "names": "mm"}',  # names not a list
])
def test_a_bad_cache_file_reads_as_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.opnames.json"
    path.write_text(text)
    assert load_op_names(path) is None


def test_a_cold_profile_stores_the_names_from_its_own_pass(grid_spec: WorkloadSpec,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from advisor.profiling.profile import profile_workload

    def no_trace(*_args: object) -> frozenset[str]:
        raise AssertionError("a second trace for the names")

    monkeypatch.setattr(op_names, "trace_op_names", no_trace)
    profile_workload(grid_spec)
    monkeypatch.setattr(op_names, "_MEMO", {})  # from disk, as the next process reads them
    names = step_op_names(grid_spec)
    assert names is not None and {"grid_sampler_2d", "grid_sampler_2d_backward"} <= names
    assert {"addcdiv_", "lerp_"} <= names  # the multi-tensor update named per tensor
    assert not any(n.startswith("_foreach_") for n in names)
