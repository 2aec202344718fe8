"""The sampler and pruner option tables of sweep.yaml agree with the Optuna classes they feed."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from advisor.errors import SpecError
from advisor.sweep.spec import PrunerKind, SamplerKind, parse_sweep_spec
from advisor.sweep.spec.sampling import make_pruner, make_sampler
from advisor.sweep.spec.search_space import _PRUNER_OPTIONS, _SAMPLER_OPTIONS

# A valid value of each kind of option the tables name.
VALUES: dict[str, Any] = {"int": 3, "int0": 0, "bool": True, "percent": 50.0,
                          "probability": 0.5}


def _spec(**fields: Any) -> dict[str, Any]:
    space = {"x": {"type": "float", "low": 0.0, "high": 1.0, "step": 0.5}}
    return {"study": "s", "entrypoint": "m:f", "search_space": space,
            "budget": {"max_trials": 1}, **fields}


@pytest.mark.parametrize("kind", list(PrunerKind))
def test_every_pruner_option_reaches_optuna(kind: PrunerKind) -> None:
    options = {name: VALUES[what] for name, what in _PRUNER_OPTIONS[kind].items()}
    spec = parse_sweep_spec(_spec(pruner={"type": str(kind), **options}))
    assert spec.pruner.options == options
    assert isinstance(make_pruner(spec), optuna.pruners.BasePruner)


@pytest.mark.parametrize("kind", list(SamplerKind))
def test_every_sampler_option_reaches_optuna(kind: SamplerKind) -> None:
    options = {name: VALUES[what] for name, what in _SAMPLER_OPTIONS[kind].items()}
    spec = parse_sweep_spec(_spec(sampler={"type": str(kind), "seed": 7, **options}))
    assert (spec.sampler.seed, spec.sampler.options) == (7, options)
    assert isinstance(make_sampler(spec), optuna.samplers.BaseSampler)


@pytest.mark.parametrize(("fields", "field", "words"), [
    # zero where a pruner needs one or more
    ({"pruner": {"type": "median", "interval_steps": 0}}, "pruner.interval_steps",
     "greater than 0"),
    # a p-value of 1 prunes nothing: probabilities are exclusive of 0 and 1
    ({"pruner": {"type": "wilcoxon", "p_threshold": 1}}, "pruner.p_threshold",
     "between 0 and 1 (exclusive)"),
    # a sampler that takes no options says so
    ({"sampler": {"type": "random", "n_startup_trials": 5}}, "sampler.n_startup_trials",
     "options of the random sampler: none"),
    # a seed outside numpy's range
    ({"sampler": {"type": "tpe", "seed": -1}}, "sampler.seed", "0 or more"),
])
def test_a_bad_search_option_names_the_field(fields: dict[str, Any], field: str,
                                             words: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_sweep_spec(_spec(**fields))
    assert info.value.field == field and words in info.value.problem, str(info.value)
