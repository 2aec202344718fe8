"""Is the probe's early-stopped estimate right? Compare it with a run ten times longer.

For each built-in model (small CPU-sized configurations), run the harness as a probe would
(warm-up detection, stop at a 2% relative 95% half-width or the time box), then run the same
step for ten times the probe's measured time with no early stop, and report the difference.

    python benchmarks/bench_probe.py [--time-box 15] [--models mlp,resnet,bert] [--clock cpu]

``--clock wall`` times steps with the wall clock, as a real probe does. On a shared machine
that measures the neighbours as much as the model (throughput moves by several x from minute
to minute), so the default ``--clock cpu`` injects this thread's CPU time as the harness
clock and runs torch on one thread: the comparison then tests the probe's warm-up detection
and stopping rule, not the machine's load. Writes benchmarks/results/probe.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import write_table  # noqa: E402

from probes.devices import CpuDevice  # noqa: E402
from probes.harness import Harness  # noqa: E402
from probes.types import ProbeRequest  # noqa: E402
from probes.workload import WorkloadRecipe, build_workload  # noqa: E402

MODELS: dict[str, tuple[str, dict[str, object], int]] = {
    # name: (builtin, options, batch per device)
    "mlp": ("mlp", {"input_dim": 784, "hidden": 1024, "layers": 3, "num_classes": 10}, 256),
    "resnet": ("resnet50", {"depth": 18, "width": 16, "image_size": 64, "num_classes": 100}, 16),
    "bert": ("bert", {"hidden": 128, "layers": 2, "heads": 2, "ffn": 512, "seq_len": 64,
                      "vocab": 2000}, 16),
}


def _request(name: str, time_box_s: float, target: float) -> ProbeRequest:
    builtin, options, batch = MODELS[name]
    recipe = WorkloadRecipe(builtin=builtin, entrypoint=None, options=options, batch_size=batch)
    return ProbeRequest(probe_id=f"bench-{name}", offer_key="local", recipe=recipe,
                        workload_fingerprint=name, time_box_s=time_box_s, input_check=False,
                        target_rel_halfwidth=target)


def _bench(name: str, time_box_s: float, clock: Callable[[], float]) -> list[str]:
    builtin, options, batch = MODELS[name]
    recipe = WorkloadRecipe(builtin=builtin, entrypoint=None, options=options, batch_size=batch)
    start = time.perf_counter()
    probe = Harness(_request(name, time_box_s, 0.02), workload=build_workload(recipe),
                    device=CpuDevice(), clock=clock).run()
    probe_wall = time.perf_counter() - start
    assert probe.samples_per_second and probe.step_time_p50_s
    measured_s = probe.measured_steps * batch / probe.samples_per_second
    long_box = 10 * measured_s
    start = time.perf_counter()
    reference = Harness(_request(name, long_box, 1e-9), workload=build_workload(recipe),
                        device=CpuDevice(), clock=clock,
                        max_warmup_steps=probe.warmup_steps + 5).run()
    long_wall = time.perf_counter() - start
    assert reference.samples_per_second
    diff = probe.samples_per_second / reference.samples_per_second - 1.0
    assert reference.step_time_p50_s
    median_diff = reference.step_time_p50_s / probe.step_time_p50_s - 1.0
    return [
        name, str(batch), f"{probe.samples_per_second:,.1f}",
        f"±{probe.rel_halfwidth:.1%}" if probe.rel_halfwidth is not None else "-",
        "yes" if probe.stable else "no",
        str(probe.measured_steps), f"{measured_s:.1f}", f"{probe_wall:.1f}",
        f"{batch / probe.step_time_p50_s:,.1f}",
        f"{reference.samples_per_second:,.1f}", str(reference.measured_steps),
        f"{long_box:.0f}", f"{long_wall:.1f}", f"{diff:+.1%}", "yes" if abs(diff) <= 0.03 else "NO",
        f"{median_diff:+.1%}",
    ]


def main() -> None:
    """Run the comparison and write the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-box", type=float, default=15.0)
    parser.add_argument("--models", default="mlp,resnet,bert")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--name", default="probe", help="results file name (without .md)")
    args = parser.parse_args()
    import torch

    if args.clock == "cpu":
        torch.set_num_threads(1)
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    load_before = os.getloadavg()[0]
    rows = [_bench(name, args.time_box, clock) for name in args.models.split(",")]
    load_after = os.getloadavg()[0]

    write_table(
        args.name, "Probe estimate vs a run ten times longer (CPU)",
        ["model", "batch", "probe samples/s", "probe ±95%", "stable", "probe steps",
         "probe measured s", "probe wall s", "probe batch/p50", "10x samples/s", "10x steps",
         "10x box s", "10x wall s", "probe vs 10x", "within 3%", "batch/p50: probe vs 10x"],
        rows,
        notes=[f"clock: {args.clock} ({'thread CPU time' if args.clock == 'cpu' else 'wall'}); "
               f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
               f"{os.cpu_count()} CPUs; 1-min load average {load_before:.2f} before, "
               f"{load_after:.2f} after (the machine is shared with other jobs)",
               f"probe: time box {args.time_box:g} s on that clock, stop at 2% relative 95% "
               "half-width; 'probe wall s' is wall time including building the model and "
               "warm-up",
               "10x: the same step for 10x the probe's measured time, no early stop",
               "batch/p50: samples/s from the median step time (robust to stalls), for "
               "comparison; the probe reports the mean (what a training run gets)"],
    )


if __name__ == "__main__":
    main()
