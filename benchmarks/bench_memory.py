"""Memory: the traced prediction (``advisor.profiling.memory_trace``) against measured peaks.

Two tables:

- **H100, reported in issue 14, not re-measured here**: the peaks (``max_memory_allocated``
  over a step of the probe harness) the issue reports for three configurations, against the
  old hand-written estimate (from the issue) and the new trace with CUDA semantics (what
  ``recommend`` uses), plus an ablation that traces with CPU semantics (CPU autocast lists
  and attention kernels) to show what the CUDA emulation contributes. Then the target "never
  reject an offer that fits with more than 10% to spare", checked for those configurations
  on every NVIDIA memory size in the catalog.
- **This machine's CPU, measured here**: small configurations run by the probe harness on
  ``CpuDevice`` (peak resident memory above the process's baseline, reset after warm-up), each
  in a fresh process, against the trace with CPU semantics at the same batch.

    python benchmarks/bench_memory.py [--skip-cpu] [--skip-hf] [--time-box 30]

The Hugging Face rows need ``pip install transformers`` (not a project dependency); without
it they are skipped and the table says so. Writes benchmarks/results/memory.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from _table import write_result  # noqa: E402

from advisor.profiling import overhead_for_vendor, trace_peak_bytes  # noqa: E402
from advisor.spec import Precision  # noqa: E402
from probes.workload import WorkloadRecipe  # noqa: E402

GIB = 2**30


@dataclass(frozen=True)
class Config:
    """One model configuration: a built-in or a Hugging Face entrypoint, with options."""

    label: str
    builtin: str | None = None
    entrypoint: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def recipe(self, batch: int, precision: str) -> WorkloadRecipe:
        """The recipe at ``batch`` samples and ``precision``."""
        return WorkloadRecipe(builtin=self.builtin, entrypoint=self.entrypoint,
                              options=self.options, batch_size=batch, precision=precision,
                              base_dir=str(HERE) if self.entrypoint else None)

    @property
    def needs_transformers(self) -> bool:
        """True for the Hugging Face entrypoints (every entrypoint here)."""
        return self.entrypoint is not None


# --- H100 figures reported in issue 14 (not re-measured here) ------------------------------

GPT2 = Config("gpt2 (built-in, examples/gpt2.yaml)", builtin="gpt2",
              options={"hidden": 768, "layers": 12, "heads": 12, "seq_len": 1024, "vocab": 50257})
RESNET50 = Config("resnet50 (built-in, examples/resnet50.yaml)", builtin="resnet50",
                  options={"image_size": 224, "num_classes": 1000})
HF_GPT2 = Config("GPT-2 small, Hugging Face transformers (benchmarks/hf_gpt2.py)",
                 entrypoint="hf_gpt2:build")
# (config, precision, batch per device, measured GiB on the H100, old prediction GiB)
ISSUE_H100 = [
    (GPT2, "bf16", 64, 54.1, 38.4),
    (RESNET50, "bf16", 256, 11.1, 11.9),
    (HF_GPT2, "bf16", 32, 45.6, 83.1),
]

# --- CPU configurations measured here --------------------------------------------------------

CPU_CONFIGS = [
    (Config("mlp 784-4096x3-10", builtin="mlp",
            options={"input_dim": 784, "hidden": 4096, "layers": 3, "num_classes": 10}),
     ("fp32", "bf16"), (256, 2048)),
    (Config("resnet18 w32 64px", builtin="resnet50",
            options={"depth": 18, "width": 32, "image_size": 64, "num_classes": 100}),
     ("fp32", "bf16"), (32, 128)),
    (Config("bert h256 l4 seq128", builtin="bert",
            options={"hidden": 256, "layers": 4, "heads": 4, "ffn": 1024, "seq_len": 128,
                     "vocab": 8000}),
     ("fp32", "bf16"), (16, 64)),
    (Config("gpt2 h256 l4 seq256", builtin="gpt2",
            options={"hidden": 256, "layers": 4, "heads": 4, "seq_len": 256, "vocab": 8000}),
     ("fp32", "bf16"), (8, 32)),
    (Config("HF GPT-2 h256 l2 seq128", entrypoint="hf_gpt2:build",
            options={"n_embd": 256, "n_layer": 2, "n_head": 4, "seq_len": 128,
                     "vocab_size": 8000}),
     ("fp32", "bf16"), (16, 64)),
    (Config("HF BERT MLM h256 l4 seq128", entrypoint="hf_bert:build",
            options={"hidden": 256, "layers": 4, "heads": 4, "ffn": 1024, "seq_len": 128,
                     "vocab_size": 8000}),
     ("fp32", "bf16"), (16, 64)),
    (Config("HF ViT h256 l4 64px/8", entrypoint="hf_vit:build",
            options={"image_size": 64, "patch_size": 8, "hidden": 256, "layers": 4, "heads": 4,
                     "ffn": 1024, "num_classes": 100}),
     ("fp32", "bf16"), (32, 128)),
]


def _traced_gib(recipe: WorkloadRecipe, device: str) -> float:
    """The traced peak of ``recipe``'s step at its batch (traced at it and half of it), GiB."""
    batch = recipe.batch_size
    traced = trace_peak_bytes(recipe, Precision(recipe.precision),
                              batch_sizes=(max(1, batch // 2), batch), device=device)
    return traced.peak_bytes(batch) / GIB


Result = tuple[Config, float, float, float]  # config, measured GiB, need GiB, traced error


def _h100_table(skip_hf: bool) -> tuple[list[str], list[Result]]:
    cuda = overhead_for_vendor("NVIDIA")
    header = ("| model | precision | batch | measured (issue) GiB | old estimate (issue) GiB "
              "| old error | traced GiB | traced error | within 15% | traced, CPU semantics GiB "
              "| need: traced + CUDA runtime GiB | H100-SXM 80.0 GiB | trace s |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    results, notes = [], []
    for config, precision, batch, measured, old in ISSUE_H100:
        if config.needs_transformers and skip_hf:
            lines.append(f"| {config.label} | {precision} | {batch} | {measured} | {old} | "
                         f"{old / measured - 1:+.0%} | not run: transformers is not installed "
                         "| | | | | | |")
            continue
        start = time.perf_counter()
        traced = _traced_gib(config.recipe(batch, precision), "cuda")
        seconds = time.perf_counter() - start
        cpu_semantics = _traced_gib(config.recipe(batch, precision), "cpu")
        need = traced + cuda.gib(traced)
        error = traced / measured - 1
        lines.append(
            f"| {config.label} | {precision} | {batch} | {measured:.1f} | {old:.1f} | "
            f"{old / measured - 1:+.0%} | {traced:.1f} | {error:+.1%} | "
            f"{'yes' if abs(error) <= 0.15 else 'NO'} | {cpu_semantics:.1f} | {need:.1f} | "
            f"{'fits' if need <= 80.0 else 'rejected'} | {seconds:.1f} |")
        results.append((config, measured, need, error))
        if config.needs_transformers:
            fp32 = _traced_gib(config.recipe(batch, "fp32"), "cuda")
            notes.append(f"The issue does not state the precision of the {config.label} run; "
                         f"bf16 is assumed, as for the other rows (the fp32 trace gives "
                         f"{fp32:.1f} GiB, {fp32 / measured - 1:+.0%} from the measured peak).")
    return [*lines, "", *notes], results


def _spare_check(results: list[Result]) -> tuple[list[str], int, int]:
    """Never reject an offer that fits with more than 10% to spare, over the catalog's NVIDIA
    memory sizes: measured peak <= 90% of the device, yet need > device. Returns the lines,
    the number of such wrong rejections and of (configuration, size) pairs checked."""
    from pricing import shipped_catalog

    sizes = sorted({a.memory_gib for a in shipped_catalog().accelerators.values()
                    if a.vendor == "NVIDIA" and a.training})
    lines = []
    wrong = checked = 0
    for config, measured, need, _ in results:
        roomy = [m for m in sizes if measured <= 0.9 * m]
        wrongly_rejected = [m for m in roomy if need > m]
        too_small = [m for m in sizes if measured > m and need <= m]
        closest = min(roomy) if roomy else None
        wrong += len(wrongly_rejected)
        checked += len(roomy)
        lines.append(
            f"- {config.label}: {len(roomy)} of {len(sizes)} NVIDIA memory sizes fit it with more "
            f"than 10% to spare; rejected among them: "
            f"{', '.join(f'{m:g} GiB' for m in wrongly_rejected) or 'none'}"
            + (f" (tightest: {closest:g} GiB, need {need:.1f} GiB)" if closest else "")
            + f"; called a fit but smaller than the measured peak: "
            f"{', '.join(f'{m:g} GiB' for m in too_small) or 'none'}")
    return lines, wrong, checked


# --- CPU measurements (each in a fresh process) ---------------------------------------------

_MALLOC_ENV = {
    # Large blocks straight from mmap and back to the system on free, so resident memory
    # follows the live tensors instead of glibc's caches.
    "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072",
    "MALLOC_ARENA_MAX": "2",
}


def _measure_in_child(config: Config, precision: str, batch: int, time_box_s: float) -> dict[str, Any]:
    payload = json.dumps({"config": config.__dict__, "precision": precision, "batch": batch,
                          "time_box_s": time_box_s})
    out = subprocess.run([sys.executable, __file__, "--measure-cpu", payload],
                         capture_output=True, text=True, env={**os.environ, **_MALLOC_ENV},
                         check=False, timeout=900)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        return {"error": (out.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def _measure_cpu(payload: str) -> None:
    """Child process: warm torch up on the workload at batch 1, then probe it with the harness
    on a CpuDevice created after the warm-up (its baseline), and print the peak as JSON."""
    import gc

    import torch

    from probes.devices import CpuDevice
    from probes.harness import Harness
    from probes.types import ProbeRequest
    from probes.workload import build_workload

    args = json.loads(payload)
    config = Config(**args["config"])
    precision, batch = args["precision"], args["batch"]
    warm = build_workload(config.recipe(1, precision))  # imports, kernels, oneDNN caches
    optimizer = torch.optim.AdamW(warm.model.parameters(), lr=1e-4)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    for _ in range(2):
        with torch.autocast("cpu", dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = warm.loss_fn(warm.model, warm.make_batch(1, "cpu"))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    del warm, optimizer, loss
    gc.collect()
    request = ProbeRequest(probe_id="bench-memory", offer_key="local",
                           recipe=config.recipe(batch, precision),
                           workload_fingerprint="bench-memory", time_box_s=args["time_box_s"],
                           input_check=False, target_rel_halfwidth=0.5)
    result = Harness(request, device=CpuDevice(), min_measured_steps=3, min_measure_s=0.5,
                     max_warmup_steps=3).run()
    print(json.dumps({"status": str(result.status), "peak_gib": result.peak_memory_gib,
                      "error": result.error}))


def _cpu_table(time_box_s: float, skip_hf: bool) -> tuple[list[str], list[float]]:
    header = ("| model | precision | batch | measured peak RSS GiB | traced (CPU semantics) GiB "
              "| error | within 15% |")
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    errors = []
    for config, precisions, batches in CPU_CONFIGS:
        for precision in precisions:
            for batch in batches:
                row = f"| {config.label} | {precision} | {batch} | "
                if config.needs_transformers and skip_hf:
                    lines.append(row + "not run: transformers is not installed | | | |")
                    continue
                measured = _measure_in_child(config, precision, batch, time_box_s)
                traced = _traced_gib(config.recipe(batch, precision), "cpu")
                peak = measured.get("peak_gib")
                if not peak:
                    lines.append(row + f"failed: {measured.get('error')} | {traced:.3f} | | |")
                    continue
                error = traced / peak - 1
                errors.append(error)
                lines.append(row + f"{peak:.3f} | {traced:.3f} | {error:+.1%} | "
                             f"{'yes' if abs(error) <= 0.15 else 'NO'} |")
    return lines, errors


def main() -> None:
    """Run both comparisons and write benchmarks/results/memory.md."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-cpu", action="store_true", help="only the H100 table")
    parser.add_argument("--skip-hf", action="store_true", help="leave out the transformers rows")
    parser.add_argument("--time-box", type=float, default=30.0, help="harness time box per CPU run")
    parser.add_argument("--measure-cpu", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_cpu:
        _measure_cpu(args.measure_cpu)
        return
    import torch

    skip_hf = args.skip_hf or importlib.util.find_spec("transformers") is None
    h100, results = _h100_table(skip_hf)
    spare, wrong, checked = _spare_check(results)
    text = [
        "# Memory: traced prediction vs measured peak", "",
        f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {platform.machine()}, "
        f"Python {platform.python_version()}, torch {torch.__version__}"
        + ("" if skip_hf else f", transformers {_version('transformers')}"), "",
        "Command: `python benchmarks/bench_memory.py`", "",
        "## H100: reported in issue 14, not re-measured here", "",
        "Measured = `torch.cuda.max_memory_allocated` over a step of the probe harness on an "
        "H100 (the issue's figures; no GPU was at hand for this change). Old estimate = the "
        "hand-written sum (weights + fp32 gradients + Adam + saved activations + 1 GiB) the "
        "issue reports. Traced = `advisor.profiling.memory_trace.trace_peak_bytes` with CUDA semantics, "
        "traced at the batch and half of it; its error is against the measured peak (both "
        "count allocator blocks, neither the CUDA context). Need = traced + the CUDA runtime "
        f"rows of advisor/data/runtime_overhead.csv ({overhead_for_vendor('NVIDIA').describe()}), "
        "what `recommend` compares with the device's memory. The CPU-semantics column traces "
        "the same step with the CPU's autocast lists and attention kernels (the ablation of "
        "`advisor.profiling._cuda_emulation`).", "",
        *h100, "",
        "Target: never reject an offer that fits with more than 10% to spare (measured peak at "
        "most 90% of the device's memory), over the NVIDIA memory sizes in the catalog:", "",
        *spare, "",
    ]
    h100_worst = max((abs(r[3]) for r in results), default=float("nan"))
    targets = [
        "## Targets (issue 14)", "",
        f"- Within 15% of the measured peak, H100 figures of the issue: worst error "
        f"{h100_worst:.1%} over {len(results)} configurations (built-ins and the Hugging Face "
        f"GPT-2): {'met' if h100_worst <= 0.15 else 'missed'}.",
        f"- Never reject an offer that fits with more than 10% to spare: {wrong} wrong "
        f"rejections over {checked} (configuration, NVIDIA memory size) pairs with that much "
        f"room: {'met' if wrong == 0 else 'missed'}.",
    ]
    if not args.skip_cpu:
        cpu, errors = _cpu_table(args.time_box, skip_hf)
        worst = max((abs(e) for e in errors), default=float("nan"))
        text += [
            "## This machine's CPU: measured here", "",
            f"{os.cpu_count()} CPUs, torch {torch.get_num_threads()} threads. Measured = the "
            "probe harness on `probes.devices.CpuDevice` (peak resident set above the process's "
            "baseline, reset after warm-up: VmHWM), each run in a fresh process that first warms "
            "torch up on the same model at batch 1 (kernels, oneDNN caches, imports stay in the "
            "baseline) and with glibc set to return large blocks to the system "
            f"({', '.join(f'{k}={v}' for k, v in _MALLOC_ENV.items())}). Traced = the trace "
            "with CPU semantics (CPU autocast lists and attention kernels, AdamW's per-tensor "
            "loop, no allocator rounding) at the same batch.", "",
            *cpu, "",
            f"Worst absolute error: {worst:.1%} over {len(errors)} runs.", "",
            "What the CPU comparison can show: that the trace follows the step the harness runs "
            "(which tensors are live at the peak, AdamW's state and temporaries, autocast's "
            "copies, how memory grows with the batch) against an independent measurement. What "
            "it cannot show: the CUDA caching allocator's rounding and the CUDA semantics "
            "(autocast lists, fused attention, foreach AdamW) that `recommend` uses; resident "
            "memory also holds what the trace does not see (kernels' scratch buffers such as "
            "oneDNN's, glibc's heap, pages touched by one-off work), so it reads higher for "
            "small models.", "",
        ]
        targets.append(f"- Within 15% on this machine's CPU (trace with CPU semantics against the "
                       f"harness's resident memory): worst error {worst:.1%} over {len(errors)} "
                       f"runs: {'met' if worst <= 0.15 else 'missed'}.")
    write_result("memory", "\n".join(text[:6] + targets + [""] + text[6:]))


def _version(module: str) -> str:
    from importlib.metadata import version

    return version(module)


if __name__ == "__main__":
    main()
