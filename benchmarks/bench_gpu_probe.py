"""Local probes on this machine's accelerator, and what they change in ``recommend``.

Runs the CLI as a user would, in a fresh ``ADVISOR_HOME``:

1. ``advisor recommend examples/resnet50.yaml`` with no probes (before);
2. ``advisor probe examples/resnet50.yaml --on local --find-batch`` (bf16);
3. the same model in fp32 (``--on local``): the bf16 finding should fire;
4. ``advisor recommend examples/resnet50.yaml`` again (after): offers with this machine's
   accelerator should be ``measured``, and memory fit decided by the search;
5. ``examples/custom/model.yaml`` (its real DataLoader: the input check reports on it);
6. ``examples/mlp.yaml --find-batch --memory-limit-gib 1``.

    python benchmarks/bench_gpu_probe.py [--time-box 30]

Writes ``benchmarks/results/gpu_probe_<device>.md``; the raw JSON and stderr of every
command go to ``--raw DIR`` (default: the temporary ADVISOR_HOME) for inspection.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _table import write_result  # noqa: E402


def _advisor(args: list[str], env: dict[str, str], raw: Path, name: str) -> tuple[dict[str, Any], float]:
    """Run ``advisor ARGS --json``; the parsed document and the wall seconds."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from cli.main import main; sys.exit(main())",
         *args, "--json"], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    (raw / f"{name}.json").write_text(proc.stdout)
    (raw / f"{name}.stderr").write_text(proc.stderr)
    try:
        return json.loads(proc.stdout), elapsed
    except json.JSONDecodeError:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["no output"],
                "exit": proc.returncode}, elapsed


def _ranking_lines(doc: dict[str, Any], accelerator: str | None) -> list[str]:
    ranked = doc.get("ranked", [])
    mine = [r for r in ranked if accelerator and r["accelerator"] == accelerator]
    bases: dict[str, int] = {}
    for row in mine:
        bases[row["basis"]] = bases.get(row["basis"], 0) + 1
    lines = [f"- ranked offers: {len(ranked)}; with {accelerator}: {len(mine)} "
             f"(basis: {bases or 'none'}); rejected: {len(doc.get('rejected', []))}"]
    for i, row in enumerate(ranked[:5], 1):
        lines.append(f"  {i}. {row['offer']} ({row['accelerator_count']}x {row['accelerator']}) "
                     f"{row['samples_per_second']:,.0f} samples/s "
                     f"[{row['samples_per_second_low']:,.0f}-{row['samples_per_second_high']:,.0f}], "
                     f"{row['samples_per_dollar']:,.0f} samples/$, basis {row['basis']}")
    if mine:
        best = mine[0]
        rank = ranked.index(best) + 1
        lines.append(f"  best {accelerator} offer: rank {rank}, {best['offer']} "
                     f"{best['samples_per_second']:,.0f} samples/s, basis {best['basis']}")
    return lines


def _probe_row(name: str, doc: dict[str, Any], elapsed: float) -> list[str]:
    probes = doc.get("probes") or [{}]
    p = probes[0]
    kinds = ", ".join(f["kind"] for f in p.get("findings", [])) or "-"

    def num(key: str, fmt: str) -> str:
        value = p.get(key)
        return format(value, fmt) if isinstance(value, int | float) else "-"

    return [name, str(p.get("status", doc.get("error"))), str(p.get("device", "-")),
            str(p.get("accelerator") or "-"), str(p.get("precision", "-")),
            num("samples_per_second", ",.1f"), num("rel_halfwidth", ".1%"),
            num("peak_memory_gib", ".2f"), num("input_bound_ratio", ".2f"),
            f"{p.get('largest_batch_that_fits', '-')}/{p.get('smallest_batch_that_failed', '-')}"
            f" ({'complete' if p.get('batch_search_complete') else 'lower bound'})",
            num("largest_batch_peak_memory_gib", ".1f"), kinds, f"{elapsed:.0f}"]


def main() -> None:
    """Run the steps and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-box", type=float, default=30.0)
    parser.add_argument("--raw", type=Path, default=None)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="advisor-gpu-"))
    raw = args.raw or home
    raw.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "ADVISOR_HOME": str(home),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    fp32 = home / "resnet50_fp32.yaml"
    fp32.write_text((ROOT / "examples/resnet50.yaml").read_text()
                    .replace("precision: bf16", "precision: fp32")
                    .replace("name: resnet50-imagenet", "name: resnet50-imagenet-fp32"))
    box = ["--time-box", f"{args.time_box:g}"]
    before, _ = _advisor(["recommend", "examples/resnet50.yaml"], env, raw, "recommend_before")
    runs = [
        ("resnet50 bf16 --find-batch", ["probe", "examples/resnet50.yaml", "--on", "local",
                                        "--find-batch", *box]),
        ("resnet50 fp32", ["probe", str(fp32), "--on", "local", *box]),
        ("custom (real DataLoader)", ["probe", "examples/custom/model.yaml", "--on", "local",
                                      *box]),
        ("mlp --find-batch --memory-limit-gib 1", ["probe", "examples/mlp.yaml", "--on", "local",
                                                   "--find-batch", "--memory-limit-gib", "1",
                                                   *box]),
    ]
    rows, docs = [], {}
    for i, (name, command) in enumerate(runs):
        doc, elapsed = _advisor(command, env, raw, f"probe_{i}")
        docs[name] = doc
        rows.append(_probe_row(name, doc, elapsed))
    after, _ = _advisor(["recommend", "examples/resnet50.yaml"], env, raw, "recommend_after")
    first = (docs["resnet50 bf16 --find-batch"].get("probes") or [{}])[0]
    device = str(first.get("device", "unknown"))
    accelerator = first.get("accelerator")
    header = ["probe", "status", "device", "accelerator", "precision", "samples/s", "±95%",
              "peak GiB", "input ratio", "fits/failed batch", "peak at fit GiB", "findings",
              "wall s"]
    lines = [f"# Local probes on {device} and what they change in recommend", "",
             f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; time box {args.time_box:g} s; "
             "`python benchmarks/bench_gpu_probe.py`", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", "## `advisor recommend examples/resnet50.yaml` before the probes", "",
              *_ranking_lines(before, accelerator), "",
              "## ... after them", "", *_ranking_lines(after, accelerator), ""]
    fp32_findings = (docs["resnet50 fp32"].get("probes") or [{}])[0].get("findings", [])
    lines += ["## Findings of the fp32 probe", ""]
    lines += [f"- {f['kind']}: {f['advice']} ({f['evidence']}; {f['expected_gain']})"
              for f in fp32_findings] or ["- none"]
    label = (accelerator or device).replace(" ", "_").replace(":", "_").replace("/", "_")
    write_result(f"gpu_probe_{label}", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
