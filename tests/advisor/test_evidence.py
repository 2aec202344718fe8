"""Stored probes feed recommend: measurements of the accelerator each probe really ran on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from advisor.ranking.evidence import TunedPolicy, evidence_from_probes
from advisor.ranking.service import recommend_for_file
from advisor.spec import load_workload_spec
from advisor.storage import default_storage_url
from advisor.throughput.estimate import Basis
from pricing import shipped_catalog
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

SPEC = {"name": "tiny", "model": {"builtin": "mlp"}, "batch_size": 64,
        "data": {"total_samples": 1_000_000},
        "profile": {"flops_per_sample": 2e6, "params": 100_000, "memory_gib": 1.0}}
A10G = "cuda:NVIDIA A10G"
H100 = "cuda:NVIDIA H100 80GB HBM3"


def _ok(offer_key: str, sps: float, *, device: str = A10G, probe_id: str = "",
        **fields: Any) -> ProbeResult:
    return ProbeResult(probe_id=probe_id or f"p-{offer_key.replace(':', '-')}", offer_key=offer_key,
                       workload_fingerprint="fp", status=ProbeStatus.OK, batch_size=64,
                       samples_per_second=sps, measured_steps=30, stable=True, device=device,
                       **fields)


def _model_yaml(tmp_path: Path, **changes: Any) -> tuple[Path, str]:
    path = tmp_path / "model.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **changes}))
    return path, load_workload_spec(path).fingerprint()


def _record(fingerprint: str, *results: ProbeResult) -> None:
    store = ProbeStore(default_storage_url())
    for result in results:
        store.record(ProbeResult.from_dict({**result.to_dict(),
                                            "workload_fingerprint": fingerprint}))


def test_cloud_probe_is_a_measurement_and_a_cpu_probe_is_advice() -> None:
    evidence = evidence_from_probes(
        [_ok("aws:g5.xlarge:us-east-1:spot", 900.0), _ok("local", 50.0, device="cpu",
                                                         input_bound_ratio=2.0)],
        shipped_catalog())
    assert [(m.accelerator, m.samples_per_second) for m in evidence.measurements] == [("A10G", 900.0)]
    assert any("measured on local" in line for line in evidence.advice)
    assert any("input pipeline is the bottleneck" in line for line in evidence.advice)
    assert [p["used_for_ranking"] for p in evidence.probes] == [True, False]


def test_a_probe_the_ranking_uses_is_said_with_its_id_date_and_figure() -> None:
    # a used probe had no line at all: recommend's pick moved with no word of why (a probe
    # whose own offers were then rejected, by the deadline say, left no trace in the output)
    result = _ok("aws:g5.xlarge:us-east-1", 310.0, probe_id="fakeprobe001", precision="bf16")
    evidence = evidence_from_probes([result], shipped_catalog())
    assert [m.accelerator for m in evidence.measurements] == ["A10G"]
    (line,) = [a for a in evidence.advice if "fakeprobe001" in a]
    assert line == (f"measured on aws:g5.xlarge:us-east-1 (A10G): 310.0 samples/s at batch 64, "
                    f"bf16 (probe fakeprobe001, {result.created_at:%Y-%m-%d}); the ranking uses "
                    "it for every A10G offer (scaled to the offer's device count)")


def test_a_local_probe_on_a_known_gpu_is_a_measurement_of_that_gpu() -> None:
    evidence = evidence_from_probes([_ok("local", 859.0, device=H100, precision="fp32")],
                                    shipped_catalog())
    assert [(m.accelerator, m.samples_per_second) for m in evidence.measurements] == [
        ("H100-SXM", 859.0)]
    assert evidence.probes[0]["used_for_ranking"] is True
    # The finding knows the device it ran on: an fp32 step on an H100 should use bf16.
    assert any("precision: bf16" in line for line in evidence.advice)


def test_a_measurement_carries_the_probes_batch_and_time_per_operator_class() -> None:
    classes = {"matmul": 0.004, "elementwise": 0.001}
    evidence = evidence_from_probes([_ok("local", 859.0, device=H100, op_class_seconds=classes)],
                                    shipped_catalog())
    (measured,) = evidence.measurements
    assert measured.batch_size == 64
    assert dict(measured.op_class_seconds) == classes


def test_local_gpu_probe_makes_every_offer_with_that_gpu_measured(tmp_path: Path) -> None:
    path, fingerprint = _model_yaml(tmp_path)
    before = recommend_for_file(path)
    _record(fingerprint, _ok("local", 30_000.0, device=H100))
    after = recommend_for_file(path)
    h100 = [e for e in after.ranked if e.offer.accelerator == "H100-SXM"]
    assert h100 and all(e.throughput.basis is Basis.MEASURED for e in h100)
    single = [e for e in h100 if e.offer.accelerator_count == 1]
    assert all(e.throughput.samples_per_second == 30_000.0 for e in single)
    eight = [e for e in h100 if e.offer.accelerator_count == 8]
    assert eight and all(e.throughput.samples_per_second_low
                         < e.throughput.samples_per_second < 8 * 30_000.0 for e in eight)
    # ... and it re-scales the predictions for the accelerators it did not run on.
    a10g = {e.offer.key: e.throughput.samples_per_second for e in after.ranked
            if e.offer.accelerator == "A10G"}
    a10g_before = {e.offer.key: e.throughput.samples_per_second for e in before.ranked
                   if e.offer.accelerator == "A10G"}
    assert a10g and a10g != a10g_before


def test_a_cpu_result_stored_for_trainium_changes_nothing_in_the_ranking(tmp_path: Path) -> None:
    path, fingerprint = _model_yaml(tmp_path)
    before = recommend_for_file(path)
    _record(fingerprint, _ok("aws:trn1.2xlarge:us-east-1:on-demand", 3.0, device="cpu"))
    after = recommend_for_file(path)
    assert [e.offer.key for e in after.ranked] == [e.offer.key for e in before.ranked]
    assert [e.throughput for e in after.ranked] == [e.throughput for e in before.ranked]
    (summary,) = after.extra["probes"]
    assert summary["status"] == "wrong_device" and summary["used_for_ranking"] is False
    assert any("is not used" in line and "Trainium1" in line for line in after.advice)


def test_recommend_uses_stored_probes_of_the_same_workload(tmp_path: Path) -> None:
    path, fingerprint = _model_yaml(tmp_path)
    assert recommend_for_file(path).extra.get("probes") is None  # no store yet: none created
    assert not Path(default_storage_url().removeprefix("sqlite:///")).exists()
    _record(fingerprint, _ok("aws:g5.xlarge:us-east-1:on-demand", 4321.0, probe_id="p1"))
    rec = recommend_for_file(path)
    g5 = [e for e in rec.ranked if e.offer.instance_type == "g5.xlarge"]
    assert g5 and all(e.throughput.basis is Basis.MEASURED for e in g5)
    assert g5[0].throughput.samples_per_second == 4321.0
    assert rec.extra["probes"][0]["probe_id"] == "p1"


def test_a_measured_out_of_memory_rejects_that_batch_on_that_accelerator(tmp_path: Path) -> None:
    path, fingerprint = _model_yaml(tmp_path)
    _record(fingerprint, ProbeResult(probe_id="oom1", offer_key="local", workload_fingerprint="fp",
                                     status=ProbeStatus.OOM, batch_size=32, device=A10G,
                                     error="out of memory at batch 32: CUDA out of memory"))
    rec = recommend_for_file(path)
    rejected = {r.offer.key: r.reason for r in rec.rejected if r.offer.accelerator == "A10G"}
    single = [k for k in rejected if ":g5.xlarge:" in k]
    assert single and all("probe oom1 ran out of memory at batch 32 on A10G" in rejected[k]
                          for k in single)
    # Four A10Gs hold 16 samples each, under the batch that failed: still ranked.
    assert any(e.offer.instance_type == "g5.12xlarge" for e in rec.ranked)


def test_a_measured_fit_overrules_the_profile_estimate(tmp_path: Path) -> None:
    path, fingerprint = _model_yaml(tmp_path, profile={**SPEC["profile"], "memory_gib": 200.0})
    assert not any(e.offer.accelerator == "A10G" for e in recommend_for_file(path).ranked)
    _record(fingerprint, _ok("local", 5000.0, largest_batch_that_fits=96,
                             largest_batch_peak_memory_gib=20.0, smallest_batch_that_failed=97,
                             batch_search_complete=True, peak_memory_gib=14.0))
    ranked = [e for e in recommend_for_file(path).ranked if e.offer.accelerator == "A10G"]
    assert ranked
    one = next(e for e in ranked if e.offer.accelerator_count == 1)
    assert one.memory_needed_gib_per_device is not None
    assert 14.0 < one.memory_needed_gib_per_device <= 24.0  # measured peak (64 of 96) + overhead


def _tuned(sps: float, *, combos: tuple[tuple[float, bool], ...]) -> ProbeResult:
    """A tuned A10G probe at ``sps``; each combination (samples/s, changes numerics)."""
    from dataclasses import replace

    from probes.tune.knobs import Knob, StepConfig
    from probes.tune.report import RowKind, RowStatus, TuneReport, TuneRow
    from probes.vocabulary import Precision

    base = StepConfig(Precision.FP32, 64)
    rows = [TuneRow(RowKind.BASELINE, None, "fp32", base, RowStatus.MEASURED, False,
                    samples_per_second=sps, speedup=1.0),
            TuneRow(RowKind.TRIAL, Knob.PRECISION, "bf16", replace(base, precision=Precision.BF16),
                    RowStatus.MEASURED, True, samples_per_second=2 * sps, speedup=2.0)]
    rows += [TuneRow(RowKind.COMBINATION, None, "bf16 + channels_last" if numerics
                     else "channels_last", replace(base, channels_last=True,
                                                   precision=Precision.BF16 if numerics
                                                   else Precision.FP32),
                     RowStatus.MEASURED, numerics, samples_per_second=value,
                     speedup=value / sps) for value, numerics in combos]
    return _ok("aws:g5.xlarge:us-east-1:spot", sps,
               tuning=TuneReport(tuple(rows), (), True, 120.0, 100.0))


def test_a_tuned_probe_is_measured_throughput_unless_the_policy_uses_it() -> None:
    result = _tuned(900.0, combos=((1200.0, False), (2000.0, True)))
    (plain,) = evidence_from_probes([result], shipped_catalog()).measurements
    assert (plain.samples_per_second, plain.basis) == (900.0, Basis.MEASURED)
    (same,) = evidence_from_probes([result], shipped_catalog(),
                                   policy=TunedPolicy.SAME_NUMERICS).measurements
    assert (same.samples_per_second, same.basis) == (1200.0, Basis.TUNED)
    (any_,) = evidence_from_probes([result], shipped_catalog(), policy=TunedPolicy.ANY).measurements
    assert (any_.samples_per_second, any_.basis) == (2000.0, Basis.TUNED)


def test_a_numerics_only_tune_stays_measured_under_same_numerics() -> None:
    result = _tuned(900.0, combos=((2000.0, True),))
    (kept,) = evidence_from_probes([result], shipped_catalog(),
                                   policy=TunedPolicy.SAME_NUMERICS).measurements
    assert (kept.samples_per_second, kept.basis) == (900.0, Basis.MEASURED)


def test_tuning_advice_names_the_tuned_setting_and_the_convergence_check() -> None:
    advice = evidence_from_probes([_tuned(900.0, combos=((1200.0, False),))],
                                  shipped_catalog()).advice
    assert any("configure the step as channels_last: 1.33x" in line for line in advice)
    assert any("bf16 measured 2.00x" in line and "convergence check" in line for line in advice)


def test_recommend_ranks_a_tuned_configuration_only_when_asked(tmp_path: Path) -> None:
    from dataclasses import replace

    from advisor.ranking.decision import BASIS_LABEL, BASIS_MEANING, headline

    path, fingerprint = _model_yaml(tmp_path)
    tuned = replace(_tuned(900.0, combos=((1200.0, False),)), workload_fingerprint=fingerprint)
    _record(fingerprint, tuned)
    plain = [e for e in recommend_for_file(path).ranked if e.offer.instance_type == "g5.xlarge"]
    assert plain and all(e.throughput.basis is Basis.MEASURED for e in plain)
    rec = recommend_for_file(path, tuned=TunedPolicy.SAME_NUMERICS)
    g5 = [e for e in rec.ranked if e.offer.instance_type == "g5.xlarge"]
    assert g5 and all(e.throughput.basis is Basis.TUNED for e in g5)
    assert g5[0].throughput.samples_per_second == 1200.0
    # every basis has its words, and a tuned pick's headline says what it rests on
    assert set(BASIS_MEANING) == set(BASIS_LABEL) == set(Basis)
    if rec.ranked[0].throughput.basis is Basis.TUNED:
        assert "basis tuned (measured, tuned configuration)" in headline(rec)
