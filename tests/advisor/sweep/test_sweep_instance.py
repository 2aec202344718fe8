"""instance: recommended charges trials at the top of the model's ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from advisor.errors import AdvisorError, NoFeasibleOffer
from advisor.ranking.service import recommend_for_file
from advisor.sweep.accounting.instances import resolve_instance
from advisor.sweep.spec import load_sweep_spec

MODEL = {"name": "tiny", "model": {"builtin": "mlp"}, "batch_size": 64,
         "data": {"total_samples": 1_000_000},
         "constraints": {"clouds": ["aws"], "spot": "never"},
         # stated, so no torch profiling is needed
         "profile": {"flops_per_sample": 2e6, "params": 100_000, "memory_gib": 1.0}}


def test_recommended_instance_is_the_top_ranked_offer(tmp_path: Path) -> None:
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(MODEL))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
        "study": "s", "entrypoint": "train:objective", "instance": "recommended",
        "model": "model.yaml", "budget": {"max_trials": 1}}))
    choice = resolve_instance(load_sweep_spec(tmp_path / "sweep.yaml"))
    top = recommend_for_file(tmp_path / "model.yaml").ranked[0].offer
    assert choice.offer == top
    assert top.key.startswith("aws:") and top.key.endswith(":on-demand")
    assert choice.price_usd_per_hour == top.price_usd_per_hour


def test_recommended_with_no_feasible_offer_says_so_as_its_own_error(tmp_path: Path) -> None:
    model = {**MODEL, "constraints": {**MODEL["constraints"], "budget_usd": 1e-6}}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(model))
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
        "study": "s", "entrypoint": "train:objective", "instance": "recommended",
        "model": "model.yaml", "budget": {"max_trials": 1}}))
    with pytest.raises(NoFeasibleOffer, match="instance: recommended, but the ranking") as caught:
        resolve_instance(load_sweep_spec(tmp_path / "sweep.yaml"))
    assert caught.value.workload == "tiny" and caught.value.rejected > 0


def test_recommended_with_a_missing_model_names_the_field(tmp_path: Path) -> None:
    # it said "<the model's path>: file: cannot read ...", naming neither sweep.yaml's field
    # nor where a relative path is read from
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
        "study": "s", "entrypoint": "train:objective", "instance": "recommended",
        "model": "models/nope.yaml", "budget": {"max_trials": 1}}))
    with pytest.raises(AdvisorError) as caught:
        resolve_instance(load_sweep_spec(tmp_path / "sweep.yaml"))
    assert str(caught.value) == (
        f"model: 'models/nope.yaml' is not a file (looked for {tmp_path / 'models/nope.yaml'}); "
        "give the path of the model.yaml whose ranking picks the instance, relative to the "
        "sweep.yaml's folder")
