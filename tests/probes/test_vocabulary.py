"""The shared words of probes: one Precision, one list of device kinds, one entrypoint form."""

from __future__ import annotations

import json

import pytest
from probe_helpers import make_request, ok_result

from probes.errors import ProbeError
from probes.models import BUILTIN, BUILTIN_MODELS, OPTIONS
from probes.types import ProbeResult
from probes.vocabulary import ENTRYPOINT_PATTERN, DeviceKind, Precision
from probes.workload import WorkloadRecipe


def test_advisor_spec_and_the_knobs_use_the_one_precision() -> None:
    import advisor
    from advisor.spec import Precision as SpecPrecision

    assert SpecPrecision is Precision
    assert advisor.Precision is Precision


def test_precision_fields_are_the_enum_and_serialize_as_the_same_strings() -> None:
    request = make_request()
    result = ok_result(request)
    assert result.precision is Precision.FP32
    assert request.recipe.precision is Precision.FP32
    assert json.loads(result.to_json())["precision"] == "fp32"
    assert request.recipe.to_dict()["precision"] == "fp32"
    assert WorkloadRecipe.from_dict({**request.recipe.to_dict(), "precision": "bf16"}).precision \
        is Precision.BF16
    assert ProbeResult.from_json(result.to_json()).precision is Precision.FP32


def test_a_recipe_with_an_unknown_precision_names_the_field() -> None:
    with pytest.raises(ProbeError, match="precision 'fp8' is not one of fp32, tf32, bf16, fp16"):
        WorkloadRecipe.from_dict({**make_request().recipe.to_dict(), "precision": "fp8"})


def test_builtin_names_are_the_option_tables_and_the_builders() -> None:
    assert BUILTIN_MODELS == ("resnet50", "bert", "gpt2", "mlp")
    assert set(BUILTIN) == set(OPTIONS) == set(BUILTIN_MODELS)


def test_device_kinds_are_tried_rarest_first_and_the_cpu_last() -> None:
    from probes.devices import DEVICE_KINDS

    assert tuple(DeviceKind) == DEVICE_KINDS
    assert [str(k) for k in DEVICE_KINDS] == ["hpu", "neuron", "xla", "cuda", "cpu"]


@pytest.mark.parametrize(("text", "ok"), [
    ("mypkg.train:build", True),     # package.module:function
    ("train:build", True),           # a top-level module
    ("mypkg.train", False),          # no function
    ("mypkg.train:build:x", False),  # two colons
    ("1pkg:build", False),           # not an identifier
])
def test_entrypoint_pattern(text: str, ok: bool) -> None:
    assert bool(ENTRYPOINT_PATTERN.match(text)) is ok
