"""The shipped table of published training throughput: it validates, and it orders families."""

from __future__ import annotations

import csv
import math
from datetime import date
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.throughput.published import (
    PUBLISHED_CSV,
    PublishedRow,
    Stack,
    load_published,
    relative_throughput,
)
from pricing import load_accelerators


@pytest.fixture(scope="module")
def rows() -> tuple[PublishedRow, ...]:
    return load_published()


def test_shipped_file_validates_against_the_catalog(rows: tuple[PublishedRow, ...]) -> None:
    catalog = load_accelerators()
    assert len(rows) >= 100
    assert {row.accelerator for row in rows} <= set(catalog)


def test_every_row_has_a_source_and_a_capture_date(rows: tuple[PublishedRow, ...]) -> None:
    # read on 2026-11-26 (first sweep) and 2026-11-27 (K80/P100, issue 27's second sweep)
    assert all(row.source for row in rows)
    assert {date.fromisoformat(row.captured) for row in rows} <= {
        date(2026, 11, 26), date(2026, 11, 27)}


def test_every_mlperf_row_states_its_conversion(rows: tuple[PublishedRow, ...]) -> None:
    mlperf = [row for row in rows if row.stack is Stack.MLPERF_TUNED]
    assert mlperf
    assert all("samples_per_second_per_chip = value / chips" in row.notes for row in mlperf)


def test_per_chip_figure_matches_value_over_chips(rows: tuple[PublishedRow, ...]) -> None:
    for row in rows:
        sequence = 2048 if row.unit.value == "tokens_per_second" else 1
        assert row.samples_per_second_per_chip == pytest.approx(
            row.value / row.chips / sequence, rel=1e-3), row.line


def _write(tmp_path: Path, **changes: str) -> Path:
    with PUBLISHED_CSV.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fields = list(reader.fieldnames or ())
        first = next(reader)
    first.update(changes)
    path = tmp_path / "published_training.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerow(first)
    return path


@pytest.mark.parametrize(("changes", "named"), [
    ({"value": "-5"}, "value '-5' must be a finite number above zero"),  # negative
    ({"value": "nan"}, "value 'nan' must be a finite number above zero"),  # not finite
    ({"samples_per_second_per_chip": "fast"}, "samples_per_second_per_chip 'fast'"),  # text
    ({"accelerator": "TPU-v9"}, "accelerator 'TPU-v9' is not in the shipped catalog"),
    ({"stack": "hand_tuned"}, "stack 'hand_tuned' is not one of"),  # unknown stack
    ({"unit": "images"}, "unit 'images' is not one of"),  # unknown unit
    ({"source": "  "}, "source is empty"),  # a figure without its source
    ({"chips": "2.5"}, "chips '2.5' must be a whole number"),
])
def test_a_bad_row_is_refused_naming_the_line(tmp_path: Path, changes: dict[str, str],
                                              named: str) -> None:
    with pytest.raises(AdvisorError, match="published_training.csv line 2: ") as caught:
        load_published(_write(tmp_path, **changes))
    assert named in str(caught.value)


def test_a_missing_column_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "published_training.csv"
    path.write_text("accelerator,chips\nH100-SXM,8\n")
    with pytest.raises(AdvisorError, match="missing column"):
        load_published(path)


def _ratios(rows: tuple[PublishedRow, ...], workload: str, stack: Stack,
            anchor: str) -> dict[str, float]:
    found = relative_throughput(rows, workload=workload, stack=stack, anchor=anchor)
    return {name: ratio.ratio for name, ratio in found.items()}


@pytest.mark.parametrize(("workload", "stack", "newer", "older"), [
    ("resnet50", Stack.MLPERF_TUNED, "TPU-v4", "TPU-v3"),
    ("resnet50", Stack.MLPERF_TUNED, "TPU-v3", "TPU-v2"),  # MLPerf v0.5, 4 chips each
    ("resnet50", Stack.MLPERF_TUNED, "Gaudi2", "Gaudi"),
    ("bert_large_mlperf", Stack.MLPERF_TUNED, "Gaudi2", "Gaudi"),
    ("bert_base_pretrain_hf", Stack.PYTORCH_EAGER, "Gaudi2", "Gaudi"),  # Hugging Face blog
    ("resnet50", Stack.MLPERF_TUNED, "H100-SXM", "A100-80GB-SXM"),
    ("resnet50", Stack.MLPERF_TUNED, "A100-40GB-SXM", "V100-16GB-SXM2"),
    ("resnet50", Stack.VENDOR_TUNED, "A100-80GB-SXM", "V100-16GB-SXM2"),
    ("resnet50", Stack.MLPERF_TUNED, "H200", "H100-SXM"),
    ("bert_large_mlperf", Stack.MLPERF_TUNED, "H100-SXM", "A100-80GB-SXM"),
    ("bert_large_mlperf", Stack.MLPERF_TUNED, "H200", "H100-SXM"),
    ("bert_large_mlperf", Stack.MLPERF_TUNED, "B200", "H200"),
    ("bert_large_pretrain_phase1", Stack.VENDOR_TUNED, "A100-80GB-SXM", "V100-32GB-SXM2"),
    ("gpt3_175b_mlperf", Stack.MLPERF_TUNED, "TPU-v5p", "TPU-v5e"),
    ("gpt3_175b_mlperf", Stack.MLPERF_TUNED, "TPU-v6e", "TPU-v5p"),
    ("gpt3_175b_mlperf", Stack.MLPERF_TUNED, "B200", "H100-SXM"),
])
def test_published_family_order_holds(rows: tuple[PublishedRow, ...], workload: str,
                                      stack: Stack, newer: str, older: str) -> None:
    ratios = _ratios(rows, workload, stack, "H100-SXM" if stack is Stack.MLPERF_TUNED
                     else "A100-80GB-SXM")
    assert ratios[newer] > ratios[older]


def test_tpu_v3_beats_tpu_v2_against_the_v100_each_measured_beside(
        rows: tuple[PublishedRow, ...]) -> None:
    # TPU-v2 has only the 2018 third-party run beside four V100s; TPU-v3 is in MLPerf
    # v0.6/v0.7 beside DGX-1 V100s: compare the two ratios to the same V100
    v2 = _ratios(rows, "resnet50", Stack.VENDOR_TUNED, "V100-16GB-SXM2")["TPU-v2"]
    v3 = _ratios(rows, "resnet50", Stack.MLPERF_TUNED, "V100-16GB-SXM2")["TPU-v3"]
    assert v3 > v2


def test_cloud_tpu_rows_count_chips_not_cores(rows: tuple[PublishedRow, ...]) -> None:
    # a v2-8 / v3-8 Cloud TPU is 8 TensorCores on 4 chips (MLPerf v0.5 entry.json says 8
    # "accelerators"; the RiseML article compares "four TPUv2 chips (which form one Cloud
    # TPU)" with four V100s): per-chip figures divide by 4
    cloud_tpus = [row for row in rows if row.suite in ("mlperf_training_v0.5",
                                                       "riseml_2018_tpuv2_v100")
                  and row.accelerator.startswith("TPU-")]
    assert {row.accelerator for row in cloud_tpus} == {"TPU-v2", "TPU-v3"}
    assert all(row.chips == 4 for row in cloud_tpus)


def test_tpu_v2_is_near_a_v100_per_chip_in_both_sources(rows: tuple[PublishedRow, ...]) -> None:
    # MLPerf v0.5 (Google's tpuv2-8 beside NVIDIA's DGX-1 and Google's own 8x V100) and the
    # 2018 RiseML run agree within 15%: the doubtful third-party row is not an outlier
    mlperf = _ratios(rows, "resnet50", Stack.MLPERF_TUNED, "V100-16GB-SXM2")
    riseml = _ratios(rows, "resnet50", Stack.VENDOR_TUNED, "V100-16GB-SXM2")
    assert mlperf["TPU-v2"] == pytest.approx(riseml["TPU-v2"], rel=0.15)
    assert 0.5 < mlperf["TPU-v2"] / mlperf["TPU-v3"] < 0.7  # same code, same round


def test_a_ratio_is_taken_only_inside_one_suite(rows: tuple[PublishedRow, ...]) -> None:
    direct = relative_throughput(rows, workload="resnet50", stack=Stack.MLPERF_TUNED,
                                 anchor="H100-SXM", chain=False)
    assert "TPU-v3" not in direct  # never in a round beside an H100
    assert direct["H200"].suites == ("mlperf_training_v4.0",)
    assert direct["H200"].ratio == pytest.approx(7913.35 / 7129.74, rel=1e-3)


def test_a_chained_ratio_names_its_path(rows: tuple[PublishedRow, ...]) -> None:
    chained = relative_throughput(rows, workload="resnet50", stack=Stack.MLPERF_TUNED,
                                  anchor="H100-SXM")
    assert chained["TPU-v3"].via == ("A100-80GB-SXM", "TPU-v4")
    assert chained["H100-SXM"].ratio == 1.0


def test_the_stack_moves_a_published_ratio(rows: tuple[PublishedRow, ...]) -> None:
    # first-gen Gaudi beside an A100-80GB on BERT: half of it under a plain Hugging Face
    # training loop (2022), a sixth in MLPerf v1.0/v2.0 (early SynapseAI): ratios carry a stack
    plain = _ratios(rows, "bert_base_pretrain_hf", Stack.PYTORCH_EAGER, "A100-80GB-SXM")
    tuned = relative_throughput(rows, workload="bert_large_mlperf", stack=Stack.MLPERF_TUNED,
                                anchor="A100-80GB-SXM", precisions=("bf16", "fp16"))
    assert plain["Gaudi"] == pytest.approx(520.2 / math.sqrt(981.6 * 1082.6), rel=1e-3)
    assert plain["Gaudi"] > 2.5 * tuned["Gaudi"].ratio


def test_k80_and_p100_come_from_one_2017_tensorflow_table(rows: tuple[PublishedRow, ...]) -> None:
    # tensorflow.org's benchmarks page (May 2017, tf_cnn_benchmarks, real data, batch 64):
    # one GPU of a DGX-1 P100 218 images/s, one K80 GPU (a board's die) 51.2 (GCE) and 51.3
    # (EC2); no part with reference rows ran in that table
    tf2017 = [row for row in rows if row.suite == "tensorflow_benchmarks_2017"]
    assert {row.accelerator for row in tf2017} == {"K80", "P100"}
    assert all(row.precision == "fp32" and row.stack is Stack.VENDOR_TUNED for row in tf2017)
    ratios = _ratios(rows, "resnet50", Stack.VENDOR_TUNED, "P100")
    assert ratios["K80"] == pytest.approx(
        math.sqrt(math.sqrt(51.2 * 47.625) * math.sqrt(51.3 * 46.625)) / math.sqrt(218 * 203.75),
        rel=1e-3)
    assert "A100-80GB-SXM" not in ratios  # never in one suite with a DLE part


_SXM_PARTNERS = frozenset({"A100-80GB-SXM", "A100-40GB-SXM", "H100-SXM"})


@pytest.mark.parametrize(("part", "suites"), [
    # Dell DSS8440 and Supermicro AS-4142GS-TNR (v1.0), Dell DSS8440 (v1.1): 8 cards
    ("A100-40GB-PCIe", {"mlperf_training_v1.0", "mlperf_training_v1.1"}),
    # Dell/Lenovo (v1.1), ASUSTeK/H3C (v2.0), ASUSTeK/Lenovo/Supermicro (v2.1): 8 cards;
    # ASUSTeK and Dell 4-card servers in v3.0 (no new 8-card logs that round)
    ("A100-80GB-PCIe", {"mlperf_training_v1.1", "mlperf_training_v2.0",
                        "mlperf_training_v2.1", "mlperf_training_v3.0"}),
    # Inspur's 24-card nf5468m6j (v2.1, research) and IEI's 8-card nf5468m6 (v3.0)
    ("A40", {"mlperf_training_v2.1", "mlperf_training_v3.0"}),
])
def test_pcie_ampere_parts_load_from_mlperf_rounds(rows: tuple[PublishedRow, ...], part: str,
                                                   suites: set[str]) -> None:
    own = [row for row in rows if row.accelerator == part]
    assert {row.suite for row in own} == suites
    assert all(row.stack is Stack.MLPERF_TUNED and row.precision == "fp16" for row in own)
    # their MLPerf BERT runs are not entered (published_training.md says why)
    assert {row.workload for row in own} <= {"resnet50", "retinanet_mlperf"}


@pytest.mark.parametrize("part", ["A100-40GB-PCIe", "A100-80GB-PCIe", "A40"])
def test_pcie_ampere_rows_have_a_same_suite_sxm_partner(rows: tuple[PublishedRow, ...],
                                                        part: str) -> None:
    # ratios are only taken inside one MLPerf round: each (round, workload) a PCIe part
    # ran has an NVIDIA SXM part of the same workload beside it
    partners = {(row.suite, row.workload) for row in rows if row.accelerator in _SXM_PARTNERS}
    own = {(row.suite, row.workload) for row in rows if row.accelerator == part}
    assert own
    assert own <= partners, own - partners
