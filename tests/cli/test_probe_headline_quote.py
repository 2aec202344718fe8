"""The probe the headline quotes is admitted by `advisor probe --max-usd` with that figure."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from advisor.ranking.decision import could_be_better, describe_opportunity, headline
from advisor.ranking.offers import CostAssumptions, Recommendation, cost_of, rank
from advisor.spec import parse_workload_spec
from advisor.throughput.estimate import Basis, ThroughputEstimate
from cli.main import advisor
from pricing import shipped_catalog

MODEL = {"name": "tiny", "model": {"builtin": "mlp"}, "batch_size": 64,
         "data": {"total_samples": 10_000_000},
         "profile": {"flops_per_sample": 2e10, "params": 100_000, "memory_gib": 1.0}}
TPU = "gcp:tpu-v5litepod-1:us-central1:spot"          # the launcher budgets 7 minutes of boot
PICK = "aws:trn1.2xlarge:us-east-2:spot"


def _headline_quote() -> tuple[str, str]:
    """The headline and "could be better" line of a ranking whose challenger is the TPU."""
    offers = {o.key: o for o in shipped_catalog().offers}
    spec = parse_workload_spec(MODEL)
    pick = cost_of(spec, offers[PICK], ThroughputEstimate(900.0, 890.0, 910.0, Basis.MEASURED),
                   CostAssumptions())
    tpu = cost_of(spec, offers[TPU], ThroughputEstimate(1200.0, 300.0, 4800.0, Basis.PRIOR),
                  CostAssumptions())
    ranked, _ = rank(spec, [pick, tpu])
    rec = Recommendation("tiny", offers[PICK].observed_at, tuple(ranked), (),
                         could_be_better=could_be_better(ranked))
    assert rec.ranked[0].offer.key == PICK and rec.could_be_better
    return headline(rec), describe_opportunity(rec.could_be_better[0])


def _probe(tmp_path: Path, max_usd: str) -> tuple[int, str]:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(MODEL))
    result = CliRunner().invoke(advisor, ["probe", str(path), "--on", TPU, "--max-usd", max_usd])
    return result.exit_code, result.stderr


def test_headline_quote_is_accepted_by_max_usd_with_that_figure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_CLOUD_PROJECT", "ADVISOR_GCP_BUCKET"):
        monkeypatch.delenv(name, raising=False)
    line, opportunity = _headline_quote()
    found = re.search(rf"next probe: TPU-v5e on {TPU} for \$([0-9.]+) ", line)
    assert found, line
    quoted = found[1]
    assert f"probe for ${quoted} (--on {TPU})" in opportunity  # "could be better" says the same
    code, err = _probe(tmp_path, quoted)
    # past the dollar guard: it stops only at the missing GCP project (nothing launched)
    assert "may cost" not in err
    assert code == 2 and "gcp-tpu probes need a project" in err
    # the planner's old 4.5-minute figure is refused: the quote is the real boot time
    code, err = _probe(tmp_path, "0.02")
    assert code == 2 and "may cost $0.0266" in err
