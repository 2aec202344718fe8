"""Every example model.yaml runs through `advisor recommend` as a user would run it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.throughput.reference import load_reference
from cli.main import advisor
from pricing import load_accelerators

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL_FILES = sorted(p for p in EXAMPLES.rglob("*.yaml") if "sweep" not in p.parts[-2])


def _recommend_json(path: Path) -> dict[str, object]:
    result = CliRunner().invoke(advisor, ["recommend", str(path), "--json"])
    # 1: nothing ranks (mlp_oom.yaml, made to fit nowhere); the JSON is whole either way
    assert result.exit_code == (1 if path.name == "mlp_oom.yaml" else 0), result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_every_model_example_is_found() -> None:
    names = {p.relative_to(EXAMPLES).as_posix() for p in MODEL_FILES}
    assert {"resnet50.yaml", "bert.yaml", "gpt2.yaml", "mlp.yaml", "custom/model.yaml"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_example_recommends(path: Path) -> None:
    data = _recommend_json(path)
    ranked, rejected = data["ranked"], data["rejected"]
    assert isinstance(ranked, list) and isinstance(rejected, list)
    if path.name == "mlp_oom.yaml":  # made not to fit anywhere: every offer says why
        assert ranked == [] and all("GiB" in r["reason"] or "accelerators" in r["reason"]
                                    or "constraints" in r["reason"] or "price" in r["reason"]
                                    or "inference" in r["reason"] for r in rejected)
    else:
        assert ranked, "no offer ranked"


@pytest.mark.slow
def test_resnet50_ranking_covers_clouds_and_matches_reference_measurements() -> None:
    data = _recommend_json(EXAMPLES / "resnet50.yaml")
    ranked = data["ranked"]
    assert isinstance(ranked, list) and len(ranked) >= 40
    assert {r["cloud"] for r in ranked} >= {"aws", "gcp"}
    accelerators = {r["accelerator"] for r in ranked}
    assert "H100-SXM" in accelerators and any(a.startswith("TPU") for a in accelerators)
    # Plausibility: the built-in ResNet-50 is the reference ResNet-50, so where Lambda measured
    # it (mixed precision, one GPU), the prediction for a single-GPU offer should be close.
    # Only on parts with bf16: the example trains in bf16, which a V100 or T4 does not run as
    # the reference's fp16 mixed precision (predicted as fp32 there, about half as fast; V100
    # offers rank when that figure meets the example's deadline).
    bf16 = {a.name for a in load_accelerators().values() if a.supports_bf16}
    measured = {r.accelerator: r.samples_per_second for r in load_reference()
                if r.model == "resnet50" and r.precision == "mixed" and r.accelerator_count == 1
                and r.accelerator in bf16}
    singles = {r["accelerator"]: r["samples_per_second"] for r in ranked
               if r["accelerator_count"] == 1 and r["accelerator"] in measured}
    assert singles, "no single-GPU offer with a reference measurement was ranked"
    for accelerator, predicted in singles.items():
        assert predicted == pytest.approx(measured[accelerator], rel=0.3), accelerator
