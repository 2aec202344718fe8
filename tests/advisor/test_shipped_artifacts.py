"""Issue 30: the shipped profiles of the built-in examples and the shipped fitted throughput
model (``python -m advisor.throughput.shipped_artifacts``) are current, found after the user's cache and
before tracing or fitting, and a first ``recommend`` of an example imports neither torch nor
scikit-learn."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from advisor.profiling import _spec_files, needs_measuring, profile_workload, step_op_names
from advisor.profiling.op_names import cached_step_op_names
from advisor.profiling.op_profile import cached_op_mix
from advisor.profiling.shipped import (
    INDEX_JSON,
    REGENERATE_COMMAND,
    SUFFIXES,
    builtin_example_specs,
    traced_files,
)
from advisor.spec import WorkloadSpec, load_workload_spec, parse_workload_spec
from advisor.storage import profile_cache_dir
from advisor.throughput import model_cache
from advisor.throughput._plain import PlainTransferModel
from pricing import load_accelerators

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = builtin_example_specs()
STALE = f"stale: run {REGENERATE_COMMAND} and commit what it writes"


def _shipped(spec: WorkloadSpec, suffix: str) -> Path:
    return _spec_files.SHIPPED_PROFILES_DIR / f"{spec.fingerprint()}{suffix}"


def _no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes "import torch" fail


# --- golden files: what is shipped is what the code makes today -----------------------------


def test_the_shipped_model_has_the_current_key() -> None:
    path = model_cache.shipped_model_file(load_accelerators())
    assert path.is_file(), f"the shipped throughput model is {STALE} (no {path.name})"
    assert [p.name for p in path.parent.glob("throughput-*.pkl")] == [path.name]


def test_the_shipped_profiles_are_those_of_the_builtin_examples() -> None:
    index = json.loads(INDEX_JSON.read_text())
    expected = {spec.fingerprint(): name for name, spec in EXAMPLES.items()}
    assert index["examples"] == expected, f"the shipped profiles are {STALE}"
    shipped = {p.name for p in _spec_files.SHIPPED_PROFILES_DIR.glob("*.json")} - {INDEX_JSON.name}
    assert shipped == {f"{fp}{suffix}" for fp in expected for suffix in SUFFIXES}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_shipped_profile_reads_without_torch(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    spec = EXAMPLES[name]
    _no_torch(monkeypatch)  # an out-of-date file would be traced, which fails without torch
    assert profile_workload(spec).flops_per_sample > 0, f"{name}: shipped profile {STALE}"
    assert cached_op_mix(spec) is not None, f"{name}: shipped operator mix {STALE}"
    assert cached_step_op_names(spec), f"{name}: shipped operator names {STALE}"
    assert not needs_measuring(spec)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_shipped_profile_equals_a_fresh_trace(name: str) -> None:
    torch = pytest.importorskip("torch")
    index = json.loads(INDEX_JSON.read_text())
    if torch.__version__ != index["torch"]:
        pytest.skip(f"shipped from torch {index['torch']}, this is {torch.__version__}")
    spec = EXAMPLES[name]
    fresh = traced_files(spec)
    for suffix in SUFFIXES:
        shipped = json.loads(_shipped(spec, suffix).read_text())
        assert shipped == json.loads(fresh[suffix]), f"{name}{suffix}: {STALE}"


# --- lookup order: the user's cache, the shipped file, tracing ------------------------------

RESNET = EXAMPLES["resnet50.yaml"]


def test_a_user_cache_file_wins_over_the_shipped_profile() -> None:
    path = profile_cache_dir() / f"{RESNET.fingerprint()}.json"
    data = json.loads(_shipped(RESNET, ".json").read_text())
    path.write_text(json.dumps({**data, "flops_per_sample": 42.0}))
    assert profile_workload(RESNET).flops_per_sample == 42.0


def test_a_user_cache_file_wins_over_the_shipped_operator_mix_and_names() -> None:
    mix = json.loads(_shipped(RESNET, ".ops.json").read_text())
    mix["per_sample"] = mix["per_sample"][:1]
    (profile_cache_dir() / f"{RESNET.fingerprint()}.ops.json").write_text(json.dumps(mix))
    names = {"version": 1, "names": ["mine"]}
    (profile_cache_dir() / f"{RESNET.fingerprint()}.opnames.json").write_text(json.dumps(names))
    cached = cached_op_mix(RESNET)
    assert cached is not None and len(cached.per_sample) == 1
    assert cached_step_op_names(RESNET) == frozenset({"mine"})


def test_a_builtin_spec_with_the_same_figures_elsewhere_finds_the_shipped_profile(
        tmp_path: Path) -> None:
    # another name, data size and constraints, in another folder: the same fingerprint
    text = (REPO / "examples" / "resnet50.yaml").read_text()
    mine = tmp_path / "mine.yaml"
    mine.write_text(text.replace("name: resnet50-imagenet", "name: mine")
                    .replace("epochs: 90", "epochs: 3") + "profile: {timeout_s: 60}\n")
    assert not needs_measuring(load_workload_spec(mine))


def test_a_spec_with_other_figures_is_traced() -> None:
    other = parse_workload_spec({"name": "r", "model": {"builtin": "resnet50", "options": {
        "image_size": 224, "num_classes": 1000}}, "batch_size": 128, "precision": "bf16",
        "data": {"samples": 1000}})
    assert needs_measuring(other)
    assert _spec_files.shipped_profile_file(other, ".json") is None


def test_an_entrypoint_is_never_looked_up_among_shipped_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its code is the user's: a file of the same fingerprint would be another model's
    spec = load_workload_spec(REPO / "examples" / "custom" / "model.yaml")
    for suffix in SUFFIXES:
        shutil.copy(_shipped(RESNET, suffix), tmp_path / f"{spec.fingerprint()}{suffix}")
    monkeypatch.setattr(_spec_files, "SHIPPED_PROFILES_DIR", tmp_path)
    assert needs_measuring(spec)
    assert cached_op_mix(spec) is None and cached_step_op_names(spec) is None


def test_without_torch_the_builtin_examples_still_get_their_traced_profile(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _no_torch(monkeypatch)
    assert profile_workload(RESNET).memory_lines  # traced figures, not the install hint


def test_the_shipped_path_imports_no_torch(advisor_home: Path) -> None:
    script = textwrap.dedent(f"""
        import sys
        from advisor.spec import load_workload_spec
        from advisor.profiling import op_mix_for_spec, profile_workload, step_op_names
        spec = load_workload_spec({str(REPO / "examples" / "resnet50.yaml")!r})
        assert profile_workload(spec) and op_mix_for_spec(spec) and step_op_names(spec)
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env={"ADVISOR_HOME": str(advisor_home), "PATH": ""})
    assert out.stdout.strip() == "False"
    assert not any((advisor_home / "profiles").iterdir())  # nothing copied to the cache


def test_step_op_names_of_a_shipped_spec_are_the_shipped_ones() -> None:
    shipped = json.loads(_shipped(RESNET, ".opnames.json").read_text())["names"]
    assert step_op_names(RESNET) == frozenset(shipped)


# --- the shipped model -----------------------------------------------------------------------

SPECS = load_accelerators()


@pytest.fixture()
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """As a new process starts (nothing fitted in memory); fits are recorded, not run."""
    monkeypatch.setattr(model_cache, "_fitted", {})
    fits: list[object] = []

    def fit(*args: object) -> PlainTransferModel:
        fits.append(args)
        return PlainTransferModel()

    monkeypatch.setattr(model_cache, "_fit", fit)
    return fits


def test_a_current_shipped_model_is_loaded_not_fitted(advisor_home: Path,
                                                      fresh_process: list[object],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_cache.subprocess, "Popen", None)  # would fail if called
    assert not model_cache.fit_in_background(SPECS)
    model = model_cache.cached_transfer_model(SPECS)
    assert model.residual_quantiles_ and fresh_process == []
    assert not list(advisor_home.glob("cache/throughput-*.pkl"))  # read where it is shipped


def test_a_stale_shipped_model_is_ignored_and_the_model_refitted(
        tmp_path: Path, fresh_process: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = model_cache.shipped_model_file(SPECS)
    monkeypatch.setattr(model_cache, "SHIPPED_MODEL_DIR", tmp_path)
    shutil.copy(shipped, tmp_path / "throughput-000000000000000000000000.pkl")  # an older key
    model_cache.cached_transfer_model(SPECS)
    assert len(fresh_process) == 1


def test_an_unreadable_shipped_model_is_refitted(tmp_path: Path, fresh_process: list[object],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    name = model_cache.shipped_model_file(SPECS).name
    monkeypatch.setattr(model_cache, "SHIPPED_MODEL_DIR", tmp_path)
    (tmp_path / name).write_bytes(b"not a pickle")
    model_cache.cached_transfer_model(SPECS)
    assert len(fresh_process) == 1


# --- the command a user runs -----------------------------------------------------------------


@pytest.mark.parametrize("example", ["resnet50", "bert", "gpt2", "mlp"])
def test_a_first_recommend_of_an_example_neither_traces_nor_fits(example: str,
                                                                  tmp_path: Path) -> None:
    home = tmp_path / "empty-home"
    report = tmp_path / "modules.json"
    script = textwrap.dedent(f"""
        import atexit, json, sys
        atexit.register(lambda: open({str(report)!r}, "w").write(json.dumps(
            sorted(m for m in ("torch", "sklearn") if m in sys.modules))))
        from cli.main import main
        main(["recommend", {str(REPO / "examples" / f"{example}.yaml")!r}, "--json"])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={"ADVISOR_HOME": str(home), "PATH": "", "COLUMNS": "120"},
                         check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ranked"]
    assert out.stderr == ""  # no "profiling ... with torch" line
    assert json.loads(report.read_text()) == []
    assert not list(home.glob("cache/throughput-*.pkl"))  # no fit, in this process or another
