"""What a one-device probe can know of N devices (issue 29): diagnosis notes for bench_ranges.

``efficiency_notes``: how much of the reference efficiencies' spread around each accelerator and
count's median a workload effect explains in sample (the most any prediction from the
workload can), how much the shipped ``ScalingModel`` explains held out by model, and the
width a 90% interval of its held-out misses needs per interconnect class and count (the
5th-95th percentiles themselves, with the probe's half-width in quadrature: no bound rule
held out can be narrower at that coverage). ``h200_notes``: the N x H200 ranges of the
built-in examples after the real H200 probe (bench_gpu_ranges' figures) is stored.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Hashable
from pathlib import Path

import numpy as np

from advisor.throughput.reference import ReferenceRow
from advisor.throughput.scaling import ScalingModel, interconnect_class
from pricing import AcceleratorSpec

Point = dict[str, object]
ROOT = Path(__file__).resolve().parent.parent
# samples/s of the built-in examples on one H200, measured by the probe harness
# (shared/data/gpu/builtins-h100-h200.md, 2026-11-26; bench_gpu_ranges.MEASURED)
H200_PROBES = {"resnet50": 2423.0, "gpt2": 245.0, "bert": 2979.0}


def _points(rows: tuple[ReferenceRow, ...], specs: dict[str, AcceleratorSpec]) -> list[Point]:
    """Every plausible 1/N pair with a spec: its log efficiency, held-out fitted log
    efficiency (the model's rows out) and keys."""
    singles = {(r.generation, r.model, r.precision, r.accelerator): r
               for r in rows if r.accelerator_count == 1}
    found: list[Point] = []
    for name in sorted({r.model for r in rows}):
        without = ScalingModel().fit_point([r for r in rows if r.model != name], specs)
        for r in rows:
            one = singles.get((r.generation, r.model, r.precision, r.accelerator))
            spec = specs.get(r.accelerator)
            if r.model != name or r.accelerator_count <= 1 or one is None or spec is None:
                continue
            efficiency = r.samples_per_second / (r.accelerator_count * one.samples_per_second)
            if not 0.2 <= efficiency <= 1.5:
                continue
            load = without.row_load(r, one)
            fitted = without.efficiency(spec, r.accelerator_count, load=load)
            found.append({"log": math.log(efficiency), "held": math.log(fitted),
                          "known": load is not None, "count": r.accelerator_count,
                          "accelerator": r.accelerator, "class": interconnect_class(spec),
                          "workload": (r.generation, r.model, r.precision)})
    medians: dict[Hashable, list[float]] = defaultdict(list)
    for p in found:
        medians[(p["accelerator"], p["count"])].append(float(p["log"]))  # type: ignore[arg-type]
    for p in found:
        p["centred"] = float(p["log"]) - statistics.median(  # type: ignore[arg-type]
            medians[(p["accelerator"], p["count"])])
    return found


def _explained(points: list[Point], key: Callable[[Point], Hashable]) -> float:
    """Share of the centred log efficiencies' variance a mean per ``key`` and doubling
    explains (in sample)."""
    per: dict[Hashable, list[float]] = defaultdict(list)
    for p in points:
        per[key(p)].append(float(p["centred"]) / math.log2(float(p["count"])))  # type: ignore[arg-type]
    means = {k: statistics.fmean(v) for k, v in per.items()}
    centred = np.array([float(p["centred"]) for p in points])  # type: ignore[arg-type]
    left = centred - np.array([means[key(p)] * math.log2(float(p["count"]))  # type: ignore[arg-type]
                               for p in points])
    return float(1 - left.var() / centred.var())


def efficiency_notes(rows: tuple[ReferenceRow, ...], specs: dict[str, AcceleratorSpec],
                     halfwidth: float) -> list[str]:
    """Notes: the share of the spread a workload can explain, the share the shipped fit
    explains held out, and the narrowest 90% interval its held-out misses allow."""
    points = _points(rows, specs)
    shares = [f"{100 * _explained(points, key):.0f}%" for key in (
        lambda p: p["workload"], lambda p: (p["workload"], p["class"]),
        lambda p: (p["workload"], p["accelerator"]))]
    h = math.log(1 + halfwidth)
    parts = []
    for known, label in ((True, "known load"), (False, "unknown load")):
        chosen = [p for p in points if p["known"] is known]
        miss = np.array([float(p["log"]) - float(p["held"]) for p in chosen])  # type: ignore[arg-type]
        centred = np.array([float(p["centred"]) for p in chosen])  # type: ignore[arg-type]
        widths: list[float] = []
        for key in sorted({(p["class"], p["count"]) for p in chosen}):  # type: ignore[type-var]
            cell = miss[[i for i, p in enumerate(chosen) if (p["class"], p["count"]) == key]]
            low, high = np.quantile(cell, 0.05), np.quantile(cell, 0.95)
            widths += [math.exp(math.hypot(h, low) + math.hypot(h, high))] * len(cell)
        parts.append(f"{label} ({len(chosen)} cells): held-out R² "
                     f"{1 - float(np.mean(miss ** 2)) / float(centred.var()):.2f}, 5-95% of "
                     f"the misses x{math.exp(np.quantile(miss, 0.95) - np.quantile(miss, 0.05)):.2f},"
                     f" a 90% interval of them per class and count at least x"
                     f"{statistics.median(widths):.2f} (median)")
    return [
        "what a workload can explain (in sample, the log efficiencies centred on each "
        "accelerator and count's median): a mean per workload and doubling explains "
        f"{shares[0]} of their variance, per workload and interconnect class {shares[1]}, per "
        f"workload and accelerator {shares[2]}: most of the spread is how one workload meets "
        "one machine, which no one-device probe of a new workload sees",
        "the shipped efficiency held out by model (R² against the accelerator and count's "
        "median, in sample; the narrowest interval: the misses' own 5th and 95th percentiles "
        f"per class and count, the probe's {100 * halfwidth:.1f}% in quadrature): "
        + "; ".join(parts)]


def h200_notes() -> list[str]:
    """Notes: the 2/4/8 x H200 ranges of the built-in examples after their H200 probe."""
    from advisor.profiling import profile_workload
    from advisor.ranking.recommend import default_throughput_model, workload_features
    from advisor.ranking.service import traced_op_mix
    from advisor.spec import load_workload_spec
    from advisor.throughput import Measurement
    from pricing import shipped_catalog

    catalog = shipped_catalog()
    model = default_throughput_model(catalog)
    h200, h100 = catalog.accelerators["H200"], catalog.accelerators["H100-SXM"]
    parts, above = [], 0
    for example, measured in H200_PROBES.items():
        spec = load_workload_spec(ROOT / "examples" / f"{example}.yaml")
        features = workload_features(spec, profile_workload(spec), traced_op_mix(spec))
        probe = Measurement("H200", measured, rel_halfwidth=0.001)
        for count in (2, 4, 8):
            est = model.estimate(features, h200, count=count, measurements=[probe])
            other = model.estimate(features, h100, count=count)
            above += est.samples_per_second_high > count * measured * 1.01
            parts.append(
                f"{example} {count}x {est.samples_per_second:,.0f} "
                f"[{est.samples_per_second_low:,.0f}-{est.samples_per_second_high:,.0f}] x"
                f"{est.samples_per_second_high / est.samples_per_second_low:.2f} "
                f"({est.basis}; {count}x H100-SXM predicted x"
                f"{other.samples_per_second_high / other.samples_per_second_low:.2f})")
    return [f"N x H200 after the real H200 probe stored (rel. half-width 0.1%; "
            f"{', '.join(f'{k} {v:,.0f}' for k, v in H200_PROBES.items())} samples/s): "
            + "; ".join(parts) + f"; ranges above N x probe x 1.01: {above}"]
