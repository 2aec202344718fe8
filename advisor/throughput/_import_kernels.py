"""Rebuild ``advisor/data/kernel_measurements.csv`` from a checkout of NeuSight's dataset.

Run ``python -m advisor.throughput._import_kernels PATH`` with PATH a checkout (or exported
tree) of ``github.com/trsharm25/NeuSight`` at ``COMMIT``. NeuSight (ASPLOS'25) timed single
PyTorch 2.1 operators in fp32 on several GPUs with CUDA events (``neusight/Dataset/collect.py``:
the mean of the fastest runs, in ms; the timed region is one operator call, so small kernels
carry the launch latency). This keeps, per operator and GPU, ``ROWS_PER_CELL`` rows spread
evenly over the log of the sizes measured (bytes moved for memory-bound operators, FLOPs for
matmuls and convolutions), on the GPUs the catalog names (``DEVICES``), and derives each
row's FLOPs and bytes moved from its shape as ``collect.py`` built the operator:

- binary element-wise ``add``/``mul`` read two ``B x H`` tensors and write one; unary
  ``addu`` (tensor + scalar), ``relu``, ``gelu``, ``tanh`` read one and write one;
- ``ln`` (``LayerNorm(H)`` on ``B x H``) reads and writes ``B x H`` plus its weight and bias;
  ``softmax`` reads and writes ``B x H``;
- ``linear``: ``Linear(N, K)`` on a ``B x M x N`` input, ``2 B M N K`` FLOPs; ``bmm``:
  ``(B x M x N) @ (B x N x K)``, ``2 B M N K`` FLOPs; both read their operands and write the
  output once;
- ``conv``: ``Conv2d(C_in, C_out, k, stride, padding, bias=False)`` on ``B x C_in x S x S``,
  ``2 B C_out S_out^2 C_in k^2`` FLOPs (direct convolution; cuDNN's Winograd kernels do
  fewer, so their achieved fraction of peak can pass 1).

The Tesla P4 and the V100-PCIE-32GB are left out: the catalog has neither (its V100s are
the SXM2 parts, clocked higher).
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

__all__ = ["COLUMNS", "COMMIT", "DEVICES", "OPERATORS", "ROWS_PER_CELL", "build_kernels",
           "kernel_row", "main"]

COMMIT = "db1fdc966633fe96c0717e0706e7621ad0921ed2"
_CAPTURED = "2025-05-21"  # the commit's date; NeuSight publishes no date per measurement
_DATASET = "scripts/asplos/data/dataset"
COLUMNS = ["operator", "op_class", "dtype", "shape", "flops", "bytes_moved", "accelerator",
           "device", "latency_ms", "source", "captured"]
# NeuSight's device name (torch.cuda.get_device_name) -> the catalog's accelerator name
DEVICES = {
    "Tesla P100-PCIE-16GB": "P100",
    "Tesla T4": "T4",
    "NVIDIA A100-PCIE-40GB": "A100-40GB-PCIe",
    "NVIDIA A100 80GB PCIe": "A100-80GB-PCIe",
    "NVIDIA L4": "L4",
    "NVIDIA H100 80GB HBM3": "H100-SXM",
}
_F32 = 4  # bytes per fp32 element


def _vector(tensors: int) -> Callable[[Mapping[str, str]], tuple[str, float, float]]:
    def cost(r: Mapping[str, str]) -> tuple[str, float, float]:
        b, h = int(r["B"]), int(r["H"])
        return f"B={b};H={h}", 0.0, float(tensors * b * h * _F32)
    return cost


def _layer_norm(r: Mapping[str, str]) -> tuple[str, float, float]:
    b, h = int(r["B"]), int(r["H"])
    return f"B={b};H={h}", 0.0, float((2 * b * h + 2 * h) * _F32)


def _linear(r: Mapping[str, str]) -> tuple[str, float, float]:
    b, m, n, k = (int(r[c]) for c in "BMNK")
    return (f"B={b};M={m};N={n};K={k}", 2.0 * b * m * n * k,
            float((b * m * n + n * k + k + b * m * k) * _F32))


def _bmm(r: Mapping[str, str]) -> tuple[str, float, float]:
    b, m, n, k = (int(r[c]) for c in "BMNK")
    return (f"B={b};M={m};N={n};K={k}", 2.0 * b * m * n * k,
            float(b * (m * n + n * k + m * k) * _F32))


def _conv(r: Mapping[str, str]) -> tuple[str, float, float]:
    b, c_in, c_out = int(r["B"]), int(r["Input_Channel"]), int(r["Output_Channel"])
    k, size = int(r["Kernel_Szie"]), int(r["Input_Size"])  # NeuSight's column spelling
    stride, padding = int(r["Stride"]), int(r["Padding"])
    out = (size + 2 * padding - k) // stride + 1
    return (f"B={b};Cin={c_in};Cout={c_out};k={k};S={size};stride={stride};pad={padding}",
            2.0 * b * c_out * out * out * c_in * k * k,
            float((b * c_in * size * size + c_out * c_in * k * k + b * c_out * out * out) * _F32))


# operator -> (op class, cost from the row's shape columns, test-split file or None)
OPERATORS: dict[str, tuple[str, Callable[[Mapping[str, str]], tuple[str, float, float]],
                           str | None]] = {
    "add": ("elementwise", _vector(3), "elem"),
    "mul": ("elementwise", _vector(3), "elem"),
    "addu": ("elementwise", _vector(2), "elem"),
    "relu": ("elementwise", _vector(2), "elem"),
    "gelu": ("elementwise", _vector(2), "elem"),
    "tanh": ("elementwise", _vector(2), "elem"),
    "ln": ("normalization", _layer_norm, "ln"),
    "softmax": ("reduction", _vector(2), "softmax"),
    "linear": ("matmul", _linear, "linear"),
    "bmm": ("matmul", _bmm, "bmm"),
    "conv": ("convolution", _conv, None),
}
ROWS_PER_CELL = 16  # per operator and GPU


def kernel_row(r: Mapping[str, str], source: str) -> dict[str, str] | None:
    """One NeuSight row as a row of ``COLUMNS`` (None for an operator or device not kept, or
    a row without a positive latency)."""
    operator, device = r.get("OPName", ""), r.get("Device", "")
    if operator not in OPERATORS or device not in DEVICES:
        return None
    latency = float(r["Latency"])
    if not latency > 0:
        return None
    op_class, cost, _ = OPERATORS[operator]
    shape, flops, moved = cost(r)
    return {"operator": operator, "op_class": op_class, "dtype": "float32", "shape": shape,
            "flops": f"{flops:.6g}", "bytes_moved": f"{moved:.6g}",
            "accelerator": DEVICES[device], "device": device, "latency_ms": f"{latency:.6g}",
            "source": source, "captured": _CAPTURED}


def _size(row: Mapping[str, str]) -> float:
    return float(row["flops"]) or float(row["bytes_moved"])


def _spread(rows: list[dict[str, str]], count: int) -> list[dict[str, str]]:
    """Up to ``count`` rows spread evenly over the log of their size (FLOPs, else bytes): for
    each of ``count`` evenly spaced log sizes, the nearest row not yet taken."""
    left = sorted({r["shape"]: r for r in rows}.values(), key=lambda r: (_size(r), r["shape"]))
    if len(left) <= count:
        return left
    low, high = math.log(_size(left[0])), math.log(_size(left[-1]))
    taken = []
    for i in range(count):
        goal = low + (high - low) * i / (count - 1)
        best = min(left, key=lambda r: abs(math.log(_size(r)) - goal))
        left.remove(best)
        taken.append(best)
    return sorted(taken, key=lambda r: (_size(r), r["shape"]))


def _files(root: Path) -> Iterable[tuple[Path, str]]:
    base = root / _DATASET
    for operator, (_, _, test) in sorted(OPERATORS.items()):
        for path in sorted((base / "train" / "collect" / operator / "p2.1.0").glob("*.csv")):
            yield path, operator
        if test is not None:
            yield base / "test" / f"{test}.csv", operator


def build_kernels(root: Path) -> str:
    """The CSV text of the kept rows, read from the NeuSight checkout at ``root``."""
    cells: dict[tuple[str, str], list[dict[str, str]]] = {}
    for path, operator in _files(root):
        source = f"trsharm25/NeuSight@{COMMIT[:12]} {path.relative_to(root).as_posix()}"
        with path.open(newline="") as f:
            for r in csv.DictReader(f):
                if r.get("OPName") != operator:
                    continue
                row = kernel_row(r, source)
                if row is not None:
                    cells.setdefault((operator, row["accelerator"]), []).append(row)
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for key in sorted(cells):
        writer.writerows(_spread(cells[key], ROWS_PER_CELL))
    return out.getvalue()


def main(argv: list[str]) -> None:
    """Write the shipped file from the checkout named by ``argv[0]``."""
    if len(argv) != 1:
        raise SystemExit("usage: python -m advisor.throughput._import_kernels NEUSIGHT_CHECKOUT")
    target = Path(__file__).resolve().parent.parent / "data" / "kernel_measurements.csv"
    target.write_text(build_kernels(Path(argv[0])))


if __name__ == "__main__":
    main(sys.argv[1:])
