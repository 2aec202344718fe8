"""Limits at the edge of model.yaml and sweep.yaml: the shared YAML loader's bounds (size,
aliases, depth, duplicate keys), numbers bounded by what hardware could mean, names printed
safely, and a fuzz that puts aliases, deep nesting and huge numbers anywhere.

"Fast" is asserted as bounded work, not seconds (``tests.work_budget``)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor._yaml import MAX_DEPTH, MAX_VALUES, load_yaml_mapping, shown
from advisor.errors import SpecError
from advisor.spec import load_workload_spec, parse_workload_spec
from advisor.sweep.spec import load_sweep_spec, parse_sweep_spec
from probes.models import OPTIONS, ModelOptionError, check_builtin_options
from tests.work_budget import at_most_calls

GOOD_MODEL: dict[str, Any] = {"name": "m", "model": {"builtin": "mlp"}, "batch_size": 8,
                              "data": {"total_samples": 100}}
GOOD_SWEEP: dict[str, Any] = {"study": "s", "entrypoint": "train:objective",
                              "budget": {"max_trials": 3}}
LOL = "[lol, lol, lol, lol, lol, lol, lol, lol, lol]"
BOMB = "[" + f"&a {LOL}, " + ", ".join(
    f"&{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)
) + "]"


# Call budgets: about 10x what the loads take here (the bomb alone refused after 8.8k calls;
# the fuzz's dearest spec, 38k), far below any expansion of the bomb (9^9 values)
_BOMB_CALLS = 100_000
_SPEC_CALLS = 500_000


def _load(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return load_yaml_mapping(path)


def _error(tmp_path: Path, text: str) -> SpecError:
    with pytest.raises(SpecError) as info:
        _load(tmp_path, text)
    return info.value


# --- the loader -------------------------------------------------------------------------------

def test_small_aliases_and_merge_keys_still_work(tmp_path: Path) -> None:
    text = "base: &b {lr: 1, wd: 2}\ncopy: *b\nmerged:\n  <<: *b\n  wd: 3\n"
    assert _load(tmp_path, text) == {"base": {"lr": 1, "wd": 2}, "copy": {"lr": 1, "wd": 2},
                                     "merged": {"lr": 1, "wd": 3}}


def test_an_alias_bomb_is_refused_fast_naming_where(tmp_path: Path) -> None:
    with at_most_calls(_BOMB_CALLS):
        error = _error(tmp_path, f"name: {BOMB}\n")
    assert error.field == "name[5]"
    assert error.problem.startswith(f"holds more than {MAX_VALUES:,} values at line 1 once its "
                                    "YAML aliases are expanded (an alias bomb)")


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    error = _error(tmp_path, "a: &x [1, *x]\n")
    assert (error.field, error.problem) == (
        "a[1]", "alias *x at line 1 is inside its own anchor; a value cannot contain itself")


def test_a_huge_plain_list_is_refused_without_mentioning_aliases(tmp_path: Path) -> None:
    error = _error(tmp_path, "a: [" + "1," * (MAX_VALUES + 1) + "1]\n")
    assert error.field == "a" and "alias" not in error.problem


@pytest.mark.parametrize(("depth", "ok"), [
    (MAX_DEPTH - 2, True),  # the limit counts the top mapping and the key's own level
    (MAX_DEPTH, False),
    (20_000, False),  # was a 3,000-line RecursionError
])
def test_nesting_is_bounded(tmp_path: Path, depth: int, ok: bool) -> None:
    text = "a: " + "[" * depth + "]" * depth + "\n"
    if ok:
        assert "a" in _load(tmp_path, text)
    else:
        error = _error(tmp_path, text)
        assert error.field == "a" and error.problem.startswith(f"nests deeper than {MAX_DEPTH}")


@pytest.mark.parametrize(("text", "field", "lines"), [
    # top level
    ("a: 1\nb: 2\na: 3\n", "a", "(lines 1 and 3)"),
    # nested, flow style
    ("data: {samples: 1, samples: 2}\n", "data.samples", "(lines 1 and 1)"),
])
def test_duplicate_keys_are_an_error(tmp_path: Path, text: str, field: str, lines: str) -> None:
    error = _error(tmp_path, text)
    assert error.field == field and lines in error.problem and error.problem.endswith("keep one")


def test_a_file_over_one_mib_is_refused_before_reading(tmp_path: Path) -> None:
    error = _error(tmp_path, "a: 1\n" + "#" * (1024 * 1024))
    assert error.field == "file" and "limited to 1 MiB" in error.problem


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="file: is a directory; give the path of a YAML file"):
        load_yaml_mapping(tmp_path)


@pytest.mark.parametrize(("value", "text"), [
    ("x" * 1000, "'" + "x" * 27 + "..." + "x" * 28 + "'"),  # long: the middle cut
    ("\x1b[31mred", "'\\x1b[31mred'"),  # terminal escape: escaped
    ([[[[1]]]], "[[[...]]]"),  # deep: elided
    (list(range(1000)), "[0, 1, 2, 3, ...]"),  # long list: elided
])
def test_shown_is_short_and_escaped(value: object, text: str) -> None:
    assert shown(value) == text


# --- numbers and names in model.yaml ----------------------------------------------------------

def _model(**changes: Any) -> dict[str, Any]:
    data = yaml.safe_load(yaml.safe_dump(GOOD_MODEL))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return data


@pytest.mark.parametrize(("changes", "field", "says"), [
    # a batch no accelerator could hold
    ({"batch_size": 2**24 + 1}, "batch_size", "must be at most 16,777,216"),
    # an integer too big for a float
    ({"batch_size": 10**400}, "batch_size", "must be at most 16,777,216"),
    # samples x epochs past the bound
    ({"data": {"samples": 10**14, "epochs": 100}}, "data.epochs", "samples x epochs"),
    # epochs alone
    ({"data": {"samples": 10, "epochs": 1e300}}, "data.epochs", "must be at most 1,000,000"),
    # total_samples
    ({"data": {"total_samples": 1e300}}, "data.total_samples", "must be at most 1e+15"),
    # budget
    ({"constraints__budget_usd": 1e300}, "constraints.budget_usd", "must be at most 1e+09"),
    # deadline
    ({"constraints__deadline_hours": 1e12}, "constraints.deadline_hours", "at most 100,000"),
    # empty regions: nothing would match
    ({"constraints__regions": []}, "constraints.regions", "give at least one region"),
    # an accelerator name with a control character
    ({"constraints__accelerators": ["H100\x07"]}, "constraints.accelerators.include",
     "control character '\\x07'"),
    # profile override too large
    ({"profile__params": 10**20}, "profile.params", "must be at most 1e+14"),
    # unknown built-in option, named under model.options
    ({"model__options": {"hiden": 3}}, "model.options", "'hiden' is not known for mlp"),
    # a whole-number option given as text
    ({"model__options": {"layers": "many"}}, "model.options.layers", "whole number"),
])
def test_model_fields_are_bounded(changes: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_workload_spec(_model(**changes))
    assert info.value.field == field and says in info.value.problem, str(info.value)


def test_the_largest_allowed_values_still_parse() -> None:
    spec = parse_workload_spec(_model(batch_size=2**24, constraints__max_accelerators=1024,
                                      data={"samples": 10**9, "epochs": 1000}))
    assert (spec.batch_size, spec.constraints.max_accelerators, spec.total_samples) == (
        2**24, 1024, 10**12)


@pytest.mark.parametrize("model", sorted(OPTIONS))
def test_every_builtin_bounds_its_whole_number_options(model: str) -> None:
    table = OPTIONS[model]
    for name, top in table.maximum.items():
        assert check_builtin_options(model, {name: top})[name] == top
        with pytest.raises(ModelOptionError) as info:
            check_builtin_options(model, {name: top + 1})
        assert info.value.option == name and f"must be at most {top:,}" in info.value.problem


# --- sweep.yaml -------------------------------------------------------------------------------

@pytest.mark.parametrize(("changes", "field", "says"), [
    # more workers than any machine
    ({"workers": 10**6}, "workers", "must be at most 1,024"),
    # a heartbeat longer than a day
    ({"heartbeat_s": 10**9}, "heartbeat_s", "must be at most 86,400"),
    # budget
    ({"budget": {"max_usd": 1e300}}, "budget.max_usd", "must be at most 1e+09"),
    # a grid of 10**12 points
    ({"sampler": "grid", "search_space": {"n": {"type": "int", "low": 0, "high": 10**12}}},
     "search_space.n", "more than 1,000,000 points"),
    # too many categorical values
    ({"search_space": {"c": {"type": "categorical", "choices": list(range(10_001))}}},
     "search_space.c.choices", "at most 10,000"),
    # a parameter name with a control character
    ({"search_space": {"lr\x1b": {"type": "float", "low": 0, "high": 1}}},
     "search_space.'lr\\x1b'", "control character"),
    # a study name with a terminal escape, printed escaped
    ({"study": "\x1b[31ms"}, "study", "'\\x1b[31ms'"),
])
def test_sweep_fields_are_bounded(changes: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_sweep_spec({**GOOD_SWEEP, **changes})
    assert info.value.field == field and says in info.value.problem, str(info.value)


# --- fuzz: aliases, nesting and huge numbers anywhere -------------------------------------------

_SCALARS = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20), st.booleans(),
    st.sampled_from(["1e308", "-1e308", "1e29", ".inf", ".nan", "0x7fffffffffffffff", "~"]),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
_MODEL_FIELDS = ["name", "batch_size", "precision", "data.samples", "data.epochs",
                 "data.total_samples", "constraints.clouds", "constraints.max_accelerators",
                 "constraints.budget_usd", "model.options", "model.builtin", "profile.params"]
_SWEEP_FIELDS = ["study", "workers", "budget.max_usd", "search_space.p.choices",
                 "search_space.p.low", "sampler.seed", "pruner", "cleanup.keep_best"]


def _spliced(good: dict[str, Any], field: str, value: object, shape: str, depth: int) -> str:
    """``good`` as YAML with ``value`` at ``field``, plain, behind a small alias, inside an
    alias bomb, or nested ``depth`` lists deep."""
    data = yaml.safe_load(yaml.safe_dump(good))
    *parents, last = field.split(".")
    node = data
    for key in parents:
        node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else {}
    node[last] = "PLACEHOLDER"
    text = yaml.safe_dump(value, default_flow_style=True, width=10**9).strip()
    text = text.removesuffix("...").strip()
    spliced = {"plain": text, "alias": f"&v {text}", "bomb": BOMB,
               "deep": "[" * depth + text + "]" * depth}[shape]
    body = yaml.safe_dump(data, default_flow_style=True, width=10**9)
    reuse = "\nagain: *v\n" if shape == "alias" else "\n"
    return body.replace("PLACEHOLDER", spliced, 1).rstrip() + reuse


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sweep=st.booleans(), index=st.integers(min_value=0, max_value=len(_MODEL_FIELDS) - 1),
    value=_VALUES, shape=st.sampled_from(["plain", "alias", "bomb", "deep"]),
    depth=st.integers(min_value=1, max_value=5000),
)
def test_any_value_anywhere_gives_a_spec_or_one_short_error_line(
    tmp_path: Path, sweep: bool, index: int, value: object, shape: str, depth: int,
) -> None:
    fields = _SWEEP_FIELDS if sweep else _MODEL_FIELDS
    good = GOOD_SWEEP if sweep else GOOD_MODEL
    path = tmp_path / "fuzz.yaml"
    path.write_text(_spliced(good, fields[index % len(fields)], value, shape, depth))
    # the shape that could expand (counting calls slows a load about 3x: not on the others;
    # deep nesting is refused at MAX_DEPTH, its work bounded in tests/cli/test_bad_input.py)
    budget = at_most_calls(_SPEC_CALLS) if shape == "bomb" else nullcontext()
    try:
        with budget:
            (load_sweep_spec if sweep else load_workload_spec)(path)
    except SpecError as exc:
        message = str(exc)
        assert "\n" not in message and "\x1b" not in message
        assert len(message) < 250 + len(str(path)), message
