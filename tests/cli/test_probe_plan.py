"""`advisor probe --plan N`: the planner's picks are probed, under the same dollar guard."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from cli.main import advisor
from probes.types import ProbeRequest, ProbeResult, ProbeStatus

# Enough FLOPs per sample that no offer's predicted step hits the 1 ms floor (a floored
# prediction has no interval, so the planner would see nothing worth probing).
MODEL = {"name": "tiny", "model": {"builtin": "mlp"}, "batch_size": 64,
         "data": {"total_samples": 10_000_000}, "constraints": {"clouds": ["aws"]},
         "profile": {"flops_per_sample": 2e10, "params": 100_000, "memory_gib": 1.0}}


def _model(tmp_path: Path) -> str:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(MODEL))
    return str(path)


def test_plan_picks_cloud_offers_and_the_cost_guard_refuses_before_launching(tmp_path: Path) -> None:
    result = CliRunner().invoke(advisor, ["probe", _model(tmp_path), "--plan", "2",
                                          "--max-usd", "0.0001"])
    assert result.exit_code == 2
    planned = [line for line in result.stdout.splitlines() if line.startswith("planned: probe")]
    assert 1 <= len(planned) <= 2 and all(":aws:" not in p and "aws:" in p for p in planned)
    assert result.stderr.startswith("error: these probes may cost $")
    # The planner prices each probe as it will be billed (boot + time box), like the guard.
    planned_usd = sum(float(re.search(r": \$([0-9.]+),", p)[1]) for p in planned)  # type: ignore[index]
    guard_usd = float(re.search(r"cost \$([0-9.]+)", result.stderr)[1])  # type: ignore[index]
    assert planned_usd > 0 and abs(planned_usd - guard_usd) <= 0.006


def test_probe_needs_an_offer_or_a_plan(tmp_path: Path) -> None:
    result = CliRunner().invoke(advisor, ["probe", _model(tmp_path)])
    assert result.exit_code == 2
    assert "give --on OFFER (repeatable) or --plan N" in result.stderr


def test_plan_with_nothing_worth_probing_exits_0_and_launches_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("advisor.ranking.plan_probes", lambda *args, **kwargs: [])
    model = _model(tmp_path)
    result = CliRunner().invoke(advisor, ["probe", model, "--plan", "2"])
    assert result.exit_code == 0, result.stderr
    assert "planned: nothing worth probing" in result.stdout and result.stderr == ""
    as_json = CliRunner().invoke(advisor, ["probe", model, "--plan", "2", "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["probes"] == []


def test_plan_keeps_the_picks_that_fit_the_cap(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # '--plan 2 --max-usd 0.02' planned two probes ($0.012 + $0.014) and then refused both,
    # where the first alone fit
    import cli.probe
    from advisor.ranking.planner import ProbeSuggestion

    picks = [ProbeSuggestion("aws:g4dn.xlarge:us-east-2:spot", "T4", 0.01, 9.0, None),
             ProbeSuggestion("aws:p4d.24xlarge:us-east-1:on-demand", "A100-40GB-SXM", 5.0, 8.0,
                             None),
             ProbeSuggestion("aws:g5.xlarge:us-east-1:spot", "A10G", 0.02, 7.0, None)]
    monkeypatch.setattr("advisor.ranking.plan_probes", lambda *args, **kwargs: picks)
    probed: list[str] = []

    def run(requests: list[ProbeRequest], _launcher_for: object,
            **_kw: object) -> list[ProbeResult]:
        probed.extend(r.offer_key for r in requests)
        return [ProbeResult(probe_id=r.probe_id, offer_key=r.offer_key, stable=True,
                            workload_fingerprint=r.workload_fingerprint, status=ProbeStatus.OK,
                            batch_size=r.recipe.batch_size, samples_per_second=100.0,
                            measured_steps=5, rel_halfwidth=0.01) for r in requests]

    monkeypatch.setattr(cli.probe, "_run_with_progress", run)
    result = CliRunner().invoke(advisor, ["probe", _model(tmp_path), "--plan", "3",
                                          "--max-usd", "1", "--aws-bucket", "b"])
    assert result.exit_code == 0, result.stderr
    assert probed == [picks[0].offer_key, picks[2].offer_key]  # best first, within $1
    assert "planned: 1 more pick left out, over the probe budget of $1.00" in result.stdout
