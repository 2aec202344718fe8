"""Do measured multi-device ranges hold, and how wide are they? (issue 29)

For every reference cell measured on one device and on N devices (same generation, model,
precision and accelerator), the one-device figure is given to the shipped model as a probe
(``Measurement``, with a stated probe half-width) and the N-device throughput is predicted:
basis ``measured`` on N devices. Per interconnect class and N: how many cells, how often the
measured N-device figure falls inside the 90% interval, the median width (high / low), and
how often the high end exceeds N times the probe (it never may). The single-device row shows
the probe's own interval. The scaling efficiency is held out: each reference model's cells
are predicted by a ``ScalingModel`` fitted without that model's rows. Workloads whose
parameters and batch are known (``REFERENCE_PARAMS``) get the workload-aware efficiency.

The probe's half-width: ``--halfwidth table`` (the default) is the reference table's own
one-device noise, estimated from one-device figures alone (never the N-device figures
judged): cells measured on one device in both table generations disagree by a systematic
software shift per model plus noise; the noise's robust spread (1.4826 x the median absolute
deviation from the per-model median log ratio) over sqrt(2) is one figure's log sigma, and
1.96 sigma its 95% half-width. A table's one-device figure is the simulated probe, so it is
as noisy as the table.

Then the no-probe figures held out, with scikit-learn's ``cross_validate`` and
``LeaveOneGroupOut``: the default ``TransferModel`` (calibrated, no published anchors) fitted
without every row of one reference model (groups = models) or of one accelerator (groups =
accelerators) predicts the held-out rows of the models with shipped FLOPs per sample (ResNet-50,
BERT-base and -large SQuAD) on their device counts: error, R² and how often the 90% interval
holds the measurement.

Run: python benchmarks/bench_ranges.py [--halfwidth table|0.01]   (writes benchmarks/results/ranges.md
and ranges_held_out.md)
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _scaling_diagnosis import efficiency_notes, h200_notes  # noqa: E402
from _table import write_table  # noqa: E402

from advisor.spec import Precision  # noqa: E402
from advisor.throughput import Measurement, WorkloadFeatures  # noqa: E402
from advisor.throughput._plain import PlainTransferModel  # noqa: E402
from advisor.throughput.estimate import architecture_class  # noqa: E402
from advisor.throughput.model_cache import cached_transfer_model  # noqa: E402
from advisor.throughput.reference import (  # noqa: E402
    REFERENCE_FLOPS_PER_SAMPLE,
    ReferenceRow,
    load_reference,
)
from advisor.throughput.scaling import (  # noqa: E402
    REFERENCE_PARAMS,
    ScalingModel,
    interconnect_class,
)
from pricing import AcceleratorSpec, load_accelerators  # noqa: E402


def table_noise_halfwidth(rows: tuple[ReferenceRow, ...]) -> tuple[float, int]:
    """(95% relative half-width of one table figure, pairs used): from the one-device cells
    measured in both generations (see the module)."""
    by_cell: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r.accelerator_count == 1:
            by_cell[(r.model, r.precision, r.accelerator)][r.generation] = r.samples_per_second
    ratios: dict[str, list[float]] = defaultdict(list)
    for (model, _, _), figures in by_cell.items():
        if len(figures) == 2:
            first, second = (figures[g] for g in sorted(figures))
            ratios[model].append(math.log(second / first))
    deviations = [abs(v - statistics.median(values)) for values in ratios.values()
                  for v in values]
    sigma = 1.4826 * statistics.median(deviations) / math.sqrt(2)
    return math.exp(1.96 * sigma) - 1, len(deviations)


def _held_out_scaling(model: PlainTransferModel, rows: tuple[ReferenceRow, ...],
                      specs: dict[str, AcceleratorSpec]) -> dict[str, PlainTransferModel]:
    """Per reference model: the shipped model with a scaling fit that never saw its rows."""
    held = {}
    for name in sorted({r.model for r in rows}):
        copy = model.plain()
        copy.scaling_ = ScalingModel().fit([r for r in rows if r.model != name], specs)
        held[name] = copy
    return held


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halfwidth", default="table",
                        help="the probes' relative 95%% half-width, or 'table': the reference "
                             "table's own one-device noise (default)")
    parser.add_argument("--only", choices=["measured", "held-out"],
                        help="write one of the two tables (default: both)")
    args = parser.parse_args()
    specs = load_accelerators()
    if args.only != "held-out":
        measured_ranges(specs, args.halfwidth)
    if args.only != "measured":
        held_out(specs)


Cells = dict[tuple[str, int], list[tuple[bool, float, bool]]]


def workload_spread(rows: tuple[ReferenceRow, ...]) -> float:
    """The 5-95% spread (high / low) of the efficiency of the reference cells around their
    accelerator and count's median: what a one-device probe of a new workload cannot know,
    even with each accelerator's own scaling known exactly (in sample)."""
    singles = {(r.generation, r.model, r.precision, r.accelerator): r.samples_per_second
               for r in rows if r.accelerator_count == 1}
    logs: dict[tuple[str, int], list[float]] = defaultdict(list)
    for r in rows:
        one = singles.get((r.generation, r.model, r.precision, r.accelerator))
        if r.accelerator_count > 1 and one and 0.2 <= r.samples_per_second / (
                r.accelerator_count * one) <= 1.5:
            logs[(r.accelerator, r.accelerator_count)].append(
                math.log(r.samples_per_second / (r.accelerator_count * one)))
    residuals = sorted(v - statistics.median(values) for values in logs.values() for v in values)
    return math.exp(residuals[int(0.95 * len(residuals))] - residuals[int(0.05 * len(residuals))])


def _n_device_cells(held: dict[str, PlainTransferModel], rows: tuple[ReferenceRow, ...],
                    specs: dict[str, AcceleratorSpec], halfwidth: float,
                    ) -> tuple[Cells, dict[tuple[str, int], int]]:
    """Per (interconnect class, count): (inside, width, high above N x probe) per cell, and
    how many cells measured N devices above N x one x (1 + ``halfwidth``)."""
    singles = {(r.generation, r.model, r.precision, r.accelerator): r
               for r in rows if r.accelerator_count == 1}
    cells: Cells = defaultdict(list)
    superlinear: dict[tuple[str, int], int] = defaultdict(int)  # N devices beat N x one
    for row in rows:
        single = singles.get((row.generation, row.model, row.precision, row.accelerator))
        spec = specs.get(row.accelerator)
        if row.accelerator_count <= 1 or single is None or spec is None:
            continue
        one = single.samples_per_second
        precision = Precision.FP32 if row.precision == "fp32" else Precision.FP16
        params = REFERENCE_PARAMS.get(row.model)
        features = WorkloadFeatures(precision=precision, flops_per_sample=None,
                                    params=None if params is None else int(params),
                                    batch_size_per_device=single.batch_size_per_accelerator or None,
                                    name=f"{row.generation}/{row.model}/{row.precision}")
        probe = Measurement(row.accelerator, one, rel_halfwidth=halfwidth)
        est = held[row.model].estimate(features, spec, count=row.accelerator_count,
                                       measurements=[probe])
        inside = est.samples_per_second_low <= row.samples_per_second <= est.samples_per_second_high
        over = (est.samples_per_second_high
                > row.accelerator_count * one * (1 + halfwidth) * (1 + 1e-9))
        above = row.samples_per_second > row.accelerator_count * one * (1 + halfwidth)
        cells[(interconnect_class(spec), row.accelerator_count)].append(
            (inside, est.samples_per_second_high / est.samples_per_second_low, over))
        superlinear[(interconnect_class(spec), row.accelerator_count)] += above
    return cells, superlinear


def measured_ranges(specs: dict[str, AcceleratorSpec], halfwidth_arg: str) -> None:
    """Write ranges.md: a one-device probe per reference cell, its N-device interval."""
    model = cached_transfer_model(specs, cache_dir=Path(tempfile.mkdtemp()))
    rows = load_reference()
    if halfwidth_arg == "table":
        halfwidth, pairs = table_noise_halfwidth(rows)
        source = (f"the table's one-device noise, {100 * halfwidth:.1f}% (95% half-width, from "
                  f"{pairs} one-device cells measured in both generations)")
    else:
        halfwidth, source = float(halfwidth_arg), "given"
    held = _held_out_scaling(model, rows, specs)
    cells, superlinear = _n_device_cells(held, rows, specs, halfwidth)
    tight = [c for found in _n_device_cells(held, rows, specs, 0.01)[0].values() for c in found]
    source += (f"; with a 1% probe instead: {100 * statistics.mean(i for i, _, _ in tight):.1f}% "
               f"inside, median width {statistics.median(w for _, w, _ in tight):.2f}")
    table = [["any", "1", "-", "-", f"{(1 + halfwidth) ** 2:.3f}", "0", "-"]]
    everything: list[tuple[bool, float, bool]] = []
    for (cls, count), found in sorted(cells.items()):
        everything += found
        table.append([cls, str(count), str(len(found)),
                      f"{100 * sum(i for i, _, _ in found) / len(found):.1f}",
                      f"{statistics.median(w for _, w, _ in found):.2f}",
                      str(sum(o for _, _, o in found)),
                      f"{100 * superlinear[(cls, count)] / len(found):.1f}"])
    counts = sorted(n for _, n in cells)
    table.append(["all", f"{counts[0]}-{counts[-1]}", str(len(everything)),
                  f"{100 * sum(i for i, _, _ in everything) / len(everything):.1f}",
                  f"{statistics.median(w for _, w, _ in everything):.2f}",
                  str(sum(o for _, _, o in everything)),
                  f"{100 * sum(superlinear.values()) / len(everything):.1f}"])
    write_table("ranges", "Measured ranges on N devices (a one-device probe, N predicted)",
                ["interconnect", "devices", "cells", "inside the 90% interval %",
                 "median high / low", "high above N x probe x (1 + half-width)",
                 "measured above N x one x (1 + half-width) %"], table,
                [f"command: python benchmarks/bench_ranges.py --halfwidth {halfwidth_arg}",
                 f"probe half-width: {source}",
                 "reference cells (advisor/data/reference_throughput.csv) measured on 1 and N "
                 "devices; the one-device figure is the probe, basis measured; the scaling "
                 "efficiency held out: each model's cells predicted by a scaling fit without "
                 "that model's rows; parameters and batch known for "
                 + ", ".join(sorted(REFERENCE_PARAMS)) + " (workload-aware efficiency: "
                 "ScalingModel's physical_efficiency, compute plus a ring all-reduce of the "
                 "gradients at an effective bandwidth fitted per accelerator)",
                 "'measured above': reference cells where N devices beat N times one by more "
                 "than the probe's half-width (the tables' noise); no interval may cover them",
                 f"the floor: around each accelerator and count's median efficiency (in "
                 f"sample), the reference models' efficiencies spread x{workload_spread(rows):.2f}"
                 " (5-95%); a 90% interval of a new workload's N devices from its one-device "
                 "probe cannot be much narrower than what its parameters and step time explain "
                 "of that",
                 "efficiency bounds (ScalingModel.fit): split-conformal over reference "
                 "workloads (generation/model/precision), each weighing one whatever its rows, "
                 "with the finite-sample correction of their number, per interconnect class "
                 "and count, the workloads of known load (fitted with it) apart; one score per "
                 "held-out row, max(-residual / low spread, residual / high spread), the "
                 "spreads the magnitudes of the in-fit residuals' quartiles below and above "
                 "(ScalingModel.spread_), so one correction for both sides "
                 "(grouped_conformal_half_width: at 40 workloads the 92.3rd percentile of the "
                 "score, where a bound per tail took the 97.4th of each); the workloads of "
                 "known load: one scale for both sides (ScalingModel.load_spread_, the larger "
                 "quartile of their own misses), since h29scale",
                 "before, a bound per tail (grouped_conformal_bounds of the residuals, 25e00d8): "
                 "88.0% inside, median width 1.88; fabric 2/4/8 90.0/95.8/88.6% (1.50/1.46/"
                 "1.93), pcie 2/3/4/8 87.9/90.0/85.4/81.1% (1.74/2.06/2.99/3.25). Earlier, "
                 "conformal over rows: 84.0% / 1.50; over models (11, so the extremes): "
                 "89.7% / 2.06",
                 "rules tried for this change (all held out as above, table half-width; the "
                 "first five as a prototype, load-known scores pooled with the others where "
                 "not said): a bound per tail of residuals normalised by the accelerator's "
                 "own mean |residual| per doubling, counts pooled 89.1% / 2.13, per count "
                 "88.6% / 2.04, median instead of mean 88.6% / 2.10 and 88.5% / 2.01, known "
                 "load apart 90.7% / 2.87; with a load slope per accelerator instead of per "
                 "class 89.7% / 2.16; one symmetric score |residual| 83.6% / 1.47 (known load "
                 "apart 83.3% / 1.50, normalised by the accelerator 85.0% / 1.52); one "
                 "asymmetric score with the sides scaled by the in-fit 5th/95th percentiles "
                 "instead of the quartiles 86.7% / 1.68, also scaled by the accelerator's own "
                 "spread 86.6% / 1.66; load classes (light and heavy around the class's mean "
                 "load, unknown apart) 85.8% / 1.74 (quartiles), 86.7% / 1.89 (5th/95th), "
                 "and a load class could flip between the predicted and the measured "
                 "one-device figure, so a probe could widen an interval; rows above the "
                 "N-times-one cap (efficiency > exp(0.03)) scored as misses 89.2% / 2.13. "
                 "Chosen: the asymmetric score with quartiles, known load apart (the shipped "
                 "rule above), the narrowest inside 85-95%",
                 "where the misses are: cells the cap cannot hold (column 'measured above', "
                 "11.3% of pcie 8) and cells whose efficiency is outside 0.2-1.5 (data "
                 "errors, left out of the fit, 32 of 1444; 11 of pcie 8's 196) are outside "
                 "every interval, so pcie 8 reads 80.4%",
                 *efficiency_notes(rows, specs, halfwidth),
                 "physical efficiency (h29scale, this table): where the load is known, "
                 "efficiency = 1 / (1 + 2 (N-1)/N x gradient bytes per second of one "
                 "device's compute / B), B an effective all-reduce bandwidth (non-overlap "
                 "folded in) fitted per accelerator by least absolute log residual (fitted: "
                 "2.3 GB/s GTX-1080Ti, 4-5 GB/s Turing PCIe, 10 GB/s RTX-3090/4090, 13-28 GB/s "
                 "V100 SXM2, 42-60 GB/s A100, 90 GB/s H100 SXM), times a median factor per "
                 "class and count (0.98-0.99); a part with no rows takes its generation's "
                 "parts of the same class (H200: H100 SXM's), else its class's median; "
                 "before (main b695b11): the loss per doubling moved by a load slope per "
                 "class, the load clamped to the range fitted: 85.5% inside, median width "
                 "1.57 (fabric 2/4/8 88.0/91.1/87.3% (1.44/1.36/1.72), pcie 2/3/4/8 "
                 "86.4/90.0/82.5/77.3% (1.49/1.78/1.85/2.08)); cells of known load 85.7% / "
                 "1.57, of unknown load 85.3% / 1.56; held-out R² of known-load log "
                 "efficiencies 0.12 (now 0.24), the misses' 5-95% x1.59 (now x1.55), the "
                 "narrowest 90% interval of them per class and count x1.44 either way",
                 "rules tried for the physical efficiency (held out as the table; inside % / "
                 "median width, all cells; known-load cells apart where said): the bounds "
                 "unchanged (the asymmetric quartile score, the spreads of all rows as "
                 "fitted) 87.6% / 1.88: the physical efficiency never passes 1, so its "
                 "in-fit misses above floor at 0.5-1% on fabric and a held-out miss above "
                 "scores tens of spreads (fabric 8 known-load score 55, a low bound of "
                 "-3.7 in log); spreads per predictor (known-load rows as fitted with their "
                 "load, every row without it for the others) 86.4% / 1.86; with the factor "
                 "per class and count 86.2% / 1.81; and one scale for both sides of the "
                 "known-load score (the larger quartile: the grouped conformal quantile of "
                 "|log miss| per class and count) 86.4% / 1.63 (known 87.3% / 1.60, unknown "
                 "85.3% / 1.69); the others' spreads as before (all rows as fitted, known "
                 "load with it) 86.2% / 1.60 (known 87.3% / 1.60, unknown 85.1% / 1.60): "
                 "kept. The same 5-95% per class and count with a bandwidth per class "
                 "(one per accelerator's constant loss per doubling kept) explained less "
                 "held out (R² 0.11), with a per-accelerator loss per doubling added to the "
                 "bandwidth 0.17, with log2(N) in place of 2 (N-1)/N 0.26 (a prototype, "
                 "least squares, not the shipped fit); known load for GNMT and "
                 "Transformer-XL (tokens a sequence as h29ranges) in the prototype: R² -0.47",
                 "targets (issue 29): 85-95% inside (met, 86.2%); median width measured single "
                 "device <= 1.05 (met, 1.13 with the table's own noise as the probe's; a 1% "
                 "probe's reads 1.02), measured on N devices <= 1.25: not met, 1.60 (known "
                 "load 1.60; before 1.57). Not reachable with a one-device probe: the "
                 "narrowest interval the best held-out efficiency's misses allow is x1.44 "
                 "(above: the 5th and 95th percentiles themselves, per class and count, "
                 "before any finite-sample correction), because 68% of the spread is "
                 "workload x accelerator (the machine each table measured) and a workload "
                 "effect explains 22-26% in sample at most; x1.25 at 90% needs misses within "
                 "about +-0.09 in log with the probe's 6.4% in quadrature (a held-out R² "
                 "near 0.88 against the accelerator medians); the physical efficiency "
                 "reaches 0.24",
                 *h200_notes(),
                 "the same before (main b695b11): resnet50 2x/4x/8x x1.22/1.24/1.73, gpt2 "
                 "x1.23/1.25/1.75, bert x1.23/1.26/1.77 (8x H100-SXM predicted x2.66-2.76), "
                 "none above N x probe x 1.01; bench_gpu_ranges (one device, no probe: no "
                 "scaling) unchanged",
                 "known load for GNMT and Transformer-XL base/large too (h29ranges 642ea0c, "
                 "reverted): their parameters (160.7 M, 191.9 M, 520.0 M, reference_op_mix.md; "
                 "the traced fp32 optimizer bytes per parameter agree within 2% with the five "
                 "others') and a batch of sequences counted in tokens (50, 192, 256 a batch "
                 "item), so their rows fit the load slope and the known-load bounds: 84.2% "
                 "inside, median width 1.55 (fabric 2/4/8 89.5/90.5/85.5%, pcie 2/3/4/8 "
                 "87.0/90.0/79.8/71.1%); Transformer-XL base 87.9 -> 79.8% and large 94.5 -> "
                 "81.8% inside: below the target for a width 1% narrower, so not kept. "
                 "Tacotron 2 and WaveGlow have no traced mix, and their rows count frames and "
                 "audio samples per utterance batch: no step time, no known load"])


def _class_name(spec: AcceleratorSpec) -> str:
    tensor_cores, bf16 = architecture_class(spec)
    return ("tc" if tensor_cores else "simt") + ("-bf16" if bf16 else "")


def predictable_models() -> set[str]:
    """Reference models the no-probe path predicts: a shipped operator mix (the roofline
    needs nothing else) or shipped FLOPs per sample."""
    from advisor.profiling import reference_op_mixes

    return {g.partition("/")[0] for g in reference_op_mixes()} | set(REFERENCE_FLOPS_PER_SAMPLE)


def _both_out(rows: list[ReferenceRow], folds: int = 5) -> list[tuple[list[int], list[int]]]:
    """(train, test) splits: a predictable model's rows on one fold of accelerators (sorted
    names, every ``folds``-th) tested, fitted on the rows of neither that model nor fold."""
    names = sorted({r.accelerator for r in rows})
    fold = {name: i % folds for i, name in enumerate(names)}
    splits = []
    for model in sorted(predictable_models()):
        for k in range(folds):
            test = [i for i, r in enumerate(rows) if r.model == model and fold[r.accelerator] == k]
            train = [i for i, r in enumerate(rows)
                     if r.model != model and fold[r.accelerator] != k]
            if test:
                splits.append((train, test))
    return splits


def _held_out_rows(label: str, rows: list[ReferenceRow], groups: list[str] | None,
                   specs: dict[str, AcceleratorSpec]) -> list[list[str]]:
    """Table rows: ``cross_validate`` with ``LeaveOneGroupOut`` over ``groups`` (None: one
    model and one accelerator fold out, ``_both_out``); all rows first, then per basis,
    device count (1 or N) and architecture class, the three FLOPs-known models alone (the
    rows this table judged before) and each model."""
    from dataclasses import replace

    from sklearn.model_selection import LeaveOneGroupOut, cross_validate

    from advisor.profiling import reference_op_mixes
    from advisor.throughput._no_probe import reference_features
    from advisor.throughput.transfer import TransferModel

    mixes = reference_op_mixes()
    predictable = predictable_models()
    cv = LeaveOneGroupOut() if groups is not None else _both_out(rows)
    result = cross_validate(TransferModel(), rows, groups=groups, cv=cv,
                            params={"accelerators": specs}, return_estimator=True,
                            return_indices=True)
    found: dict[tuple[str, ...], list[tuple[float, bool, float]]] = defaultdict(list)
    for model, test in zip(result["estimator"], result["indices"]["test"], strict=True):
        for i in test:
            row = rows[i]
            if row.model not in predictable:
                continue  # no FLOPs per sample, no operator mix: no no-probe figure
            spec = specs[row.accelerator]
            features = reference_features(row, mixes)
            devices = "1" if row.accelerator_count == 1 else "N"
            for stack, workload in (("", features),
                                    ("as a user's stack", replace(features,
                                                                  reference_stack=False))):
                est = model.estimate(workload, spec, count=row.accelerator_count)
                scored = (abs(est.samples_per_second / row.samples_per_second - 1),
                          est.samples_per_second_low <= row.samples_per_second
                          <= est.samples_per_second_high,
                          est.samples_per_second_high / est.samples_per_second_low)
                keys = [(), (est.basis.value, devices, _class_name(spec)),
                        (f"model {row.model}",)] if not stack else [(stack,)]
                if not stack and row.model in REFERENCE_FLOPS_PER_SAMPLE:
                    keys.append(("FLOPs-known three",))
                for key in keys:
                    found[key].append(scored)
    scores = [s for s in result["test_score"] if s == s]  # folds with a prediction
    table = []
    for key, values in sorted(found.items()):
        apes, inside, widths = zip(*values, strict=True)
        table.append([" · ".join([label, *key]), str(len(scores)) if not key else "-",
                      str(len(values)), f"{100 * statistics.mean(apes):.1f}",
                      f"{100 * statistics.median(apes):.1f}",
                      f"{statistics.median(scores):.3f}" if not key else "-",
                      f"{100 * statistics.mean(inside):.1f}", f"{statistics.median(widths):.2f}"])
    return table


def held_out(specs: dict[str, AcceleratorSpec]) -> None:
    """Write ranges_held_out.md: leave one model out, leave one accelerator out, no probe."""
    rows = [r for r in load_reference() if r.accelerator in specs]
    table = (_held_out_rows("one model", rows, [r.model for r in rows], specs)
             + _held_out_rows("one accelerator", rows, [r.accelerator for r in rows], specs)
             + _held_out_rows("one model and one accelerator fold", rows, None, specs))
    write_table("ranges_held_out", "No-probe figures held out (cross_validate, LeaveOneGroupOut)",
                ["left out · basis · devices · class", "folds predicted", "rows", "MAPE %",
                 "median APE %", "median fold R²", "inside the 90% interval %",
                 "median high / low"], table,
                ["command: python benchmarks/bench_ranges.py",
                 "sklearn.model_selection.cross_validate(TransferModel(), rows, groups=..., "
                 "cv=LeaveOneGroupOut(), params={'accelerators': specs}) over every reference "
                 "row with a spec (both generations, 1 to 8 devices); scored rows: the "
                 "held-out rows of every reference model the no-probe path predicts, the "
                 "eight with a shipped operator mix (ResNet-50, SSD, BERT-base/-large SQuAD, "
                 "GNMT, NCF, Transformer-XL base/large; the roofline needs the mix alone), "
                 "predicted with no probe (fp32 rows as TF32, mixed as fp16); 'FLOPs-known "
                 "three': ResNet-50 and BERT-base/-large alone, the rows this table scored "
                 "before (the same figures as then); 'model ...': each model's rows",
                 "per basis, devices (1, or N: 2 to 8) and architecture class (tc-bf16: "
                 "Ampere and newer, tc: Volta and Turing, simt: Pascal and older)",
                 "R²: TransferModel.score, samples/s of the fold's predictable rows; folds of "
                 "models without FLOPs predict nothing and are not counted",
                 "no published anchors: an accelerator held out is a part with no reference "
                 "rows, known by its datasheet (basis prior); its bounds are those of a new "
                 "workload on a part with no rows (roofline_unseen), although with one "
                 "accelerator out the workload's own rows on the other parts are in the fit; "
                 "'one model and one accelerator fold': each FLOPs-known model's rows on one "
                 "of 5 folds of accelerators (every 5th sorted name) predicted by a fit on the "
                 "rows of neither (a new workload on parts with no rows, as a user's)",
                 "bounds by novelty (NoProbePrior.mix_half_width, novelty_weights): each "
                 "held-out roofline residual of the fit (its reference models held out one at "
                 "a time) is weighted by exp(-((n_g - n)/h)^2), n the distance from the "
                 "predicted workload's mix to the nearest reference mix in the fit, n_g the "
                 "distance from the residual's reference mix to the nearest other model's "
                 "(per-class shares of FLOPs and of bytes); the half-width is the weighted "
                 "split-conformal 90% quantile of |residual| (the new point's weight at "
                 "+inf), the widest miss and at least the pooled bounds where too little "
                 "weight is alike; no other floor. h as before, by rule: the widest distance "
                 "between one reference model's fp32 and mixed mixes (at least 0.05). The "
                 "held-out model never contributes residuals: it is not in the fold's fit",
                 "why (diagnosis, aca1761, every scored row's pieces printed): the kind weights "
                 "(exp(-(d/h)^2) of the mix distance, h = 0.079) put all the weight on the "
                 "held-out model's sibling (SSD for ResNet-50, BERT-large for BERT-base), "
                 "whose residual was measured with no model of its kind left in the fit "
                 "(SSD's 90% need 0.95 on tc, 0.42 on tc-bf16, against 0.12-0.21 in the "
                 "full fit), so the weighted quantile was that sibling's worst case; the "
                 "own-need floor bound in 1 of 3 rows (bert_large / ssd) and the unseen case "
                 "took the model-held-out figure. A workload's miss follows how far the "
                 "nearest reference in the fit is, not its kind",
                 "rules compared (aca1761, the same folds, each row's interval rebuilt from "
                 "its printed pieces, which reproduce the benchmark's to 1e-9; all / one "
                 "device, inside % / median width, one model | one accelerator | both): "
                 "kind weights with own-need floors (before) 98.4/3.14, 1 dev 100/2.92 | "
                 "94.0/1.97, 94.9/1.77 | 98.7/3.86, 100/3.57; no own-need floor 98.4/2.91, "
                 "100/2.60 | 92.3/1.89 | 98.7/3.81; h the median pairwise distance of the "
                 "reference mixes (the kernel median heuristic), no floor 98.4/2.93 | "
                 "95.1/2.19 | 98.2/3.30; h = 10 (pooled) 98.4/2.75 | 97.2/2.35 | 97.9/2.88; "
                 "h the median of the models' own fp32/mixed distances: floored at 0.05, "
                 "narrower than before; each reference model weighing one (grouped): too "
                 "little weight, the widest miss, 99.0/5.53-6.55; novelty weights, h by the "
                 "rule above (chosen) 97.2/2.25, 100/1.96 | 95.4/2.11, 97.5/1.78 | "
                 "96.9/2.62, 99.0/2.25; novelty times kind weights: too little weight, "
                 "99.1/6.51. Chosen before the run below: the novelty rule with the "
                 "unchanged h (not tuned; h = 0.05 read 95.1/1.97 but would be a constant "
                 "picked on these figures)",
                 "N rows: the scaling efficiency's low bound (log(efficiency / worst), "
                 "median 0.30-0.43 per mode and class) enters in quadrature and dominates "
                 "their width: with a single-device half-width of 0.25 the median N row "
                 "still reads about x2.1; narrowing it is ScalingModel's calibration, not "
                 "this rule's. Before (pooled bounds, 49ab9ec): one model 97.9% / 4.22, one "
                 "accelerator 97.9% / 3.62, both 97.8% / 4.71; kind weights with own-need "
                 "floors, on a clean export of 50ef6be: one model 98.7% / 3.38 (1 device tc "
                 "100% / 4.01, tc-bf16 100% / 2.98), one accelerator 94.0% / 1.98, both "
                 "98.7% / 3.90; real GPUs (gpu_ranges.md) 6 of 6 inside, median width 6.28",
                 "the rows above are reference rows, measured in the reference stack "
                 "(reference_features: reference_stack=True), judged by the reference "
                 "residuals alone; 'as a user's stack': the same rows and folds with the "
                 "software-stack floor a user's step gets (PlainTransferModel: at least "
                 "stack_half_width_ either way with no probe, the conformal 90% quantile of "
                 "how far one reference workload moved between two stacks: the table's "
                 "generations and each non-MLPerf published suite on the same cells, "
                 "_calibration.stack_shifts; the folds fit no published rows, so theirs comes "
                 "from the generations alone)",
                 "N rows: the scaling efficiency's bounds are conformal over reference "
                 "workloads, each weighing one, one asymmetric score per row (ScalingModel, "
                 "grouped_conformal_half_width; before, a bound per tail: "
                 "grouped_conformal_bounds, same tree: one model 97.9% / 2.67, N rows tc "
                 "94.4% / 4.00, tc-bf16 98.5% / 2.94; one accelerator 95.3% / 2.34, N rows tc "
                 "94.4% / 3.54, tc-bf16 95.8% / 2.44; both 97.2% / 3.01, N rows tc 93.8% / "
                 "4.31, tc-bf16 97.6% / 3.13)",
                 "why the intervals read over-wide (h29ranges, every held-out row's interval "
                 "taken apart into its terms, one model out; the same on the other folds): "
                 "scored on the three FLOPs-known models, the one-device half-width (the "
                 "novelty-weighted 90% quantile of the roofline's held-out |residuals| of the "
                 "part's class) had a median 0.31 (tc 0.54) where those rows' 90% |log "
                 "error| was 0.20 (tc 0.24); N rows add the scaling efficiency's low bound "
                 "in quadrature (median 0.28-0.29); the stack floor does not bind on "
                 "reference rows ('as a user's stack' reads the same) and no published "
                 "branch enters these folds. Scored on all eight: half-width 0.36 against "
                 "a 90% |log error| of 0.37 (one device, one model out), 0.42 against 0.41 "
                 "(both out): no term is wider than the held-out errors need. The three "
                 "FLOPs-known models are the roofline's best predicted (ResNet-50 99%, "
                 "BERT-base 97% inside) while NCF (25-39% inside, median APE 34-50%) and "
                 "Transformer-XL (67-88%) miss more; the calibration pools all eight, so "
                 "judged on the three it over-covers. The width is the roofline's held-out "
                 "error (median APE 13-15% but a 90% log error of 0.37-0.41), not a floor",
                 "rules compared on the same folds (each row's interval rebuilt from the "
                 "fitted folds; all rows inside % / median width, one model | one "
                 "accelerator | both; on the eight models, then on the three): the shipped "
                 "rule (novelty weights, bounds per architecture class) 88.7/2.29 | "
                 "86.4/2.07 | 89.2/2.80, three 96.6/2.15 | 95.2/2.08 | 96.9/2.55; no class "
                 "split (the case's pooled residuals, novelty-weighted) 88.5/2.28 | 83.5/2.01 "
                 "| 87.7/2.52, three 97.2/2.24 | 94.2/1.97 | 96.4/2.44; no novelty weights "
                 "(plain conformal per class) 88.5/2.61 | 90.0/2.34 | 88.4/2.77, three "
                 "98.4/2.75 | 97.0/2.34 | 97.9/2.89; neither 87.6/2.51 | 89.2/2.30 | "
                 "87.3/2.59, three 98.2/2.65 | 96.6/2.23 | 97.2/2.72; each reference group "
                 "(model/precision) weighing its novelty weight once, shared by its rows: too "
                 "little weight, the widest miss, 95.1/6.37 | 95.0/3.07 | 96.7/6.30, three "
                 "99.0/6.60 | 98.4/3.10 | 99.0/6.62. Kept: the shipped rule; of the two "
                 "inside 85-95% on all three schemes of the eight models (it and 'neither') "
                 "the narrower on two (no class split is narrower still but reads 83.5% "
                 "with one accelerator out); no rule was tuned on these figures",
                 "targets (issue 29): 85-95% inside (met on the eight models: 88.7 / 86.4 / "
                 "89.2%), median width predicted <= 1.8 (not met: 2.07-2.80; a narrower "
                 "interval needs a more accurate no-probe figure, not another calibration: "
                 "at 90% |log error| 0.37 a symmetric 90% interval is x2.1 wide)",
                 "normalized split conformal tried and not shipped (h29norm, 2026-11-27; prototype "
                 "44114fb, reverted by 1ed3b4d; Lei et al. 2018 section 5.2, Papadopoulos et al. "
                 "2008). The rule, fixed before any judged figure: each held-out roofline residual "
                 "scored |r| / s(share), share the fitted roofline's own share of the predicted time "
                 "that no compute peak bounds (kernel overhead plus the terms whose bytes take at "
                 "least as long as their FLOPs; known from the op mix and the datasheet), s = max(a "
                 "+ b share, a tenth of the mean |r|), a, b >= 0 by least squares of |r| on (1, "
                 "share), each reference group weighing one, fitted on the other reference models' "
                 "residuals only (the outer fold's held-out model is not in the fit at all); "
                 "half-width the novelty-weighted conformal 90% quantile of the scores times s at "
                 "the workload's share; the N-device term unchanged. Held out (python "
                 "benchmarks/bench_ranges.py --only held-out; inside % / median width, before -> "
                 "after): one model 89.1/2.15 -> 90.4/2.39, one accelerator 88.2/2.01 -> 89.2/2.06, "
                 "both 91.8/2.50 -> 93.2/2.75: wider on all three. Per model (one model | one "
                 "accelerator | both): ResNet-50 100/2.09 -> 100/2.59 | 100/1.99 -> 100/2.11 | "
                 "99.1/2.45 -> 100/3.01; SSD 95.6/2.11 -> 93.4/2.44 | 98.7/1.99 -> 99.1/2.06 | "
                 "92.9/2.29 -> 92.9/2.81; BERT-base 96.5/2.58 -> 96.9/2.44 | 93.8/2.01 -> 93.8/1.98 "
                 "| 95.6/2.96 -> 95.6/2.79; BERT-large 85.5/2.02 -> 85.5/2.02 | 93.2/2.06 -> "
                 "93.2/1.99 | 92.7/2.31 -> 92.7/2.28; GNMT 94.7/2.46 -> 96.5/2.30 | 93.8/2.19 -> "
                 "93.8/2.09 | 95.6/2.82 -> 98.7/2.87; NCF 50.0/1.86 -> 50.0/1.97 | 51.2/1.80 -> "
                 "54.8/2.00 | 64.3/2.20 -> 69.0/2.31; Transformer-XL base 83.3/2.29 -> 88.2/2.44 | "
                 "76.9/2.25 -> 80.1/2.21 | 90.9/2.61 -> 93.0/2.84, large 78.6/2.38 -> 85.7/2.38 | "
                 "67.3/2.20 -> 70.8/2.12 | 83.9/2.77 -> 86.9/2.76",
                 "why it failed (the full fit's held-out roofline residuals, all classes; per model, "
                 "the median share over parts and the 90% |r|): BERT-base/-large 0.20-0.32, "
                 "0.13-0.30; GNMT 0.25-0.34, 0.16-0.18; NCF 0.84-1.00, 0.31-0.46; ResNet-50 "
                 "0.67-0.69, 0.19-0.24; SSD 0.57-0.58, 0.10-0.42; Transformer-XL 0.34-0.49, "
                 "0.27-0.61. |r| against the share over rows: correlation 0.15 (tc-bf16 0.15, tc "
                 "0.27); fitted s = 0.089 + 0.097 share. A training convnet is memory-bound too "
                 "(batch norm and activations move 75% of ResNet-50's bytes), so the share ranks "
                 "ResNet-50 and SSD, the best predicted, above Transformer-XL, and NCF's scale (the "
                 "highest share) is only x1.6-1.7 BERT's",
                 "after the fact, not a valid choice (picked knowing NCF and Transformer-XL are the "
                 "misses; no held-out model judges that pick, and none was shipped): the embedding "
                 "share of the bytes moved, the only mix share that is zero on the six others (NCF "
                 "0.07, Transformer-XL 0.06-0.12), in place of the memory-bound share: 88.7/2.02 | "
                 "91.6/2.03 | 91.9/2.50, narrower with one model out only; Transformer-XL base then "
                 "reads x3.2-4.5 wide while NCF, whose share is below Transformer-XL base's, stays "
                 "52-71% inside",
                 "what the target leaves the one-device term (the same folds with the one-device "
                 "roofline half-width set to 0, the scaling efficiency's term alone, a diagnostic, "
                 "not a rule): N rows' median width 1.45-1.55 (tc-bf16), 1.54-1.73 (tc), all rows "
                 "1.38-1.45; the terms add in quadrature (_plain: hypot of the one-device bound and "
                 "the efficiency's), so a median N row reaches x1.8 only with a one-device "
                 "half-width of about 0.23 or less (both sides of the efficiency's term alike), "
                 "where the eight models' held-out 90% |log error| is 0.37 and the well-predicted "
                 "models' own 0.10-0.30: a difficulty scale would have to separate them nearly "
                 "perfectly, from a feature known before any measurement; none of the operator-mix "
                 "features tried does with eight reference models"])


if __name__ == "__main__":
    main()
