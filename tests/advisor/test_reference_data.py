"""The shipped reference measurements: rebuilt from shared/data, plausible, sourced."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from pathlib import Path

import pytest

from advisor.throughput._import_reference import COLUMNS, build_reference
from advisor.throughput.reference import REFERENCE_CSV, load_reference

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not SHARED.exists(), reason="shared/data is not beside this checkout")
def test_shipped_reference_equals_a_rebuild_from_shared_data() -> None:
    rows = build_reference((SHARED / "benchmarks/lambda_train_throughput.csv").read_text())
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    assert REFERENCE_CSV.read_text() == out.getvalue()


def test_implausible_rows_are_dropped_and_every_row_is_sourced() -> None:
    with REFERENCE_CSV.open() as handle:
        raw = list(csv.DictReader(handle))
    assert all(r["source"] and r["captured_at"] for r in raw)
    assert max(float(r["samples_per_second"]) for r in raw) < 1e9


_LAMBDA_HEADER = ("source,model,precision,accelerator,system_name,num_accelerators,"
                  "batch_size_per_gpu,throughput_samples_per_s,system_power_w,system_hw_price_usd")


@pytest.mark.parametrize(("count", "lambda_batch", "per_accelerator"), [
    # one GPU: the column is the per-GPU batch
    ("1", "720.0", "720"),
    # eight GPUs: the column is the global batch, eight times the per-GPU one
    ("8", "5760.0", "720"),
    # a global batch that does not divide by the GPU count is not known
    ("8", "182.0", "0"),
    # a blank batch is not known
    ("2", "", "0"),
])
def test_the_lambda_batch_is_divided_by_the_gpu_count(count: str, lambda_batch: str,
                                                     per_accelerator: str) -> None:
    line = f"lambda_v0,resnet50,fp32,A100-80GB-SXM,x,{count},{lambda_batch},1000.0,400.0,1.0"
    (row,) = build_reference(f"{_LAMBDA_HEADER}\n{line}\n")
    assert row["batch_size_per_accelerator"] == per_accelerator


def test_multi_device_rows_share_the_one_device_batch_where_the_source_is_consistent() -> None:
    # Lambda's cells whose global batch is N x the one-GPU batch (1,566 of 1,652 with a twin
    # in shared/data; 1,544 of 1,629 with a known batch here, as implausible ncf rows are dropped)
    one_device: dict[tuple[str, str, str, str], set[int]] = defaultdict(set)
    rows = load_reference()
    for r in rows:
        if r.accelerator_count == 1:
            one_device[(r.generation, r.model, r.precision, r.accelerator)].add(
                r.batch_size_per_accelerator)
    twinned = [r for r in rows if r.accelerator_count > 1 and r.batch_size_per_accelerator
               and (r.generation, r.model, r.precision, r.accelerator) in one_device]
    same = [r for r in twinned if r.batch_size_per_accelerator
            in one_device[(r.generation, r.model, r.precision, r.accelerator)]]
    assert len(same) >= 1540 and len(same) / len(twinned) > 0.9
    resnet = {r.accelerator_count: r.batch_size_per_accelerator for r in rows
              if (r.generation, r.model, r.precision, r.accelerator)
              == ("lambda_v0", "resnet50", "fp32", "A100-80GB-SXM")}
    assert resnet == {1: 720, 2: 720, 4: 720, 8: 720}


def test_both_software_generations_and_precisions_are_present() -> None:
    rows = load_reference()
    assert {r.generation for r in rows} == {"lambda_v0", "lambda_v1"}
    assert {r.precision for r in rows} == {"fp32", "mixed"}
    assert {r.accelerator_count for r in rows} >= {1, 2, 4, 8}


@pytest.mark.parametrize(("change", "named"), [
    # a count that is not a whole number
    ((4, "8.5"), "line 3: accelerator_count '8.5' is not a whole number"),
    # a batch size that is text
    ((5, "big"), "line 3: batch_size_per_accelerator 'big' is not a whole number"),
    # a throughput that is not a number
    ((6, "fast"), "line 3: samples_per_second 'fast' is not a number"),
    # a throughput that is not above zero
    ((6, "0"), "line 3: samples_per_second '0' must be a finite number above zero"),
])
def test_a_bad_reference_row_is_one_line_naming_it(tmp_path: Path, change: tuple[int, str],
                                                   named: str) -> None:
    from advisor.errors import AdvisorError

    header, first, second = REFERENCE_CSV.read_text().splitlines()[:3]
    cells = next(csv.reader([second]))
    cells[change[0]] = change[1]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    path = tmp_path / "reference_throughput.csv"
    path.write_text(f"{header}\n{first}\n{out.getvalue()}")
    with pytest.raises(AdvisorError, match=f"^reference_throughput.csv {named}$"):
        load_reference(path)


def test_a_reference_table_without_a_column_is_refused(tmp_path: Path) -> None:
    from advisor.errors import AdvisorError

    path = tmp_path / "reference_throughput.csv"
    path.write_text("generation,model\nlambda_v0,ssd\n")
    with pytest.raises(AdvisorError, match="reference_throughput.csv: missing column"):
        load_reference(path)


_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "lambda_configs"


def _block(config: str, name: str) -> list[str]:
    """The arguments of ``name``'s block (``name=( ... )``) in a Lambda config excerpt."""
    text = (_CONFIGS / config).read_text()
    body = text.split(f"{name}=(", 1)[1].split("\n)", 1)[0].split(")", 1)[0]
    return [word.strip('"') for word in body.split()]


def _ncf_mixed_row(accelerator: str) -> dict[str, str]:
    line = f"lambda_v1,ncf,fp16_amp,{accelerator},x,1,10000000.0,5.0e7,700.0,1.0"
    (row,) = build_reference(f"{_LAMBDA_HEADER}\n{line}\n")
    return row


@pytest.mark.parametrize(("config", "accelerator"), [
    # lambda_v1's 80 GB command line, sourced by the A100 80GB and H100 systems
    ("config_v1_80GB_ncf.sh", "H100-SXM"),
    ("config_v1_80GB_ncf.sh", "A100-80GB-PCIe"),
    # the 48 GB one (RTX A6000, RTX 6000 Ada), a control: it passes --amp
    ("config_v1_48GB_ncf.sh", "RTX-A6000"),
])
def test_an_ncf_cell_is_labelled_with_the_precision_its_command_line_ran(
        config: str, accelerator: str) -> None:
    ran_amp = "--amp" in _block(config, "PyTorch_ncf_FP16_PARAMS")
    assert _ncf_mixed_row(accelerator)["precision"] == ("mixed" if ran_amp else "fp32")


def test_the_2080ti_bert_large_cells_that_ran_no_fp16_on_one_gpu_are_dropped() -> None:
    # run_squad.sh's arguments: checkpoint, epochs, batch, learning rate, precision, GPUs
    args = _block("config_v0_2x2080Ti_trt_bert_large.sh", "PyTorch_bert_large_squad_FP16_PARAMS")
    precision, gpus = args[6], args[7]
    assert (precision, gpus) == ("${NUM_GPU}", "1")  # not "fp16": fp32, on one GPU
    lines = [f"lambda_v0,bert_large_squad,fp16_amp,RTX-2080Ti,x,{n},{2 * n}.0,6.0,250.0,1.0"
             for n in (1, 2, 4, 8)]
    rows = build_reference("\n".join([_LAMBDA_HEADER, *lines]) + "\n")
    assert [(r["accelerator_count"], r["precision"]) for r in rows] == [("1", "mixed")]
