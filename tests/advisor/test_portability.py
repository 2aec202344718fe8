"""Portability of the user's step off CUDA: sourced data, the record, and what recommend does
with it (``constraints.portability: strict | warn``)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.errors import AdvisorError
from advisor.profiling import WorkloadProfile, op_names, step_op_names
from advisor.ranking.decision import headline, headline_note
from advisor.ranking.offers import Recommendation, RejectionKind
from advisor.ranking.portability import (
    OPERATOR_SUPPORT_CSV,
    RUNTIMES_CSV,
    OperatorStatus,
    Portability,
    load_backend_runtimes,
    load_operator_support,
    portability_checker,
    portability_of,
)
from advisor.ranking.recommend import recommend
from advisor.ranking.serialize import rejection_row
from advisor.spec import (
    Constraints,
    PortabilityPolicy,
    WorkloadSpec,
    load_workload_spec,
    parse_workload_spec,
)
from cli.main import advisor
from pricing import shipped_catalog
from tests.advisor.test_op_names import GRID_MODEL, entrypoint_spec

CAPTURED = date(2026, 11, 26)
SMALL = WorkloadProfile(flops_per_sample=1e9, params=1_000_000, weight_bytes=4_000_000,
                        gradient_bytes=4_000_000, optimizer_bytes=8_000_000,
                        activation_bytes_per_sample=2**20, method="test")
TODAY = date(2026, 1, 1)


@pytest.fixture(autouse=True)
def _fresh_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(op_names, "_MEMO", {})


# --- the data ------------------------------------------------------------------------------

@pytest.mark.parametrize("path", [OPERATOR_SUPPORT_CSV, RUNTIMES_CSV])
def test_every_row_is_sourced_versioned_and_dated(path: Path) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows
    for row in rows:
        assert row["source"].strip() and row["source_version"].strip(), row
        assert date.fromisoformat(row["captured"]) == CAPTURED, row


def test_the_tables_load_and_name_fallbacks_for_every_backend() -> None:
    table = load_operator_support()
    for backend in ("xla", "neuron", "hpu"):
        assert any(s.status is OperatorStatus.FALLBACK for s in table[backend].values()), backend
    assert table["xla"]["_ctc_loss"].status is OperatorStatus.FALLBACK  # the lowering guide's
    assert {r.runtime_package for r in load_backend_runtimes().values()} == {
        "torch_xla", "torch-neuronx", "habana_frameworks.torch"}


def test_every_non_cuda_training_accelerator_has_a_runtime() -> None:
    for spec in shipped_catalog().accelerators.values():
        if spec.training and spec.vendor != "NVIDIA":
            assert portability_of(spec, frozenset()) is not None, spec.name


@pytest.mark.parametrize(("row", "problem"), [
    ("xla,mm,maybe,n,s,v,2026-11-26", "status must be one of"),  # unknown status
    ("cuda,mm,fallback,n,s,v,2026-11-26", "backend must be one of"),  # CUDA has no row
    ("xla,mm,fallback,n,,v,2026-11-26", "source"),  # unsourced
    ("xla,mm,fallback,n,s,v,last week", "captured must be a date"),  # undated
])
def test_a_bad_operator_row_names_its_file_line_and_problem(tmp_path: Path, row: str,
                                                            problem: str) -> None:
    path = tmp_path / "ops.csv"
    path.write_text("backend,operator,status,note,source,source_version,captured\n" + row + "\n")
    with pytest.raises(AdvisorError, match=rf"ops.csv:2: .*{problem}"):
        load_operator_support(path)


# --- the record ----------------------------------------------------------------------------

def test_a_tpu_step_with_a_grid_sample_falls_back_and_says_what_it_takes() -> None:
    tpu = shipped_catalog().accelerators["TPU-v5e"]
    record = portability_of(tpu, frozenset({"convolution", "grid_sampler_2d", "mm"}))
    assert record is not None
    assert (record.backend, record.runtime_package) == ("xla", "torch_xla")
    assert record.fallback == ("grid_sampler_2d",) and record.blocked_operators
    line = record.describe()
    assert line.startswith("TPU-v5e needs torch_xla, not CUDA") and "\n" not in line
    assert "first compile: minutes" in line and "fall back to the host CPU" in line


def test_cuda_needs_no_check() -> None:
    h100 = shipped_catalog().accelerators["H100-SXM"]
    assert portability_of(h100, frozenset({"grid_sampler_2d"})) is None


def test_unsupported_operators_are_named_as_failing() -> None:
    record = Portability("Gaudi2", "hpu", "habana_frameworks.torch", "unknown",
                         fallback=("digamma",), unsupported=("my_op",))
    assert "fail there: my_op" in record.describe()
    assert record.blocked_operators == ("my_op", "digamma")
    assert record.rejection_figures()["operators"] == "my_op, digamma"
    assert "2 operator(s) fall back or fail" in record.headline_note()


def test_an_untraced_step_is_said_to_be_unchecked() -> None:
    tpu = shipped_catalog().accelerators["TPU-v5e"]
    record = portability_of(tpu, None)
    assert record is not None and not record.blocked_operators
    assert "could not be traced" in record.describe()


def test_the_checker_traces_only_for_a_non_cuda_accelerator_and_once() -> None:
    calls: list[int] = []

    def operators() -> frozenset[str]:
        calls.append(1)
        return frozenset({"grid_sampler_2d"})

    check = portability_checker(shipped_catalog().accelerators, operators)
    assert check("H100-SXM") is None and not calls
    assert check("TPU-v5e") is not None and check("Trainium1") is not None
    assert calls == [1]


# --- the spec field ------------------------------------------------------------------------

BASE = {"name": "x", "model": {"builtin": "mlp"}, "batch_size": 64, "data": {"samples": 1000}}


def test_portability_defaults_to_warn_and_reads_strict() -> None:
    assert parse_workload_spec(BASE).constraints.portability is PortabilityPolicy.WARN
    strict = parse_workload_spec({**BASE, "constraints": {"portability": "strict"}})
    assert strict.constraints.portability is PortabilityPolicy.STRICT


def test_a_bad_portability_is_one_line_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "model.yaml"
    path.write_text("name: x\nmodel: {builtin: mlp}\nbatch_size: 4\ndata: {samples: 10}\n"
                    "constraints: {portability: sometimes}\n")
    result = CliRunner().invoke(advisor, ["recommend", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "constraints.portability" in lines[0]
    assert "strict, warn" in lines[0] and "sometimes" in lines[0]


# --- recommend -----------------------------------------------------------------------------

@pytest.fixture
def grid_spec(tmp_path: Path) -> Iterator[WorkloadSpec]:
    for spec in entrypoint_spec(tmp_path, "grid_portability_mod", GRID_MODEL):
        yield replace(spec, batch_size=64)


def _recommend(spec: WorkloadSpec, *accelerators: str,
               policy: PortabilityPolicy = PortabilityPolicy.WARN, **kwargs: object
               ) -> Recommendation:
    spec = replace(spec, constraints=Constraints(accelerators_include=accelerators,
                                                 portability=policy))
    kwargs.setdefault("step_operators", lambda: step_op_names(spec))  # as recommend_for_file
    return recommend(spec, catalog=shipped_catalog(), profile=SMALL, today=TODAY,
                     **kwargs)  # type: ignore[arg-type]


def test_strict_rejects_the_offers_whose_backend_lacks_an_operator(
        grid_spec: WorkloadSpec) -> None:
    rec = _recommend(grid_spec, "TPU-v5e", "Trainium1", "L4", policy=PortabilityPolicy.STRICT)
    assert rec.ranked and all(e.offer.accelerator == "L4" for e in rec.ranked)
    portable = [r for r in rec.rejected if r.kind is RejectionKind.PORTABILITY]
    assert {r.offer.accelerator for r in portable} == {"TPU-v5e", "Trainium1"}
    tpu = next(r for r in portable if r.offer.accelerator == "TPU-v5e")
    assert tpu.figures["backend"] == "xla"
    assert tpu.figures["operators"] == "grid_sampler_2d, grid_sampler_2d_backward"
    assert "constraints.portability: strict" in tpu.reason and "torch_xla" in tpu.reason
    # --json's rejected rows, made from the columns, read the same
    assert list(rec.rejected.column_rows() or ()) == [rejection_row(r) for r in rec.rejected]


def test_warn_keeps_them_and_advises(grid_spec: WorkloadSpec) -> None:
    rec = _recommend(grid_spec, "TPU-v5e")
    assert rec.ranked and not any(r.kind is RejectionKind.PORTABILITY for r in rec.rejected)
    line = next(a for a in rec.advice if a.startswith("portability: TPU-v5e"))
    assert "torch_xla" in line and "first compile" in line
    assert "grid_sampler_2d" in line and "strict would leave such offers out" in line
    assert headline_note(rec).endswith("; 2 operator(s) fall back or fail there")


def test_a_cuda_ranking_never_traces_the_step() -> None:
    def operators() -> frozenset[str]:
        raise AssertionError("traced for a CUDA-only ranking")

    rec = _recommend(parse_workload_spec(BASE), "H100-SXM", step_operators=operators)
    assert rec.ranked and not any(a.startswith("portability:") for a in rec.advice)
    assert not rec.portability and headline_note(rec) == ""


@pytest.mark.parametrize("example", ["resnet50", "bert", "gpt2", "mlp"])
def test_each_builtin_example_gets_a_portability_line_when_a_tpu_leads(example: str) -> None:
    spec = load_workload_spec(Path("examples") / f"{example}.yaml")
    rec = _recommend(spec, "TPU-v5e")
    assert rec.ranked[0].offer.accelerator == "TPU-v5e"
    line = next(a for a in rec.advice if a.startswith("portability: TPU-v5e needs torch_xla"))
    assert "none of the step's traced operators is on the shipped fallback list" in line
    record = rec.portability[0]
    assert record.accelerator == "TPU-v5e" and record.operators_traced
    assert headline_note(rec).startswith("needs torch_xla (not CUDA; first compile: minutes")
    assert f"; {headline_note(rec)}" in headline(rec)
