"""Per-class efficiency priors from measured single-kernel latencies (issue 28).

``advisor/data/kernel_measurements.csv`` holds NeuSight's (ASPLOS'25) fp32 operator timings
on six catalog GPUs (``advisor/data/kernel_measurements.md``). Each row's achieved fraction of
the GPU's datasheet peak is its bytes moved over latency over memory bandwidth for the
memory-bound classes (element-wise, normalization, reduction) and its FLOPs over latency over
the fp32 CUDA-core peak for matmuls and convolutions (PyTorch 2.1's fp32 defaults: ``sgemm``
and cuDNN's fp32 kernels, the roofline's ``simt`` path).

``kernel_priors`` turns them into the roofline's starting efficiencies: per class, over the
kernels at least as large as a training step's (``LARGE_BYTES`` / ``LARGE_FLOPS``: below
them the launch latency dominates, and the reference mixes' mean kernel is 50 MB and more),
the median over GPUs of each GPU's median fraction, each GPU counted once. A class with no
kernel of its own takes the element-wise (streaming) figure for its bytes: an embedding
gather, a copy or concatenation, an optimizer's ``foreach`` update and a matmul bound by its
operands all stream memory. The priors are where ``RooflinePrior``'s end-to-end fit starts
and what it is pulled back to, not fixed values.
"""

from __future__ import annotations

import csv
import functools
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.profiling import COMPUTE_CLASSES, OpClass
from pricing import AcceleratorSpec

__all__ = ["KERNEL_MEASUREMENTS_CSV", "LARGE_BYTES", "LARGE_FLOPS", "KernelMeasurement",
           "KernelPriors", "achieved_fraction", "kernel_priors", "load_kernel_measurements",
           "shipped_kernel_priors"]

KERNEL_MEASUREMENTS_CSV = Path(__file__).parent.parent / "data" / "kernel_measurements.csv"
LARGE_BYTES = 64e6  # memory-bound kernels from this size on run near their streaming rate
LARGE_FLOPS = 1e10  # matmuls and convolutions from this size on fill every GPU here
_STREAMING = OpClass.ELEMENTWISE
_BOUNDS = (0.05, 0.95)  # priors are kept inside (0, 1) on the logit scale


@dataclass(frozen=True, slots=True)
class KernelMeasurement:
    """One timed kernel: ``operator`` of ``op_class`` in ``dtype`` on ``accelerator`` (the
    catalog's name), ``flops`` and ``bytes_moved`` by its shape, ``latency_s`` measured."""

    operator: str
    op_class: OpClass
    dtype: str
    shape: str
    flops: float
    bytes_moved: float
    accelerator: str
    latency_s: float
    source: str
    captured: str

    def __post_init__(self) -> None:
        if not self.latency_s > 0 or self.flops < 0 or not self.bytes_moved > 0:
            raise AdvisorError(f"kernel measurement {self.operator} {self.shape} on "
                               f"{self.accelerator}: latency_s, bytes_moved must be > 0 and "
                               "flops >= 0")

    @property
    def compute_bound(self) -> bool:
        """Whether it is judged by FLOP/s (matmul, convolution), not by bandwidth."""
        return self.op_class in COMPUTE_CLASSES and self.flops > 0


@dataclass(frozen=True, slots=True)
class KernelPriors:
    """Starting efficiencies: ``bytes_efficiency`` per class, ``flops_efficiency`` per
    (compute class, path); classes and paths absent keep the roofline's uniform prior."""

    bytes_efficiency: Mapping[OpClass, float]
    flops_efficiency: Mapping[tuple[OpClass, str], float]


def load_kernel_measurements(path: Path = KERNEL_MEASUREMENTS_CSV) -> list[KernelMeasurement]:
    """The rows of the shipped kernel table; AdvisorError naming the line of a bad one."""
    out = []
    with path.open(newline="") as f:
        for line, r in enumerate(csv.DictReader(f), start=2):
            try:
                out.append(KernelMeasurement(
                    r["operator"], OpClass(r["op_class"]), r["dtype"], r["shape"],
                    float(r["flops"]), float(r["bytes_moved"]), r["accelerator"],
                    float(r["latency_ms"]) / 1e3, r["source"], r["captured"]))
            except (KeyError, ValueError, TypeError, AdvisorError) as exc:
                raise AdvisorError(f"{path.name} line {line}: {exc}") from exc
    return out


def achieved_fraction(m: KernelMeasurement, spec: AcceleratorSpec) -> float:
    """The fraction of ``spec``'s peak the kernel reached: fp32 CUDA-core FLOP/s for a
    compute-bound one, memory bandwidth otherwise."""
    if m.compute_bound:
        if not spec.fp32_tflops:
            raise AdvisorError(f"accelerator {spec.name} has no fp32 TFLOPS figure")
        return m.flops / m.latency_s / (spec.fp32_tflops * 1e12)
    if spec.memory_bandwidth_gbs <= 0:
        raise AdvisorError(f"accelerator {spec.name} has no memory bandwidth figure")
    return m.bytes_moved / m.latency_s / (spec.memory_bandwidth_gbs * 1e9)


def _large(m: KernelMeasurement) -> bool:
    return m.flops >= LARGE_FLOPS if m.compute_bound else m.bytes_moved >= LARGE_BYTES


def _median_of_gpus(values: Mapping[str, list[float]]) -> float:
    low, high = _BOUNDS
    return min(max(statistics.median(statistics.median(v) for v in values.values()), low), high)


def kernel_priors(measurements: Sequence[KernelMeasurement],
                  accelerators: Mapping[str, AcceleratorSpec]) -> KernelPriors:
    """Per-class priors from the large kernels of ``measurements`` on ``accelerators`` (see
    the module); fp32 kernels only, compute-bound ones priced on the ``simt`` path."""
    by_bytes: dict[OpClass, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_flops: dict[OpClass, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        spec = accelerators.get(m.accelerator)
        if spec is None or m.dtype != "float32" or not _large(m):
            continue
        table = by_flops if m.compute_bound else by_bytes
        table[m.op_class][m.accelerator].append(achieved_fraction(m, spec))
    bytes_efficiency = {c: _median_of_gpus(v) for c, v in by_bytes.items()}
    if _STREAMING in bytes_efficiency:
        for c in OpClass:
            bytes_efficiency.setdefault(c, bytes_efficiency[_STREAMING])
    flops_efficiency = {(c, "simt"): _median_of_gpus(v) for c, v in by_flops.items()}
    return KernelPriors(bytes_efficiency, flops_efficiency)


@functools.cache
def shipped_kernel_priors() -> KernelPriors:
    """``kernel_priors`` of the shipped table on the catalog's accelerators."""
    from pricing import load_accelerators

    return kernel_priors(load_kernel_measurements(), load_accelerators())
