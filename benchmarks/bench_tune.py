"""What does each knob buy on this machine's device? ``advisor probe --tune`` in-process.

Runs the tuner (``probes.tune``) on the local device (CUDA, TPU, Gaudi or Trainium where the
machine has one, else the CPU) for each spec, and writes one table per spec to
``benchmarks/results/tune_<device>.md``: each row's samples/s with its 95% interval, the
speed-up over the spec as written, whether it changes numerics, and the profile of the tuned
configuration.

    python benchmarks/bench_tune.py [--spec examples/resnet50_tune.yaml ...] [--time-box 300]

The clock is the wall clock, as a real probe's: on a machine shared with other jobs the
intervals are wide and small gains do not count (a knob must beat the baseline measured
before and after the trials). ``--threads`` (default 1) caps torch's threads: on a busy
shared CPU, threads waiting for each other make steps up to 60x slower from one minute to
the next.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import write_result  # noqa: E402

from advisor.profiling import recipe_for  # noqa: E402
from advisor.spec import load_workload_spec  # noqa: E402
from probes.devices import detect_device  # noqa: E402
from probes.tune.report import RowKind, RowStatus, TuneRow  # noqa: E402
from probes.tune.tuner import Tuner  # noqa: E402
from probes.types import ProbeRequest, ProbeResult  # noqa: E402

SPECS = (ROOT / "examples" / "resnet50_tune.yaml", ROOT / "examples" / "custom" / "model.yaml")


def _cells(row: TuneRow) -> list[str]:
    measured = row.status is RowStatus.MEASURED
    interval = row.interval if measured else None
    return [str(row.knob or row.kind), row.setting, str(row.status),
            f"{row.samples_per_second:,.1f}" if measured and row.samples_per_second else "-",
            f"{interval[0]:,.1f} to {interval[1]:,.1f}" if interval else "-",
            f"{row.speedup:.2f}x" if measured and row.speedup else "-",
            "needs a convergence check" if row.changes_numerics else "same",
            row.note.replace("|", "/")]


def _section(spec_path: Path, result: ProbeResult, wall_s: float) -> str:
    report = result.tuning
    lines = [f"## {spec_path.relative_to(ROOT)}", ""]
    if report is None:
        return "\n".join(lines + [f"probe ended {result.status}: {result.error}", ""])
    header = ["knob", "setting", "status", "samples/s", "95% interval", "speed-up", "numerics",
              "note"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in report.rows]
    lines.append("")
    lines += [f"- not applicable: {s.knob}: {s.reason}" for s in report.skipped]
    tuned = report.tuned(allow_numerics=False)
    combos = [r for r in report.rows if r.kind is RowKind.COMBINATION]
    lines.append(f"- tuned (same numerics): {tuned.setting}, {tuned.speedup or 1:.2f}x" if tuned
                 else "- tuned (same numerics): the best combination was not measured (see "
                 "its row)" if combos else "- tuned (same numerics): no knob that keeps the "
                 "numerics beat both baselines beyond the noise")
    gains = ", ".join(f"{r.setting} {r.speedup or 1:.2f}x" for r in report.numerics_gains())
    if gains:
        lines.append(f"- beat both baselines but change the numerics (held back): {gains}")
    if report.drift is not None:
        lines.append(f"- baseline again after the trials: {report.drift:.2f}x its first "
                     "samples/s (the machine's drift; a knob counts only when it beats both)")
    if report.profile is not None:
        p = report.profile
        split = ", ".join(f"{name} {s * 1e3:.3g} ms" for name, s in p.phases())
        ops = ", ".join(f"{op.name} {op.share:.0%}" for op in p.top_operators[:5])
        lines.append(f"- profile of {p.setting} ({p.steps} steps): {split}; top operators by "
                     f"{p.operator_time}: {ops}")
    lines.append(f"- {sum(r.status is RowStatus.MEASURED for r in report.rows)} of "
                 f"{len(report.rows)} runs measured; tune {report.elapsed_s:.0f} s of a "
                 f"{report.time_box_s:g} s box (box starts after the baseline's first step); "
                 f"wall {wall_s:.0f} s with building and the profile")
    return "\n".join(lines + [""])


def main() -> None:
    """Tune each spec on the local device and write the results file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", action="append", type=Path, default=None)
    parser.add_argument("--time-box", type=float, default=300.0)
    parser.add_argument("--allow-numerics", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # DataLoader workers and compile too
    import torch

    torch.set_num_threads(args.threads)
    device = detect_device(os.environ.get("ADVISOR_PROBE_DEVICE") or None)
    load = os.getloadavg()[0]
    sections = []
    for path in args.spec or SPECS:
        spec = load_workload_spec(path.resolve())
        if spec.source_dir:
            sys.path.insert(0, spec.source_dir)
        request = ProbeRequest(
            probe_id=f"bench-{spec.name}", offer_key="local", workload_fingerprint=spec.name,
            recipe=recipe_for(spec, samples_per_device=spec.batch_size),
            time_box_s=args.time_box, tune=True, allow_numerics=args.allow_numerics)
        start = time.perf_counter()
        label = device.name if device.kind == "cpu" else f"{device.kind}:{device.name}"
        result = Tuner(request, device, labels={"device": label}).run()
        sections.append(_section(path.resolve(), result, time.perf_counter() - start))
    head = (f"# advisor probe --tune on {device.kind} ({device.name})\n\n"
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, {len(os.sched_getaffinity(0))} CPUs; 1-min load "
            f"average {load:.2f} before, {os.getloadavg()[0]:.2f} after (shared machine)\n\n"
            f"Command: `python benchmarks/bench_tune.py --time-box {args.time_box:g} "
            f"--threads {args.threads}`\n\n")
    write_result(f"tune_{device.kind}", head + "\n".join(sections))


if __name__ == "__main__":
    main()
