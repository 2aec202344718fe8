"""Third-party architectures: do they trace on fake tensors, and how close is the traced peak?

For each architecture of ``benchmarks/hf_zoo.py`` (23 Hugging Face transformers models,
small configurations: causal, masked and sequence-to-sequence LMs, vision transformers,
convolutional nets, a mixture of experts) and of ``benchmarks/rnn_lm.py`` (LSTM and GRU
language models in plain torch, fused recurrent layers):

1. ``recommend``'s view: the profile (FLOPs), the memory trace with CUDA semantics and the
   operator mix, at the workload's batch, each ``ok`` or the first line of its error (a
   failure there means ``recommend`` falls back to the estimated memory sum and the FLOPs
   prior, with a warning);
2. this machine's CPU: the probe harness's measured peak (``bench_memory``'s fresh-process
   measurement) against the trace with CPU semantics, fp32 and bf16 (target: within 15%).

Then the same for common fine-tuning set-ups (``SETUPS``): activation checkpointing, only the
head trained, the model cast to bf16 (pure-bf16 training).

    python benchmarks/bench_trace_zoo.py [--time-box 8] [--only llama,t5 [--out NAME]]

The Hugging Face rows need ``pip install transformers`` (not a project dependency;
``--only lstm_lm,gru_lm`` runs without it). Writes
benchmarks/results/trace_zoo.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _table import write_table  # noqa: E402
from bench_memory import Config, _measure_in_child, _traced_gib  # noqa: E402
from hf_zoo import ARCHITECTURES  # noqa: E402
from rnn_lm import CELLS  # noqa: E402

from advisor.profiling.op_profile import trace_op_mix  # noqa: E402
from advisor.profiling.profile import MemoryBasis, profile_workload  # noqa: E402
from advisor.spec import Precision, WorkloadSpec, parse_workload_spec  # noqa: E402

# name -> (task, entrypoint, its options): the Hugging Face zoo and the recurrent LMs
ZOO: dict[str, tuple[str, str, dict[str, object]]] = {
    **{arch: (task, "hf_zoo:build", {"arch": arch}) for arch, (task, _) in ARCHITECTURES.items()},
    **{f"{cell}_lm": ("rnn-lm", "rnn_lm:build", {"cell": cell}) for cell in CELLS},
}


def _batch(arch: str) -> int:
    # the small recurrent LMs at 64: at 16 their tensors are a few MiB beside the CPU
    # runtime's own fixed 6-14 MiB
    return {"image": 32, "rnn-lm": 64}.get(ZOO[arch][0], 16)


def _config(arch: str, options: dict[str, object]) -> Config:
    _, entrypoint, base = ZOO[arch]
    return Config(f"{entrypoint} {arch}", entrypoint=entrypoint, options={**base, **options})


# (architecture, options): fine-tuning set-ups of hf_zoo.build
SETUPS: list[tuple[str, dict[str, object]]] = [
    ("llama", {"checkpointing": True}), ("llama", {"train": "head"}),
    ("llama", {"weights": "bf16"}), ("t5", {"checkpointing": True}),
    ("vit", {"checkpointing": True}),
]


def _spec(arch: str, options: dict[str, object], precision: str) -> WorkloadSpec:
    config = _config(arch, options)
    spec = parse_workload_spec({"name": f"zoo-{arch}", "precision": precision,
                                "model": {"entrypoint": config.entrypoint,
                                          "options": config.options},
                                "batch_size": _batch(arch), "data": {"samples": 1000}})
    return WorkloadSpec(**{**spec.__dict__, "source_dir": str(HERE)})


def _recommend_view(arch: str, options: dict[str, object]) -> list[str]:
    """[profile, memory trace (CUDA), operator mix, seconds] as recommend would get them."""
    start = time.perf_counter()
    spec = _spec(arch, options, "bf16")
    try:
        profile = profile_workload(spec, use_cache=False)
        memory = ("ok" if profile.memory_basis is MemoryBasis.TRACED
                  else f"failed: {profile.trace_problem[:90]}")
        flops = f"{profile.flops_per_sample / 1e9:.2f}"
    except Exception as exc:  # noqa: BLE001 - the table reports it
        flops, memory = f"failed: {type(exc).__name__}", "-"
    try:
        trace_op_mix(_config(arch, options).recipe(_batch(arch), "bf16"), Precision.BF16)
        mix = "ok"
    except Exception as exc:  # noqa: BLE001
        mix = f"failed: {str(exc)[:90]}"
    return [flops, memory, mix, f"{time.perf_counter() - start:.1f}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-box", type=float, default=8.0, help="harness time box per CPU run")
    parser.add_argument("--only", help="comma-separated architectures (default: all)")
    parser.add_argument("--out", default="trace_zoo",
                        help="results file name under benchmarks/results (default: trace_zoo; "
                             "give another with --only to keep the whole zoo's table)")
    args = parser.parse_args()
    archs = args.only.split(",") if args.only else list(ZOO)
    cases = [(arch, {}) for arch in archs] + [c for c in SETUPS if c[0] in archs]
    rows, errors = [], []
    for arch, options in cases:
        view = _recommend_view(arch, options)
        config = _config(arch, options)
        cells = []
        for precision in ("fp32", "bf16"):
            measured = _measure_in_child(config, precision, _batch(arch), args.time_box)
            peak = measured.get("peak_gib")
            try:
                traced = _traced_gib(config.recipe(_batch(arch), precision), "cpu")
            except Exception as exc:  # noqa: BLE001
                cells.append(f"trace failed: {type(exc).__name__}")
                continue
            if not peak:
                cells.append(f"run failed: {measured.get('error')}")
                continue
            error = traced / peak - 1
            errors.append(error)
            cells.append(f"{peak * 1024:.0f} / {traced * 1024:.0f} MiB ({error:+.1%})")
        name = " ".join([arch, *(f"{k}={v}" for k, v in options.items())])
        rows.append([name, ZOO[arch][0], str(_batch(arch)), *view, *cells])
        print(" | ".join(rows[-1]), flush=True)
    within = sum(abs(e) <= 0.15 for e in errors)
    notes = [
        f"Command: `python benchmarks/bench_trace_zoo.py --time-box {args.time_box:g}"
        + (f" --only {args.only}" if args.only else "")
        + (f" --out {args.out}" if args.out != "trace_zoo" else "") + "`.",
        "GFLOPs/sample: the profile's forward + backward FLOPs per sample (bf16). Memory trace "
        "(CUDA) and op mix: what `recommend` uses; 'failed' means it falls back to the "
        "estimated sum and the FLOPs prior (and says so in a warning).",
        "CPU columns: measured peak RSS above the warmed-up process (the probe harness on "
        "`CpuDevice`, a fresh process per run) / traced peak with CPU semantics, and the "
        "traced error against the measurement.",
        (f"CPU runs within 15%: {within} of {len(errors)}; median |error| "
         f"{statistics.median(abs(e) for e in errors):.1%}, worst {max(errors, key=abs):+.1%}."
         if errors else "No CPU run finished."),
    ]
    write_table(args.out, "Third-party architectures on fake tensors (Hugging Face zoo, recurrent LMs)",
                ["architecture", "task", "batch", "GFLOPs/sample", "memory trace (CUDA)",
                 "op mix", "trace s", "CPU fp32: measured / traced", "CPU bf16: measured / traced"],
                rows, notes)


if __name__ == "__main__":
    main()
