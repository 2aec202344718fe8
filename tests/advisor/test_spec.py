"""model.yaml -> WorkloadSpec: valid files parse, bad ones name the field and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.errors import SpecError
from advisor.spec import (
    DEFAULT_CHECKPOINT_MINUTES,
    Precision,
    SpotPolicy,
    load_workload_spec,
    parse_workload_spec,
)
from pricing import Cloud

VALID: dict[str, Any] = {
    "name": "resnet50-imagenet",
    "model": {"builtin": "resnet50", "options": {"image_size": 224}},
    "batch_size": 256,
    "precision": "bf16",
    "data": {"samples": 1281167, "epochs": 90},
    "constraints": {
        "budget_usd": 3000, "deadline_hours": 72, "clouds": ["aws", "gcp"],
        "regions": ["us-east-1"], "accelerators": {"exclude": ["K80"]},
        "max_accelerators": 8, "spot": "allowed",
    },
    "probes": {"max_usd": 10},
}


def _with(path: str, value: Any) -> dict[str, Any]:
    """VALID with one dotted field replaced (or deleted when value is ...)."""
    data = yaml.safe_load(yaml.safe_dump(VALID))
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node[key]
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data


def test_valid_spec_parses_every_field() -> None:
    spec = parse_workload_spec(VALID)
    assert spec.total_samples == 1281167 * 90
    assert spec.precision is Precision.BF16
    assert spec.constraints.clouds == (Cloud.AWS, Cloud.GCP)
    assert spec.constraints.spot is SpotPolicy.ALLOWED
    assert spec.constraints.accelerators_exclude == ("K80",)
    assert spec.model.options == {"image_size": 224}


@pytest.mark.parametrize(("value", "minutes"), [
    (..., DEFAULT_CHECKPOINT_MINUTES),  # left out: the stated default
    (10, 10.0),                         # a whole number of minutes
    (7.5, 7.5),                         # fractions are fine
])
def test_checkpoint_minutes_defaults_and_parses(value: Any, minutes: float) -> None:
    spec = parse_workload_spec(_with("checkpoint_minutes", value) if value is not ... else VALID)
    assert spec.checkpoint_minutes == minutes
    assert isinstance(spec.checkpoint_minutes, float)


def test_checkpoint_minutes_is_not_in_the_fingerprint() -> None:
    base = parse_workload_spec(VALID).fingerprint()
    assert parse_workload_spec(_with("checkpoint_minutes", 5)).fingerprint() == base


def test_total_samples_form() -> None:
    spec = parse_workload_spec(_with("data", {"total_samples": 1000}))
    assert spec.total_samples == 1000


@pytest.mark.parametrize(("epochs", "total"), [
    (0.5, 30000),       # half an epoch is half the samples, not 0
    (1.5, 90000),       # not truncated to 1 epoch
    (2.00001, 120001),  # rounded to whole samples
    (3, 180000),        # whole epochs as before
])
def test_fractional_epochs_scale_the_samples(epochs: float, total: int) -> None:
    spec = parse_workload_spec(_with("data", {"samples": 60000, "epochs": epochs}))
    assert spec.total_samples == total


def test_epochs_too_small_for_one_sample_names_epochs() -> None:
    with pytest.raises(SpecError, match="data.epochs: samples x epochs must be at least 1"):
        parse_workload_spec(_with("data", {"samples": 3, "epochs": 0.1}))


def _readme_block(heading: str) -> str:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split(f"## {heading}\n", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_readme_model_yaml_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(_readme_block("model.yaml"))
    spec = load_workload_spec(path)
    assert spec.profile.flops_per_sample == 2.45e10  # YAML 1.1 reads 2.45e10 as a string
    assert spec.total_samples == 1281167 * 90


def test_fingerprint_ignores_name_and_constraints_but_not_batch() -> None:
    base = parse_workload_spec(VALID).fingerprint()
    assert parse_workload_spec(_with("name", "other")).fingerprint() == base
    assert parse_workload_spec(_with("constraints.budget_usd", 1)).fingerprint() == base
    assert parse_workload_spec(_with("batch_size", 128)).fingerprint() != base


# Stored probe results are found by this fingerprint: a change to it (a new field in ModelRef
# or ProfileOverride, another JSON encoding) orphans every probe a user stored for the same
# model.yaml, and recommend would silently go back to predictions. Change these only with a
# way for the old fingerprints to keep matching.
@pytest.mark.parametrize(("example", "fingerprint"), [
    ("resnet50.yaml", "1dcfc79a75377830"),
    ("bert.yaml", "f27414ee9bbf550e"),
    ("gpt2.yaml", "6f7b47bf06056b51"),
    ("mlp.yaml", "ec684929b8117963"),
    ("custom/model.yaml", "9fa14d4baf29271b"),
])
def test_an_unchanged_model_yaml_keeps_its_fingerprint(example: str, fingerprint: str) -> None:
    examples = Path(__file__).resolve().parents[2] / "examples"
    assert load_workload_spec(examples / example).fingerprint() == fingerprint


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("batch_size", -5, "batch_size: must be greater than 0, got -5"),
        ("batch_size", 2.5, "batch_size: must be a whole number"),
        ("batch_size", "big", "batch_size: must be a whole number, got str"),
        ("precision", "fp8", "precision: must be one of fp32, tf32, bf16, fp16"),
        ("constraints.budget_usd", 0, "constraints.budget_usd: must be greater than 0"),
        ("constraints.spot", "sometimes", "constraints.spot: must be one of never, allowed, only"),
        ("constraints.clouds", ["oracle"], "constraints.clouds: unknown cloud 'oracle'"),
        ("constraints.regionz", ["x"], "constraints.regionz: unknown key; did you mean 'regions'"),
        ("model.builtin", "resnet51", "model.builtin: unknown model 'resnet51'"),
        ("model", {"entrypoint": "not a path"}, "model.entrypoint: must look like"),
        ("model", {}, "model: give exactly one of"),
        ("data", {"epochs": 3}, "data.samples: is required"),
        ("name", ..., "name: is required"),
        ("batch_size", float("nan"), "batch_size: must be a finite number"),
        ("data.epochs", True, "data.epochs: must be a number, got bool"),
        ("constraints.\n", None, "constraints.'\\n': unknown key"),  # a key with a newline
        ("checkpoint_minutes", 0, "checkpoint_minutes: must be greater than 0, got 0"),
        ("checkpoint_minutes", 20_000, "checkpoint_minutes: must be at most 10,080"),  # > a week
        ("checkpoint_minutes", "often", "checkpoint_minutes: must be a number, got str"),
    ],
)
def test_bad_field_is_named_with_the_fix(path: str, value: Any, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_workload_spec(_with(path, value))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "model.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match=r"model.yaml: file: not valid YAML at line"):
        load_workload_spec(bad)
    with pytest.raises(SpecError, match="cannot read"):
        load_workload_spec(tmp_path / "missing.yaml")


def test_load_remembers_the_folder_for_entrypoints(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(VALID))
    assert load_workload_spec(path).source_dir == str(tmp_path.resolve())


yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=True)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
field_paths = st.sampled_from([
    "name", "batch_size", "precision", "data", "data.samples", "data.epochs", "model",
    "model.builtin", "model.options", "constraints", "constraints.budget_usd",
    "constraints.clouds", "constraints.regions", "constraints.accelerators",
    "constraints.max_accelerators", "constraints.spot", "probes", "unknown_key",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=field_paths, value=yaml_values)
def test_fuzzed_fields_either_parse_or_raise_one_spec_error(path: str, value: Any) -> None:
    try:
        data = _with(path, value)
    except (TypeError, KeyError):
        return  # the parent of the path was replaced by a non-mapping; covered elsewhere
    try:
        parse_workload_spec(data)
    except SpecError as exc:
        assert str(exc).split(":")[0] and "\n" not in str(exc)


@pytest.mark.parametrize(
    ("required", "typo"),
    [
        ("batch_size", "batch_sise"),  # a letter off
        ("model", "modle"),  # two letters swapped
        ("data", "Data"),  # the case
    ],
)
def test_a_misspelt_required_key_is_named_as_the_likely_typo(required: str, typo: str) -> None:
    data = _with(required, ...)
    data[typo] = VALID[required]
    with pytest.raises(SpecError) as info:
        parse_workload_spec(data)
    assert str(info.value) == f"{required}: is required; is {typo!r} a misspelling of it?"


@pytest.mark.parametrize(
    ("accelerators", "message"),
    [
        ({"include": ["H100"], "exclude": ["H100"]}, "'H100' is in both include and exclude"),
        ({"include": ["a100", "T4"], "exclude": ["A100"]}, "'a100' is in both include and exclude"),
    ],
)
def test_an_accelerator_both_included_and_excluded_is_refused(
        accelerators: dict[str, list[str]], message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_workload_spec(_with("constraints.accelerators", accelerators))
    assert str(info.value).startswith(f"constraints.accelerators: {message}")
    assert "remove it from one" in str(info.value)



@pytest.mark.parametrize("accelerators", ["H100", ["H100"], {"include": "H100"}])
def test_one_accelerator_name_is_the_include_shorthand_as_a_list_is(accelerators: Any) -> None:
    # regions: us-east-1 and clouds: gcp take one name; accelerators: H100 was refused
    spec = parse_workload_spec(_with("constraints.accelerators", accelerators))
    assert spec.constraints.accelerators_include == ("H100",)
