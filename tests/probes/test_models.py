"""Built-in reference models and building workloads from recipes (built-ins, entrypoints)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from probes.errors import ProbeError
from probes.models import BUILTIN
from probes.workload import BuiltWorkload, WorkloadRecipe, build_workload


def _params(name: str, **options: object) -> int:
    with torch.device("meta"):
        built = BUILTIN[name](**options)
    return sum(p.numel() for p in built.model.parameters())


@pytest.mark.parametrize(("name", "options", "expected"), [
    # torchvision resnet50 (ResNet-50 v1.5, He et al. 2015): 25,557,032
    ("resnet50", {}, 25_557_032),
    # torchvision resnet18: 11,689,512
    ("resnet50", {"depth": 18}, 11_689_512),
    # torchvision resnet101: 44,549,160
    ("resnet50", {"depth": 101}, 44_549_160),
    # Hugging Face BertForMaskedLM(bert-base-uncased): 109,514,298 (BERT-base "110M")
    ("bert", {}, 109_514_298),
    # BertModel 109,482,240 + a 2-label classifier (768 x 2 + 2)
    ("bert", {"task": "classification"}, 109_483_778),
    # GPT-2 small (Radford et al. 2019, the "124M" model): 124,439,808
    ("gpt2", {}, 124_439_808),
    # 784*1024+1024 + 2*(1024*1024+1024) + 1024*10+10
    ("mlp", {}, 2_913_290),
])
def test_parameter_count_matches_reference(name: str, options: dict[str, object],
                                           expected: int) -> None:
    assert _params(name, **options) == expected


_TINY = {
    "resnet50": {"depth": 18, "width": 8, "image_size": 32, "num_classes": 5},
    "bert": {"hidden": 32, "layers": 2, "heads": 4, "ffn": 64, "seq_len": 16, "vocab": 100},
    "gpt2": {"hidden": 32, "layers": 2, "heads": 4, "seq_len": 16, "vocab": 100},
    "mlp": {"input_dim": 20, "hidden": 16, "layers": 2, "num_classes": 3},
}


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_tiny_model_trains_one_step_on_cpu(name: str) -> None:
    built = BUILTIN[name](**_TINY[name])
    optimizer = torch.optim.Adam(built.model.parameters(), lr=1e-2)
    before = [p.detach().clone() for p in built.model.parameters()]
    loss = built.loss_fn(built.model, built.make_batch(4, "cpu"))
    loss.backward()
    optimizer.step()
    assert loss.ndim == 0 and torch.isfinite(loss)
    assert any(not torch.equal(b, p) for b, p in zip(before, built.model.parameters(),
                                                      strict=True))


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_builtins_have_no_loader_so_make_no_input_claim(name: str) -> None:
    assert BUILTIN[name](**_TINY[name]).make_loader is None


def test_bert_classification_task_trains() -> None:
    built = BUILTIN["bert"](**_TINY["bert"], task="classification", num_labels=3)
    ids, labels = built.make_batch(2, "cpu")
    assert built.model(ids).shape == (2, 3) and labels.shape == (2,)


@pytest.mark.parametrize(("name", "options", "needle"), [
    # unknown option: named, the nearest one suggested, allowed ones listed
    ("resnet50", {"dept": 50},
     "'dept' is not known for resnet50; did you mean 'depth'? allowed options: depth,"),
    ("mlp", {"colour": 1}, "'colour' is not known for mlp; allowed options: hidden,"),
    # wrong type for an integer option
    ("mlp", {"hidden": "big"}, "'hidden' of mlp must be a whole number"),
    # negative size
    ("gpt2", {"layers": -1}, "'layers' of gpt2 must be a whole number greater than 0"),
    # bad choice
    ("bert", {"task": "qa"}, "'task' of bert must be one of mlm, classification"),
    # unsupported depth
    ("resnet50", {"depth": 42}, "'depth' of resnet50 must be one of 18, 34, 50, 101, 152"),
    # heads must divide hidden (both text models)
    ("gpt2", {"hidden": 100, "heads": 12}, "'hidden' of gpt2 (100) must be divisible by 'heads' (12)"),
    ("bert", {"hidden": 100, "heads": 12}, "'hidden' of bert (100) must be divisible by 'heads' (12)"),
])
def test_bad_option_is_a_probe_error_naming_it(name: str, options: dict[str, object],
                                               needle: str) -> None:
    with pytest.raises(ProbeError) as info:
        BUILTIN[name](**options)
    assert needle in str(info.value)


def test_build_workload_builtin_on_meta_allocates_nothing() -> None:
    with torch.device("meta"):
        built = build_workload(WorkloadRecipe(builtin="gpt2", entrypoint=None))
    assert all(p.is_meta for p in built.model.parameters())


def test_build_workload_rejects_unknown_builtin() -> None:
    with pytest.raises(ProbeError, match="unknown built-in model 'vgg'"):
        build_workload(WorkloadRecipe(builtin="vgg", entrypoint=None))


# --- entrypoints ---------------------------------------------------------------------------

_GOOD = '''
import torch
def build(width=4):
    model = torch.nn.Linear(width, 2)
    def make_batch(n, device):
        return torch.randn(n, width, device=device), torch.randint(0, 2, (n,), device=device)
    def loss_fn(net, batch):
        return torch.nn.functional.cross_entropy(net(batch[0]), batch[1])
    return model, make_batch, loss_fn
def with_loader(width=4):
    model, make_batch, loss_fn = build(width)
    def make_loader(n):
        return [make_batch(n, "cpu") for _ in range(2)]
    return model, make_batch, loss_fn, make_loader
def loader_none():
    return (*build(), None)
def loader_not_callable():
    return (*build(), [1, 2])
def model_not_callable():
    return (42, *build()[1:])
def two():
    return build()[:2]
def wrong():
    return 42
def boom(**kwargs):
    raise ValueError("no such dataset\\nsecond line")


def quits(**kwargs):
    import sys
    sys.exit(7)
'''


@pytest.fixture
def user_dir(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    """A folder with one user module under a unique name (removed from sys.modules after)."""
    name = f"user_model_{request.node.name.split('[')[0]}"
    (tmp_path / f"{name}.py").write_text(_GOOD)
    (tmp_path / "broken_import_mod.py").write_text("raise RuntimeError('bad install')\n")
    (tmp_path / "exiting_import_mod.py").write_text("import sys\nsys.exit(7)\n")
    yield tmp_path, name
    for module in (name, "broken_import_mod", "exiting_import_mod"):
        sys.modules.pop(module, None)


def _recipe(base: Path, entrypoint: str, **options: object) -> WorkloadRecipe:
    return WorkloadRecipe(builtin=None, entrypoint=entrypoint, options=options,
                          base_dir=str(base))


def test_entrypoint_builds_and_trains(user_dir: tuple[Path, str]) -> None:
    base, name = user_dir
    built = build_workload(_recipe(base, f"{name}:build", width=6))
    assert isinstance(built, BuiltWorkload) and built.make_loader is None
    assert built.model.in_features == 6
    built.loss_fn(built.model, built.make_batch(3, "cpu")).backward()
    assert str(base) not in sys.path  # the folder was only on the path while importing


def test_entrypoint_may_return_a_built_workload(tmp_path: Path) -> None:
    (tmp_path / "returns_built_mod.py").write_text(
        "from probes.models import BUILTIN\n"
        "def build():\n"
        "    built = BUILTIN['mlp'](input_dim=4, hidden=4, layers=1)\n"
        "    built.make_loader = lambda n: [built.make_batch(n, 'cpu')]\n"
        "    return built\n")
    try:
        built = build_workload(_recipe(tmp_path, "returns_built_mod:build"))
    finally:
        sys.modules.pop("returns_built_mod", None)
    assert built.make_loader is not None
    assert len(list(built.make_loader(2))) == 1


def test_entrypoint_may_return_its_loader_as_a_fourth_element(
    user_dir: tuple[Path, str],
) -> None:
    base, name = user_dir
    built = build_workload(_recipe(base, f"{name}:with_loader", width=6))
    assert built.make_loader is not None
    batches = list(built.make_loader(3))
    made = built.make_batch(3, "cpu")
    assert len(batches) == 2
    for loaded, fresh in zip(batches[0], made, strict=True):
        assert loaded.shape == fresh.shape and loaded.dtype == fresh.dtype
    assert torch.isfinite(built.loss_fn(built.model, batches[0]))


def test_entrypoint_fourth_element_none_means_no_loader(user_dir: tuple[Path, str]) -> None:
    base, name = user_dir
    assert build_workload(_recipe(base, f"{name}:loader_none")).make_loader is None


@pytest.mark.parametrize(("entrypoint", "needle"), [
    # module not found
    ("no_such_module_xyz:build", "cannot import 'no_such_module_xyz'"),
    # module raises while importing
    ("broken_import_mod:build", "importing 'broken_import_mod' failed: RuntimeError: bad"),
    # function missing
    ("{mod}:missing", "has no function 'missing'"),
    # returns the wrong thing: every accepted shape is named
    ("{mod}:wrong", "must return (model, make_batch, loss_fn), (model, make_batch, loss_fn, "
                    "make_loader) or a BuiltWorkload, got int"),
    # a tuple of the wrong length
    ("{mod}:two", "must return (model, make_batch, loss_fn), (model, make_batch, loss_fn, "
                  "make_loader) or a BuiltWorkload, got a 2-tuple"),
    # a 3- or 4-tuple with a part that is not callable: the part is named
    ("{mod}:model_not_callable", "returned a 3-tuple whose model is int, not callable"),
    # the 4th element is not a function (a list of batches instead of a loader factory)
    ("{mod}:loader_not_callable", "returned a make_loader that is a list, not callable; return "
                                  "a function of batch_size"),
    # raises when called: first line only
    ("{mod}:boom", "failed when called with options {}: ValueError: no such dataset"),
    # sys.exit() at import or in the function ends neither advisor nor its exit status
    ("exiting_import_mod:build", "importing 'exiting_import_mod' called sys.exit(7)"),
    ("{mod}:quits", "called sys.exit(7) when called with its options"),
])
def test_entrypoint_errors_are_one_line_probe_errors(
    user_dir: tuple[Path, str], entrypoint: str, needle: str,
) -> None:
    base, name = user_dir
    with pytest.raises(ProbeError) as info:
        build_workload(_recipe(base, entrypoint.format(mod=name)))
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


def test_entrypoint_rejects_unknown_keyword(user_dir: tuple[Path, str]) -> None:
    base, name = user_dir
    with pytest.raises(ProbeError, match="TypeError: .*unexpected keyword argument 'depth'"):
        build_workload(_recipe(base, f"{name}:build", depth=3))
