"""Workload profile: FLOPs against published figures, memory, overrides, cache, fallbacks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.profiling import recipe_for
from advisor.profiling.profile import (
    MemoryBasis,
    WorkloadProfile,
    needs_measuring,
    profile_workload,
)
from advisor.spec import Precision, WorkloadSpec, load_workload_spec, parse_workload_spec
from advisor.storage import profile_cache_dir

REPO = Path(__file__).resolve().parents[2]


def _spec(builtin: str = "mlp", *, precision: str = "fp32", batch_size: int = 32,
          options: dict[str, object] | None = None, **extra: object) -> WorkloadSpec:
    data: dict[str, object] = {
        "name": f"{builtin}-test", "model": {"builtin": builtin, "options": options or {}},
        "batch_size": batch_size, "precision": precision, "data": {"samples": 1000}, **extra}
    return parse_workload_spec(data)


# --- FLOPs per training sample against published figures -----------------------------------
#
# Training = forward + backward, and backward ~ 2 x forward, so training ~ 3 x forward
# (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", section 2.1: C ~ 6N per
# token = 3 x the forward 2N).


def _kaplan_forward_per_token(*, n_layer: int, d_model: int, d_ff: int, n_ctx: int,
                              n_vocab: int, extra_params: int = 0) -> float:
    """Forward FLOPs per token from Kaplan et al. 2020, table 1.

    N = 2 d_model n_layer (2 d_attn + d_ff) non-embedding parameters (d_attn = d_model);
    C_forward = 2N + 2 n_layer n_ctx d_attn, plus table 1's "De-embed" row 2 d_model n_vocab
    (our language models score every position against the vocabulary) and 2 FLOPs per
    parameter of any extra dense layer (BERT's MLM transform).
    """
    n = 2 * d_model * n_layer * (2 * d_model + d_ff) + extra_params
    return 2 * n + 2 * n_layer * n_ctx * d_model + 2 * d_model * n_vocab


# ResNet-50 at 224x224: 4.09 GMACs forward (torchvision model docs, ResNet50_Weights.
# IMAGENET1K_V1 "GFLOPS 4.09", which counts multiply-adds; He et al. 2015 table 1 gives
# 3.8e9 for the original v1 with the stride on the 1x1 convolution). 1 MAC = 2 FLOPs.
RESNET50_TRAIN = 3 * 2 * 4.09e9
# BERT-base, seq 128, MLM head over all positions (Devlin et al. 2018 sizes).
BERT_TRAIN = 3 * 128 * _kaplan_forward_per_token(
    n_layer=12, d_model=768, d_ff=3072, n_ctx=128, n_vocab=30522, extra_params=768 * 768)
# GPT-2 small (Radford et al. 2019), seq 1024, tied LM head.
GPT2_TRAIN = 3 * 1024 * _kaplan_forward_per_token(
    n_layer=12, d_model=768, d_ff=3072, n_ctx=1024, n_vocab=50257)
# MLP 784-1024-1024-1024-10: 2 FLOPs per weight per sample forward (a dense layer is one
# multiply-add per weight), training 3x (the same 6N rule).
MLP_TRAIN = 3 * 2 * (784 * 1024 + 2 * 1024 * 1024 + 1024 * 10)


def _example(name: str) -> WorkloadProfile:
    """The profile of ``examples/<name>.yaml`` (bf16, the published models' sizes): its shipped
    file, which test_shipped_artifacts proves equal to a fresh trace of the same spec."""
    spec = load_workload_spec(REPO / "examples" / f"{name}.yaml")
    assert not needs_measuring(spec)
    return profile_workload(spec)


@pytest.fixture(scope="module")
def resnet50_fp32(tmp_path_factory: pytest.TempPathFactory) -> WorkloadProfile:
    """ResNet-50 (224x224, 1000 classes) fp32 at batch 32, traced once for the tests that read
    it, in a data directory of its own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ADVISOR_HOME", str(tmp_path_factory.mktemp("advisor-home")))
        return profile_workload(_spec("resnet50", precision="fp32"))


@pytest.mark.parametrize(("example", "published"), [
    ("resnet50", RESNET50_TRAIN),  # 24.5 GFLOPs per image
    ("bert", BERT_TRAIN),          # 84.6 GFLOPs per 128-token sequence
    ("gpt2", GPT2_TRAIN),          # 817 GFLOPs per 1024-token sequence
])
def test_flops_per_sample_within_10_percent_of_published(example: str, published: float) -> None:
    assert _example(example).flops_per_sample == pytest.approx(published, rel=0.10)


def test_traced_flops_of_an_mlp_within_10_percent_of_published() -> None:
    profile = profile_workload(_spec("mlp", precision="bf16"))
    assert profile.memory_basis is MemoryBasis.TRACED  # measured here, not read
    assert profile.flops_per_sample == pytest.approx(MLP_TRAIN, rel=0.10)


# --- memory --------------------------------------------------------------------------------


def test_resnet50_memory_parts(resnet50_fp32: WorkloadProfile) -> None:
    profile = resnet50_fp32
    assert profile.params == 25_557_032
    assert profile.gradient_bytes == 4 * profile.params
    assert profile.optimizer_bytes == 8 * profile.params  # Adam: two fp32 moments
    assert profile.weight_bytes >= 4 * profile.params      # plus BatchNorm running stats
    # ResNet-50 keeps tens of MiB of activations per 224x224 image in fp32.
    assert 40 * 2**20 < profile.activation_bytes_per_sample < 200 * 2**20
    assert profile.method == "flop_counter:fake"


def test_memory_grows_with_batch() -> None:
    profile = _example("resnet50")  # bf16, batch 256
    assert profile.memory_basis is MemoryBasis.TRACED
    needs = [profile.memory_gib(b) for b in (1, 32, 128, 256)]
    assert needs == sorted(needs) and needs[0] < needs[-1]
    # between the two traced batches (128 and 256) the need is one line
    assert needs[3] - needs[2] == pytest.approx(128 * profile.activation_bytes_per_sample / 2**30,
                                                rel=1e-3)
    # ResNet-50 bf16 at batch 256 peaks near 11 GiB on an H100 (issue 14: 11.1 GiB measured)
    assert 9.5 < needs[3] < 12.5


def test_traced_memory_is_the_peak_of_a_training_step() -> None:
    profile = profile_workload(_spec("gpt2", precision="bf16", batch_size=4, options={
        "hidden": 64, "layers": 2, "heads": 2, "seq_len": 128, "vocab": 1000}))
    from advisor.profiling.memory_trace import trace_peak_bytes

    traced = trace_peak_bytes(recipe_for(_spec("gpt2", precision="bf16", batch_size=4, options={
        "hidden": 64, "layers": 2, "heads": 2, "seq_len": 128, "vocab": 1000}),
        samples_per_device=4), Precision.BF16, batch_sizes=(2, 4))
    assert profile.memory_gib(4) == pytest.approx(traced.peak_bytes(4) / 2**30)
    assert profile.memory_lines == traced.lines


def test_low_precision_activations_are_measured_smaller(resnet50_fp32: WorkloadProfile) -> None:
    fp32, bf16 = resnet50_fp32, _example("resnet50")  # the same model; bf16 at batch 256
    ratio = bf16.activation_bytes_per_sample / fp32.activation_bytes_per_sample
    assert 0.4 < ratio < 0.7  # measured under autocast, not assumed to be exactly half
    assert bf16.weight_bytes == fp32.weight_bytes + 2 * fp32.params  # autocast weight copies
    assert bf16.flops_per_sample == fp32.flops_per_sample


def test_giant_mlp_profiles_without_allocating() -> None:
    spec = load_workload_spec(REPO / "examples" / "mlp_oom.yaml")
    profile = profile_workload(spec)
    assert profile.params > 10**11
    assert profile.memory_gib(spec.batch_size) > 1000


# --- overrides and missing torch -------------------------------------------------------------


def test_override_replaces_measured_fields() -> None:
    profile = profile_workload(_spec(
        profile={"flops_per_sample": 1.0e9, "params": 5_000_000, "memory_gib": 2.0}))
    assert profile.flops_per_sample == 1.0e9
    assert profile.params == 5_000_000
    assert profile.optimizer_bytes == 8 * 5_000_000
    assert profile.memory_gib(32) == pytest.approx(2.0, rel=1e-6)
    assert profile.method == "user"  # everything given: nothing measured
    assert profile.memory_basis is MemoryBasis.USER


def test_memory_override_wins_over_the_trace() -> None:
    profile = profile_workload(_spec(profile={"memory_gib": 3.0}))
    assert profile.memory_basis is MemoryBasis.USER and profile.memory_lines == ()
    assert profile.memory_gib(32) == pytest.approx(3.0, rel=1e-6)


def test_partial_override_keeps_measured_rest() -> None:
    measured = profile_workload(_spec())
    overridden = profile_workload(_spec(profile={"flops_per_sample": 123.0}))
    assert overridden.flops_per_sample == 123.0
    assert overridden.params == measured.params == 2_913_290
    assert overridden.method == "flop_counter:fake+user"


def test_without_torch_and_no_flops_override_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes "import torch" fail
    with pytest.raises(AdvisorError, match=r"pip install 'advisor\[torch\]'.*"
                                            r"profile.flops_per_sample"):
        profile_workload(_spec())


def test_without_torch_flops_override_is_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    profile = profile_workload(_spec(profile={"flops_per_sample": 5.0e6, "params": 1000}))
    assert profile.method == "user"
    assert profile.flops_per_sample == 5.0e6 and profile.fixed_bytes == 16 * 1000


def test_bad_builtin_option_is_an_advisor_error() -> None:
    with pytest.raises(AdvisorError, match="'widht' is not known for mlp"):
        profile_workload(_spec(options={"widht": 3}))


# --- cache ---------------------------------------------------------------------------------


def test_cached_profile_is_read_without_importing_torch(advisor_home: Path) -> None:
    spec_path = REPO / "examples" / "mlp.yaml"
    first = profile_workload(load_workload_spec(spec_path))
    script = textwrap.dedent(f"""
        import json, sys
        from advisor.spec import load_workload_spec
        from advisor.profiling.profile import profile_workload
        profile = profile_workload(load_workload_spec({str(spec_path)!r}))
        print(json.dumps([profile.flops_per_sample, "torch" in sys.modules]))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={"ADVISOR_HOME": str(advisor_home), "PATH": ""})
    flops, torch_imported = json.loads(out.stdout)
    assert flops == first.flops_per_sample
    assert torch_imported is False


def test_cache_is_keyed_by_fingerprint_and_used() -> None:
    spec = _spec()
    profile_workload(spec)
    path = profile_cache_dir() / f"{spec.fingerprint()}.json"
    data = json.loads(path.read_text())
    data["flops_per_sample"] = 42.0
    path.write_text(json.dumps(data))
    cached = profile_workload(spec)
    assert cached.flops_per_sample == 42.0
    assert cached.memory_basis is MemoryBasis.TRACED and cached.memory_lines  # round trip
    assert profile_workload(spec, use_cache=False).flops_per_sample != 42.0


def test_corrupt_cache_is_measured_again() -> None:
    spec = _spec()
    path = profile_cache_dir() / f"{spec.fingerprint()}.json"
    path.write_text("{not json")
    assert profile_workload(spec).params == 2_913_290
    assert isinstance(json.loads(path.read_text()), dict)


# --- entrypoints ---------------------------------------------------------------------------


def test_custom_example_entrypoint_is_profiled() -> None:
    spec = load_workload_spec(REPO / "examples" / "custom" / "model.yaml")
    try:
        profile = profile_workload(spec)
    finally:
        sys.modules.pop("my_model", None)
    # embedding 20000x128, conv 128->256 k5, conv 256->256 k5, linear 256->4
    assert profile.params == (20000 * 128 + 128 * 256 * 5 + 256 + 256 * 256 * 5 + 256
                              + 256 * 4 + 4)
    assert profile.flops_per_sample > 0 and profile.activation_bytes_per_sample > 0


def test_entrypoint_that_cannot_run_on_fake_tensors_gets_a_cpu_step(tmp_path: Path) -> None:
    (tmp_path / "data_dependent_mod.py").write_text(textwrap.dedent("""
        import torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)
            def forward(self, x):
                if x.abs().sum().item() < 0:  # needs real values
                    x = -x
                return self.lin(x)
        def build():
            def make_batch(n, device):
                return torch.randn(n, 8, device=device)
            return Net(), make_batch, lambda net, batch: net(batch).pow(2).mean()
    """))
    spec = parse_workload_spec({
        "name": "dd", "model": {"entrypoint": "data_dependent_mod:build"}, "batch_size": 4,
        "data": {"samples": 10}})
    spec = WorkloadSpec(**{**spec.__dict__, "source_dir": str(tmp_path)})
    try:
        profile = profile_workload(spec)
    finally:
        sys.modules.pop("data_dependent_mod", None)
    assert profile.method == "flop_counter:cpu"
    assert profile.flops_per_sample == 3 * 2 * 8 * 8 - 2 * 8 * 8  # no input gradient
    assert profile.params == 72
    assert profile.memory_basis is MemoryBasis.ESTIMATE  # no trace on fake tensors either
    assert profile.trace_problem.startswith("DataDependentOutputException")  # said, for recommend


def test_recipe_for_carries_the_spec() -> None:
    spec = load_workload_spec(REPO / "examples" / "custom" / "model.yaml")
    recipe = recipe_for(spec, samples_per_device=16)
    assert recipe.entrypoint == "my_model:build" and recipe.builtin is None
    assert recipe.batch_size == 16 and recipe.precision == "bf16"
    assert recipe.base_dir == str((REPO / "examples" / "custom").resolve())
    assert recipe.options["vocab"] == 20000


def test_profile_type_is_unchanged() -> None:
    profile = WorkloadProfile(flops_per_sample=1.0, params=1, weight_bytes=4, gradient_bytes=4,
                              optimizer_bytes=8, activation_bytes_per_sample=2**30, method="x")
    assert profile.memory_gib(2) == pytest.approx(2.0 + 16 / 2**30)
    assert profile.memory_basis is MemoryBasis.ESTIMATE


def test_traced_lines_answer_any_batch() -> None:
    # at rest 1 GiB, then activations: 0.5 GiB per sample from 2 GiB (the highest line wins)
    profile = WorkloadProfile(flops_per_sample=1.0, params=1, weight_bytes=4, gradient_bytes=4,
                              optimizer_bytes=8, activation_bytes_per_sample=0, method="x",
                              memory_lines=((3 * 2**30, 0.0), (2**30, 2**29)),
                              memory_basis=MemoryBasis.TRACED)
    assert [profile.memory_gib(b) for b in (1, 4, 8)] == [3.0, 3.0, 5.0]
