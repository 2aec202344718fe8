"""Stored probes feed recommend: cloud probes become measurements, local ones advice."""

from __future__ import annotations

from pathlib import Path

import yaml

from advisor.evidence import evidence_from_probes
from advisor.service import recommend_for_file
from advisor.spec import load_workload_spec
from advisor.storage import default_storage_url
from advisor.throughput import Basis
from pricing import shipped_catalog
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

SPEC = {"name": "tiny", "model": {"builtin": "mlp"}, "batch_size": 64,
        "data": {"total_samples": 1_000_000},
        "profile": {"flops_per_sample": 2e6, "params": 100_000, "memory_gib": 1.0}}


def _ok(offer_key: str, sps: float, *, input_ratio: float | None = None) -> ProbeResult:
    return ProbeResult(probe_id=f"p-{offer_key}", offer_key=offer_key, workload_fingerprint="fp",
                       status=ProbeStatus.OK, batch_size=64, samples_per_second=sps,
                       measured_steps=30, stable=True, input_bound_ratio=input_ratio)


def test_cloud_probe_is_a_measurement_and_local_probe_is_advice() -> None:
    evidence = evidence_from_probes(
        [_ok("aws:g5.xlarge:us-east-1:spot", 900.0), _ok("local", 50.0, input_ratio=2.0)],
        shipped_catalog())
    assert [(m.accelerator, m.samples_per_second) for m in evidence.measurements] == [("A10G", 900.0)]
    assert any("measured on local" in line for line in evidence.advice)
    assert any("input pipeline is the bottleneck" in line for line in evidence.advice)
    assert [p["used_for_ranking"] for p in evidence.probes] == [True, False]


def test_recommend_uses_stored_probes_of_the_same_workload(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    assert recommend_for_file(path).extra.get("probes") is None  # no store yet: none created
    assert not Path(default_storage_url().removeprefix("sqlite:///")).exists()
    store = ProbeStore(default_storage_url())
    fingerprint = load_workload_spec(path).fingerprint()
    store.record(ProbeResult(probe_id="p1", offer_key="aws:g5.xlarge:us-east-1:on-demand",
                             workload_fingerprint=fingerprint, status=ProbeStatus.OK,
                             batch_size=64, samples_per_second=4321.0, measured_steps=30))
    rec = recommend_for_file(path)
    g5 = [e for e in rec.ranked if e.offer.instance_type == "g5.xlarge"]
    assert g5 and all(e.throughput.basis is Basis.MEASURED for e in g5)
    assert g5[0].throughput.samples_per_second == 4321.0
    assert rec.extra["probes"][0]["probe_id"] == "p1"
