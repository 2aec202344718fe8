"""The shipped single-kernel table (NeuSight's measurements) and the priors drawn from it."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from advisor.errors import AdvisorError
from advisor.profiling import OpClass
from advisor.throughput._import_kernels import COLUMNS, COMMIT, DEVICES, kernel_row
from advisor.throughput.kernel_efficiency import (
    KERNEL_MEASUREMENTS_CSV,
    LARGE_BYTES,
    KernelMeasurement,
    achieved_fraction,
    kernel_priors,
    load_kernel_measurements,
    shipped_kernel_priors,
)
from pricing import load_accelerators

SPECS = load_accelerators()
ROWS = load_kernel_measurements()
_BEYOND_L2_BYTES = 200e6  # four times the largest L2 here (H100: 50 MB)


def test_the_file_is_small_and_has_its_columns_and_readme() -> None:
    assert KERNEL_MEASUREMENTS_CSV.stat().st_size < 300_000
    with KERNEL_MEASUREMENTS_CSV.open(newline="") as f:
        assert next(csv.reader(f)) == COLUMNS
    assert KERNEL_MEASUREMENTS_CSV.with_suffix(".md").is_file()


def test_every_row_names_a_catalog_gpu_its_source_and_a_date() -> None:
    assert {r.accelerator for r in ROWS} == set(DEVICES.values())
    for r in ROWS:
        assert r.accelerator in SPECS
        assert r.source.startswith(f"trsharm25/NeuSight@{COMMIT[:12]} scripts/asplos/data/dataset/")
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", r.captured)
        assert r.dtype == "float32"


def test_every_class_measured_on_several_gpus() -> None:
    for op_class in (OpClass.ELEMENTWISE, OpClass.NORMALIZATION, OpClass.REDUCTION,
                     OpClass.MATMUL, OpClass.CONVOLUTION):
        assert len({r.accelerator for r in ROWS if r.op_class is op_class}) >= 3, op_class


def test_bandwidth_beyond_the_caches_stays_under_the_datasheet_peak() -> None:
    """Memory-bound kernels too large for any L2 move at most the datasheet bandwidth (and
    at least a third of it: a row far below would be a wrong byte count)."""
    big = [r for r in ROWS if not r.compute_bound and r.bytes_moved >= _BEYOND_L2_BYTES]
    assert len(big) > 100
    for r in big:
        assert 0.33 < achieved_fraction(r, SPECS[r.accelerator]) <= 1.0, (r.operator, r.shape)


def test_matmuls_stay_under_the_fp32_peak_and_winograd_under_its_saving() -> None:
    """sgemm cannot pass the fp32 peak; cuDNN's Winograd convolutions can pass it on the
    direct-convolution FLOPs, by less than F(4x4, 3x3)'s multiplication saving (4x)."""
    for r in ROWS:
        if r.op_class is OpClass.MATMUL:
            assert achieved_fraction(r, SPECS[r.accelerator]) <= 1.0, r.shape
        if r.op_class is OpClass.CONVOLUTION:
            assert achieved_fraction(r, SPECS[r.accelerator]) < 4.0, r.shape


# A NeuSight row per operator kind, with its FLOPs and bytes worked out by hand.
@pytest.mark.parametrize(("row", "flops", "moved"), [
    # add: two 2x3 fp32 inputs and one output
    ({"OPName": "add", "B": "2", "H": "3"}, 0.0, 3 * 6 * 4),
    # relu: one input, one output
    ({"OPName": "relu", "B": "2", "H": "3"}, 0.0, 2 * 6 * 4),
    # LayerNorm(3) on 2x3: in, out, weight, bias
    ({"OPName": "ln", "B": "2", "H": "3"}, 0.0, (12 + 6) * 4),
    # Linear(N=3, K=4) on 1x2x3: 2*1*2*3*4 FLOPs; input 6, weight 12, bias 4, output 8
    ({"OPName": "linear", "B": "1", "M": "2", "N": "3", "K": "4"}, 48.0, 30 * 4),
    # bmm (2x2x3) @ (2x3x4): inputs 12 + 24, output 16
    ({"OPName": "bmm", "B": "2", "M": "2", "N": "3", "K": "4"}, 96.0, 52 * 4),
    # Conv2d(1, 2, 3) on 1x1x4x4, stride 1, no padding: 2x2 output, 2*1*2*4*1*9 FLOPs
    ({"OPName": "conv", "B": "1", "Input_Channel": "1", "Output_Channel": "2",
      "Kernel_Szie": "3", "Input_Size": "4", "Stride": "1", "Padding": "0"},
     144.0, (16 + 18 + 8) * 4),
])
def test_the_importer_counts_flops_and_bytes_from_the_shape(row: dict[str, str], flops: float,
                                                           moved: float) -> None:
    out = kernel_row({**row, "Latency": "0.5", "Device": "Tesla T4"}, "src")
    assert out is not None
    assert float(out["flops"]) == flops
    assert float(out["bytes_moved"]) == moved
    assert out["accelerator"] == "T4"


def test_the_importer_skips_gpus_the_catalog_lacks() -> None:
    assert kernel_row({"OPName": "add", "B": "2", "H": "3", "Latency": "0.5",
                       "Device": "Tesla P4"}, "src") is None


def _kernel(op_class: OpClass, accelerator: str, fraction: float, *,
            moved: float = 1e9) -> KernelMeasurement:
    """A memory-bound kernel reaching ``fraction`` of ``accelerator``'s bandwidth."""
    seconds = moved / (SPECS[accelerator].memory_bandwidth_gbs * 1e9 * fraction)
    return KernelMeasurement("x", op_class, "float32", "s", 0.0, moved, accelerator, seconds,
                             "src", "2025-01-01")


def test_priors_ignore_launch_bound_kernels_and_count_each_gpu_once() -> None:
    rows = [_kernel(OpClass.ELEMENTWISE, "T4", 0.6), _kernel(OpClass.ELEMENTWISE, "L4", 0.8),
            _kernel(OpClass.ELEMENTWISE, "P100", 0.7),
            *[_kernel(OpClass.ELEMENTWISE, "T4", 0.01, moved=LARGE_BYTES / 10)] * 20,
            *[_kernel(OpClass.ELEMENTWISE, "L4", 0.9)] * 5]
    priors = kernel_priors(rows, SPECS)
    # per GPU: T4 0.6 (the small ones ignored), L4 0.9, P100 0.7; median 0.7
    assert priors.bytes_efficiency[OpClass.ELEMENTWISE] == pytest.approx(0.7)


def test_classes_without_kernels_take_the_streaming_figure() -> None:
    rows = [_kernel(OpClass.ELEMENTWISE, "T4", 0.7), _kernel(OpClass.NORMALIZATION, "T4", 0.4)]
    priors = kernel_priors(rows, SPECS)
    assert priors.bytes_efficiency[OpClass.NORMALIZATION] == pytest.approx(0.4)
    assert priors.bytes_efficiency[OpClass.EMBEDDING] == pytest.approx(0.7)
    assert priors.flops_efficiency == {}


def test_shipped_priors_are_bounded_and_below_the_peak() -> None:
    priors = shipped_kernel_priors()
    assert set(priors.bytes_efficiency) == set(OpClass)
    assert set(priors.flops_efficiency) == {(OpClass.MATMUL, "simt"),
                                            (OpClass.CONVOLUTION, "simt")}
    for value in [*priors.bytes_efficiency.values(), *priors.flops_efficiency.values()]:
        assert 0.05 <= value <= 0.95
    # large element-wise kernels stream at 70-90% of the datasheet bandwidth on every GPU here
    assert 0.7 <= priors.bytes_efficiency[OpClass.ELEMENTWISE] <= 0.9


@pytest.mark.parametrize(("column", "value"), [
    ("latency_ms", "fast"),   # not a number
    ("latency_ms", "0"),      # not a time
    ("op_class", "gemm"),     # not a class
])
def test_a_bad_row_is_named_by_its_line(tmp_path: Path, column: str, value: str) -> None:
    with KERNEL_MEASUREMENTS_CSV.open(newline="") as f:
        rows = list(csv.DictReader(f))[:2]
    rows[1][column] = value
    path = tmp_path / "k.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(AdvisorError, match="k.csv line 3"):
        load_kernel_measurements(path)
