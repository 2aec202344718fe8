"""Findings from results: each needs its evidence, and silence where there is none."""

from __future__ import annotations

from dataclasses import replace

from probe_helpers import make_request, ok_result

from pricing import load_accelerators
from probes.findings import FindingKind, findings_for
from probes.types import ProbeResult, ProbeStatus

A10G = load_accelerators()["A10G"]


def _kinds(result: ProbeResult, accel=A10G) -> set[FindingKind]:  # type: ignore[no-untyped-def]
    return {f.kind for f in findings_for(result, accel)}


def test_a_healthy_bf16_probe_has_no_findings() -> None:
    result = replace(ok_result(make_request()), precision="bf16", input_bound_ratio=1.02,
                     utilization_pct=97.0, peak_memory_gib=20.0)
    assert findings_for(result, A10G) == []


def test_input_bound_probe_says_so_with_the_ratio() -> None:
    result = replace(ok_result(make_request()), input_bound_ratio=2.5, precision="bf16")
    (finding,) = [f for f in findings_for(result) if f.kind is FindingKind.INPUT_BOUND]
    assert "2.50x" in finding.evidence
    assert finding.expected_speedup == 2.5
    assert "workers" in finding.advice


def test_low_utilization_and_empty_memory_and_bf16() -> None:
    result = replace(ok_result(make_request()), utilization_pct=35.0, peak_memory_gib=3.0)
    assert _kinds(result) == {FindingKind.LOW_UTILIZATION, FindingKind.BF16_UNUSED,
                              FindingKind.MEMORY_MOSTLY_EMPTY}


def test_bf16_needs_hardware_support() -> None:
    t4 = load_accelerators()["T4"]
    assert t4.supports_bf16 is False
    assert FindingKind.BF16_UNUSED not in _kinds(ok_result(make_request()), t4)


def test_oom_names_the_largest_batch_that_fits() -> None:
    result = ProbeResult.failure(make_request(), ProbeStatus.OOM, "out of memory at batch 16",
                                 largest_batch_that_fits=9, batch_search_complete=True)
    (finding,) = findings_for(result, A10G)
    assert finding.kind is FindingKind.DOES_NOT_FIT
    assert "largest that fits is 9" in finding.advice


def test_failed_probes_have_no_findings() -> None:
    result = ProbeResult.failure(make_request(), ProbeStatus.TIMEOUT, "slow")
    assert findings_for(result, A10G) == []


def test_an_unfinished_batch_search_is_a_lower_bound() -> None:
    result = replace(ok_result(make_request()), largest_batch_that_fits=64, precision="bf16")
    (finding,) = findings_for(result)
    assert finding.kind is FindingKind.LARGEST_BATCH and "at least 64" in finding.advice


def test_a_probe_that_did_not_settle_says_so() -> None:
    result = replace(ok_result(make_request()), stable=False, rel_halfwidth=0.425,
                     precision="bf16")
    (finding,) = [f for f in findings_for(result) if f.kind is FindingKind.NOISY]
    assert "±42.5%" in finding.evidence and "--time-box" in finding.advice
    # the table writes 'advice (evidence; gain)': evidence of its own in parentheses read
    # '(±42.5% ... steps (a probe stops once ...); a figure the ranking can trust)'
    assert "(" not in finding.evidence and ")" not in finding.evidence
    assert FindingKind.NOISY not in _kinds(replace(result, stable=True, rel_halfwidth=0.01))
