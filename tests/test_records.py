"""The one serialization convention (``pricing.records``), over every record that follows it.

Every ``Record`` round-trips through ``to_dict`` / ``from_dict`` and ``to_json`` /
``from_json`` (hand-made examples and hypothesis-built ones); every ``JsonView`` gives plain
JSON values; the files written before the convention still read (``tests/data/golden/
records``); and a walk over the product packages keeps the convention the only one.
"""

from __future__ import annotations

import ast
import json
import math
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.profiling.op_profile import OpClass, OpCost, OpMix
from advisor.ranking.portability import Portability
from advisor.sweep.accounting.instances import WorkerInstance
from advisor.sweep.accounting.status import StudyListing, SweepStatus, TrialCost
from advisor.sweep.spec.outcomes import StopKind, StopReason, TrialStatus
from advisor.throughput.evaluation import EvaluationResult, Prediction, TargetAccuracy
from pricing import Cloud
from pricing.records import JsonView, Record
from pricing.snapshots import SnapshotInfo
from probes.tune.knobs import Knob, Skipped, StepConfig
from probes.tune.profile import OperatorTime, StepProfile
from probes.tune.report import RowKind, RowStatus, TuneReport, TuneRow
from probes.types import ProbeRequest, ProbeResult, ProbeStatus
from probes.vocabulary import Precision
from probes.workload import WorkloadRecipe

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pricing", "probes", "advisor", "reports", "cli")
GOLDEN = Path(__file__).parent / "data" / "golden" / "records"
AT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)

RECIPE = WorkloadRecipe(builtin="resnet50", entrypoint=None, options={"image_size": 224},
                        batch_size=64, precision=Precision.BF16)
CONFIG = StepConfig(Precision.BF16, 32, channels_last=True, compiler="inductor", num_workers=4)
PROFILE = StepProfile("bf16", 3, 0.01, 0.2, 0.3, 0.05,
                      (OperatorTime("aten::mm", 0.1, 2.0, 0.5),), "self CUDA time")
ROWS = (
    TuneRow(RowKind.BASELINE, None, "as written", StepConfig(Precision.FP32, 16),
            RowStatus.MEASURED, False, samples_per_second=100.0, rel_halfwidth=0.01,
            speedup=1.0, measured_steps=20, peak_memory_gib=1.5),
    TuneRow(RowKind.TRIAL, Knob.PRECISION, "bf16", CONFIG, RowStatus.OOM, True, note="oom"),
)
TUNING = TuneReport(ROWS, (Skipped(Knob.COMPILER, "no backend"),), True, 30.0, 29.5, PROFILE)
REQUEST = ProbeRequest(probe_id="p-1", offer_key="aws:p4d.24xlarge:us-east-1", recipe=RECIPE,
                       workload_fingerprint="fp", max_usd=2.5, price_usd_per_hour=32.77,
                       accelerator="A100-40GB-SXM", tune=True, created_at=AT)
RESULT = ProbeResult(probe_id="p-1", offer_key="local", workload_fingerprint="fp",
                     status=ProbeStatus.OK, batch_size=16, samples_per_second=9.5,
                     measured_steps=3, precision=Precision.BF16, largest_batch_that_fits=32,
                     smallest_batch_that_failed=64, tuning=TUNING, created_at=AT)
OOM = ProbeResult(probe_id="p-2", offer_key="local", workload_fingerprint="fp",
                  status=ProbeStatus.OOM, batch_size=512, error="CUDA out of memory",
                  created_at=datetime(2024, 5, 1, 12, 0))  # naive: as old stores wrote it
MIX = OpMix((OpCost(OpClass.MATMUL, "bfloat16", 1e9, 2e6, 3.0),),
            (OpCost(OpClass.OPTIMIZER, "float32", 5.0, 6.0),))

# One or more hand-made instances of every Record in the product packages.
EXAMPLES: dict[type[Record], tuple[Record, ...]] = {
    WorkloadRecipe: (RECIPE, WorkloadRecipe(builtin=None, entrypoint="pkg.mod:build",
                                            base_dir="/srv/models")),
    StepConfig: (CONFIG, StepConfig(Precision.FP32, 1)),
    StepProfile: (PROFILE,),
    TuneRow: ROWS,
    TuneReport: (TUNING, TuneReport((), (), False, 1.0, 0.0)),
    ProbeRequest: (REQUEST,),
    ProbeResult: (RESULT, OOM),
    OpMix: (MIX, OpMix((), ())),
    StopReason: (StopReason(StopKind.DOLLAR_CAP, spent_usd=1.5, max_usd=2.0),
                 StopReason(StopKind.RECORDED, text="stopped by hand"),
                 StopReason(StopKind.FAILURES_IN_A_ROW, trials=3, last_error="ValueError")),
    WorkerInstance: (WorkerInstance("w1", "i-1", "aws:g5.xlarge:us-east-1", 1.2, 100.0, 160.5),
                     WorkerInstance("w2", "vm-2", "gcp:g2-standard-4:us-central1", 0.0, 5.0)),
    StudyListing: (StudyListing("lr", "minimize", 3, {"complete": 2, "pruned": 1}, 1.25,
                                "aws:g5.xlarge:us-east-1:spot", "max_trials reached"),),
}

# A few instances of the one-way views (``Savings`` is checked by the report's own tests).
VIEWS: tuple[JsonView, ...] = (
    SweepStatus("lr", "minimize", "local", 1.5, trials=(
        TrialCost(0, TrialStatus.COMPLETE, 0.25, 0.5, started_at=AT, params={"lr": 0.1}),),
        budget_usd=10.0, prices_captured_at=date(2024, 5, 1)),
    SnapshotInfo(Cloud.AWS, Path("/srv/aws.csv"), AT, 10, {"spot": 4}, 1, ("us-east-1",), 0,
                 False, True, 3.14159),
    EvaluationResult(1, 10.0, 9.0, math.nan, math.nan, 50.0,
                     (Prediction("w", "T4", ("A10G",), 10.0, 11.0, 9.0, 12.0),)),
    TargetAccuracy("T4", 1, 10.0, 10.0, math.nan),
    Portability("TPU-v5e", "xla", "torch_xla", "minutes", ("aten::nonzero",), (), True),
)


def _plain(value: Any) -> bool:
    """True for JSON's own values only: dicts with str keys, lists, text, numbers, null."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def _round_trips(record: Record) -> None:
    cls = type(record)
    data = record.to_dict()
    assert _plain(data), data
    assert cls.from_dict(data) == record
    assert cls.from_json(record.to_json()) == record
    assert json.loads(record.to_json()) == data


@pytest.mark.parametrize("record", [r for rs in EXAMPLES.values() for r in rs], ids=repr)
def test_every_example_round_trips(record: Record) -> None:
    _round_trips(record)


@pytest.mark.parametrize("view", VIEWS, ids=lambda v: type(v).__name__)
def test_views_give_plain_json(view: JsonView) -> None:
    data = view.to_dict()
    assert _plain(data), data
    assert view.to_json() == json.dumps(data, sort_keys=True)


# --- hypothesis-built records --------------------------------------------------------------

_floats = st.floats(min_value=0.0, max_value=1e12, allow_nan=False)
_text = st.text(max_size=12)
_leaf = st.none() | st.booleans() | st.integers(-10**6, 10**6) | _floats | _text
_configs = st.builds(StepConfig, st.sampled_from(Precision), st.integers(1, 4096),
                     channels_last=st.booleans(), compiler=st.none() | _text,
                     cudnn_benchmark=st.booleans(), cached_input=st.booleans(),
                     num_workers=st.none() | st.integers(0, 64), pin_memory=st.none() | st.booleans())
_positive = st.floats(min_value=1e-6, max_value=1e9, allow_nan=False)
_strategies: dict[str, st.SearchStrategy[Record]] = {
    "recipe": st.builds(WorkloadRecipe, builtin=st.none() | _text, entrypoint=st.none() | _text,
                        options=st.dictionaries(_text, _leaf | st.lists(_leaf, max_size=3),
                                                max_size=3),
                        batch_size=st.integers(1, 4096), precision=st.sampled_from(Precision),
                        base_dir=st.none() | _text),
    "step config": _configs,
    "tune row": st.builds(TuneRow, st.sampled_from(RowKind), st.none() | st.sampled_from(Knob),
                          _text, _configs, st.sampled_from(RowStatus), st.booleans(),
                          samples_per_second=st.none() | _floats, speedup=st.none() | _floats,
                          measured_steps=st.integers(0, 10**6), note=_text),
    "op mix": st.builds(OpMix, *[st.lists(st.builds(
        OpCost, st.sampled_from(OpClass), st.sampled_from(["float32", "bfloat16"]), _floats,
        _floats, _floats), max_size=4).map(tuple)] * 2),
    "stop reason": st.builds(StopReason, st.sampled_from(StopKind), trials=st.integers(0, 10**6),
                             spent_usd=_floats, max_usd=_floats, drain_s=_floats,
                             last_error=_text, text=_text),
    "worker instance": st.builds(
        lambda start, length, price, wid: WorkerInstance(wid, "i-" + wid, "aws:g5.xlarge:us-east-1",
                                                         price, start, None if length is None
                                                         else start + length),
        _floats, st.none() | _floats, _floats, _text),
    "probe request": st.builds(
        ProbeRequest, probe_id=st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True),
        offer_key=st.just("local"), recipe=st.just(RECIPE), workload_fingerprint=_text,
        time_box_s=_positive, max_usd=st.none() | _positive, find_batch=st.booleans(),
        memory_limit_gib=st.none() | _positive,
        created_at=st.datetimes(timezones=st.sampled_from([UTC, None]))),
}


@pytest.mark.parametrize("name", sorted(_strategies))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_built_records_round_trip(name: str, data: st.DataObject) -> None:
    _round_trips(data.draw(_strategies[name]))


# --- files written before the convention still read ------------------------------------------

@pytest.mark.parametrize(("name", "cls"), [
    ("probe_request.json", ProbeRequest),        # the request a launcher uploads
    ("probe_result_tuned.json", ProbeResult),    # a tuned result in the probe store
    ("op_mix.json", OpMix),                      # an operator-mix cache (less its version)
    ("stop_reason.json", StopReason),            # a study's advisor:stop attribute
    ("stop_reason_recorded.json", StopReason),   # the same, of an older version's sentence
    ("worker_instance.json", WorkerInstance),    # a study's worker-instance attribute
    ("study_listing.json", StudyListing),        # a row of 'advisor sweep status --json'
])
def test_stored_files_read_and_write_back_the_same(name: str, cls: type[Record]) -> None:
    text = (GOLDEN / name).read_text().strip()
    record = cls.from_json(text)
    assert record.to_dict() == json.loads(text)
    if cls in (ProbeRequest, ProbeResult):  # stored as text, keys sorted
        assert record.to_json() == text


def test_a_result_stored_before_tuning_reads_with_no_tuning() -> None:
    result = ProbeResult.from_json((GOLDEN / "probe_result_before_tuning.json").read_text())
    assert result.tuning is None and result.probe_id == "old1"


# --- the convention stays one ----------------------------------------------------------------

def _classes() -> list[tuple[Path, ast.ClassDef]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            found += [(path, node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    return found


def _base_names(node: ast.ClassDef) -> set[str]:
    return {b.id if isinstance(b, ast.Name) else b.attr for b in node.bases
            if isinstance(b, ast.Name | ast.Attribute)}


def _methods(node: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}


def test_to_json_and_from_json_are_defined_only_by_the_protocol() -> None:
    records = ROOT / "pricing" / "records.py"
    stray = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == records:
                continue
            stray += [f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
                      for node in ast.walk(ast.parse(path.read_text()))
                      if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                      and node.name in ("to_json", "from_json")]
    assert stray == [], "to_json/from_json come from pricing.records (to_dict gives the dict)"


def test_to_dict_and_from_dict_belong_to_records_and_views() -> None:
    wrong = []
    for path, node in _classes():
        if path == ROOT / "pricing" / "records.py":
            continue  # the protocol itself
        methods = _methods(node)
        where = f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
        bases = _base_names(node)
        if {"to_dict", "from_dict"} & set(methods) and not bases & {"Record", "JsonView"}:
            wrong.append(f"{where}: defines to_dict/from_dict without Record or JsonView")
        if "from_dict" in methods and "Record" not in bases:
            wrong.append(f"{where}: reads itself back, so it is a Record, not a view")
        to_dict = methods.get("to_dict")
        if to_dict is not None and (to_dict.args.args[1:] or to_dict.args.kwonlyargs or
                                    ast.unparse(to_dict.returns or ast.Constant(None))
                                    != "dict[str, Any]"):
            wrong.append(f"{where}: to_dict takes no arguments and returns dict[str, Any]")
    assert wrong == []


def test_every_record_has_round_trip_examples() -> None:
    declared = {node.name for _, node in _classes() if "Record" in _base_names(node)}
    assert declared == {cls.__name__ for cls in EXAMPLES}
