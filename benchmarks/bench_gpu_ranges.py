"""No-probe predictions of the built-in examples against real H100 and H200 measurements.

The figures are the probe harness's own on real GPUs (shared/data/gpu/builtins-h100-h200.md,
H100 80GB HBM3 SXM on 2026-11-24, H200 on 2026-11-26); the model never saw them. Per example
and GPU: the measured samples/s, `recommend`'s no-probe figure for one device with its 90%
interval and basis, the error, whether the measurement is inside, the interval's width (high /
low), and the predicted H200/H100 ratio against the measured one. Below the table it keeps the
dated diagnosis of the misses (``gpu_ranges_diagnosis.md`` beside this script, written by hand
from ``benchmarks/diagnose_gpu_ranges.py``), so a rerun does not drop it.

Run: python benchmarks/bench_gpu_ranges.py   (writes benchmarks/results/gpu_ranges.md)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_table  # noqa: E402

from advisor.profiling import profile_workload  # noqa: E402
from advisor.ranking.recommend import default_throughput_model, workload_features  # noqa: E402
from advisor.ranking.service import traced_op_mix  # noqa: E402
from advisor.spec import WorkloadSpec, load_workload_spec  # noqa: E402
from advisor.throughput.estimate import WorkloadFeatures  # noqa: E402
from pricing import shipped_catalog  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DIAGNOSIS = Path(__file__).with_name("gpu_ranges_diagnosis.md")
# example: (H100-SXM, H200) samples/s measured by the probe harness
MEASURED = {"resnet50": (2205.0, 2423.0), "gpt2": (227.3, 245.0), "bert": (2654.0, 2979.0)}


def example_features(spec: WorkloadSpec) -> WorkloadFeatures:
    """What ``recommend`` predicts a built-in example from: its profile and traced mix."""
    return workload_features(spec, profile_workload(spec), traced_op_mix(spec))


def main() -> None:
    catalog = shipped_catalog()
    model = default_throughput_model(catalog)
    rows, inside, widths, errors = [], 0, [], []
    for example, measured in MEASURED.items():
        spec = load_workload_spec(ROOT / "examples" / f"{example}.yaml")
        features = example_features(spec)
        predicted = {}
        for name, value in zip(("H100-SXM", "H200"), measured, strict=True):
            est = model.estimate(features, catalog.accelerators[name], count=1)
            predicted[name] = est.samples_per_second
            hit = est.samples_per_second_low <= value <= est.samples_per_second_high
            width = est.samples_per_second_high / est.samples_per_second_low
            error = est.samples_per_second / value - 1
            inside += hit
            widths.append(width)
            errors.append(abs(error))
            rows.append([example, name, f"{value:,.0f}", f"{est.samples_per_second:,.0f}",
                         f"{est.samples_per_second_low:,.0f}-{est.samples_per_second_high:,.0f}",
                         str(est.basis), f"{error:+.0%}", "yes" if hit else "no",
                         f"{width:.2f}", ""])
        rows[-1][-1] = (f"{predicted['H200'] / predicted['H100-SXM']:.2f} vs "
                        f"{measured[1] / measured[0]:.2f}")
    write_table("gpu_ranges", "No-probe predictions vs real H100 / H200 (built-in examples)",
                ["example", "GPU", "measured", "predicted", "90% interval", "basis", "error",
                 "inside", "high / low", "H200/H100 predicted vs measured"], rows,
                ["command: python benchmarks/bench_gpu_ranges.py",
                 f"inside: {inside} of {len(rows)}; median |error| "
                 f"{statistics.median(errors):.0%}; median width {statistics.median(widths):.2f}",
                 "measured: the probe harness on real GPUs (shared/data/gpu/builtins-h100-h200.md),"
                 " never seen by the model"],
                appendix=DIAGNOSIS.read_text() if DIAGNOSIS.is_file() else "")


if __name__ == "__main__":
    main()
