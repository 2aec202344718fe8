"""sweep.yaml validation: good files parse; bad ones name the field and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.errors import SpecError
from advisor.sweep.spec import (
    CleanupState,
    Direction,
    Distribution,
    PrunerKind,
    SamplerKind,
    load_sweep_spec,
    parse_sweep_spec,
)

GOOD = {
    "study": "resnet-lr",
    "entrypoint": "train:objective",
    "direction": "maximize",
    "search_space": {
        "lr": {"type": "float", "low": 1e-5, "high": 0.1, "log": True},
        "layers": {"type": "int", "low": 1, "high": 4},
        "bs": {"type": "categorical", "choices": [32, 64]},
    },
    "sampler": {"type": "tpe", "seed": 3, "n_startup_trials": 5},
    "pruner": {"type": "hyperband", "min_resource": 1, "max_resource": 9},
    "budget": {"max_usd": 12.5, "max_trials": 50, "max_hours": 2},
    "instance": "aws:g5.xlarge:us-east-1:spot",
    "artifacts": "s3://bucket/sweeps/x",
    "cleanup": {"keep_best": 2, "states": ["pruned", "completed"]},
}


def test_good_spec_parses_every_field() -> None:
    spec = parse_sweep_spec(GOOD)
    assert spec.direction is Direction.MAXIMIZE
    assert [p.distribution for p in spec.search_space] == [
        Distribution.FLOAT, Distribution.INT, Distribution.CATEGORICAL]
    assert spec.search_space[0].log is True
    assert spec.sampler.kind is SamplerKind.TPE and spec.sampler.seed == 3
    assert spec.pruner.kind is PrunerKind.HYPERBAND
    assert spec.pruner.options == {"min_resource": 1, "max_resource": 9}
    assert spec.budget.max_usd == 12.5 and spec.budget.max_trials == 50
    assert spec.budget.max_consecutive_failures == 5  # the default
    assert spec.cleanup.states == (CleanupState.PRUNED, CleanupState.COMPLETED)


def test_shorthand_pruner_and_defaults() -> None:
    spec = parse_sweep_spec({"study": "s", "entrypoint": "m:f", "pruner": "percentile",
                             "budget": {"max_hours": 1}})
    assert spec.pruner.kind is PrunerKind.PERCENTILE
    assert spec.instance == "local" and spec.price_usd_per_hour == 0
    assert spec.cleanup.keep_best == 3


@pytest.mark.parametrize(("instance", "key"), [
    ("aws:g5.xlarge:us-east-1", "aws:g5.xlarge:us-east-1:on-demand"),  # no market: on-demand
    ("aws:g5.xlarge:us-east-1:spot", "aws:g5.xlarge:us-east-1:spot"),
])
def test_instance_keys_follow_the_shared_offer_key_rule(instance: str, key: str) -> None:
    assert parse_sweep_spec(_with(instance=instance)).instance == key


def test_load_remembers_folder(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("study: s\nentrypoint: 'm:f'\nbudget: {max_trials: 1}\n")
    assert load_sweep_spec(path).source_dir == str(tmp_path.resolve())


def _with(**changes: object) -> dict[str, object]:
    data = {k: v for k, v in GOOD.items()}
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize(("data", "field", "words"), [
    # a required key is missing
    (_with(study=None), "study", "required"),
    # entrypoint without a colon
    (_with(entrypoint="train.objective"), "entrypoint", "package.module:function"),
    # unknown top-level key, with a suggestion
    (_with(budgett={}), "budgett", "did you mean 'budget'"),
    # negative dollar cap
    (_with(budget={"max_usd": -1}), "budget.max_usd", "greater than 0"),
    # max_trials must be whole
    (_with(budget={"max_trials": 2.5}), "budget.max_trials", "whole number"),
    # string where a number belongs
    (_with(budget={"max_hours": "two"}), "budget.max_hours", "must be a number"),
    # no cap at all: the sweep would never stop
    (_with(budget={}), "budget", "set at least one of max_usd, max_trials or max_hours"),
    # no budget key either
    (_with(budget=None), "budget", "e.g. 'budget: {max_trials: 50}'"),
    # only a failure limit is not a cap
    (_with(budget={"max_consecutive_failures": 3}), "budget", "at least one of"),
    # the failure limit must be a positive whole number
    (_with(budget={"max_trials": 5, "max_consecutive_failures": 0}),
     "budget.max_consecutive_failures", "greater than 0"),
    # unknown pruner
    (_with(pruner={"type": "early"}), "pruner.type", "one of none, median"),
    # an option the pruner does not take, listing the ones it does
    (_with(pruner={"type": "median", "max_resource": 3}), "pruner.max_resource",
     "n_warmup_steps"),
    # percentile outside 0..100
    (_with(pruner={"type": "percentile", "percentile": 150}), "pruner.percentile", "between 0"),
    # log range starting at 0
    (_with(search_space={"lr": {"type": "float", "low": 0, "high": 1, "log": True}}),
     "search_space.lr.low", "log: true"),
    # high below low
    (_with(search_space={"lr": {"type": "float", "low": 1, "high": 0.5}}),
     "search_space.lr.high", "greater than low"),
    # empty categorical
    (_with(search_space={"bs": {"type": "categorical", "choices": []}}),
     "search_space.bs.choices", "non-empty list"),
    # grid over a float range without step
    (_with(sampler="grid"), "search_space.lr", "step"),
    # malformed offer key
    (_with(instance="g5.xlarge"), "instance", "offer key"),
    # recommended without a model.yaml
    (_with(instance="recommended"), "model", "required with instance: recommended"),
    # price only for local instances
    (_with(price_usd_per_hour=3.0), "price_usd_per_hour", "only for instance: local"),
    # s3 URL without a bucket
    (_with(artifacts="s3://"), "artifacts", "needs a bucket"),
    # unknown cleanup state
    (_with(cleanup={"states": ["running"]}), "cleanup.states", "pruned, failed or completed"),
    # negative keep_best
    (_with(cleanup={"keep_best": -1}), "cleanup.keep_best", "0 or more"),
    # bad study name
    (_with(study="my study!"), "study", "letters, digits"),
])
def test_bad_spec_names_field(data: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_sweep_spec(data, source="sweep.yaml")
    assert info.value.field == field
    assert words in str(info.value)
    assert str(info.value).startswith("sweep.yaml: ")


_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(
    max_size=8)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
    st.sampled_from(["type", "low", "high", "max_usd", "choices", "keep_best", "x"]), inner,
    max_size=3), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(GOOD) + ["price_usd_per_hour", "workers", "zz"]),
                       _values, max_size=6))
def test_fuzzed_yaml_gives_spec_or_spec_error(data: dict[str, object]) -> None:
    merged = {**GOOD, **data}
    try:
        parse_sweep_spec(merged)
    except SpecError as exc:
        assert exc.field


def test_a_missing_required_key_is_not_blamed_on_a_valid_sibling() -> None:
    # 'log' is a key of its own, not 'low' misspelt: the hint for misspelt required keys
    # ('batch_size: is required; is 'batch_sise' a misspelling of it?') stays out of it
    data = _with(search_space={"lr": {"type": "float", "high": 0.1, "log": True}})
    with pytest.raises(SpecError) as info:
        parse_sweep_spec(data, source="sweep.yaml")
    assert str(info.value) == "sweep.yaml: search_space.lr.low: is required"
