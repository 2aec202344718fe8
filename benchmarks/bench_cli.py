"""Wall time of `advisor --help` and `advisor recommend` (first run and cached profile).

A first run starts from an empty ADVISOR_HOME, as after install: the built-in examples read
their shipped profiles and the shipped throughput model (no torch, no fit); the custom example
(a user's entrypoint) still profiles with torch. Run with PYTHONDONTWRITEBYTECODE unset (an
installed package has its .pyc files): python benchmarks/bench_cli.py [--repeats N].
Writes benchmarks/results/cli.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = [sys.executable, "-m", "cli"]


def _time(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    env = {**os.environ, "ADVISOR_HOME": str(home)}
    rows = []
    help_times = [_time([*ADVISOR, "--help"], env) for _ in range(args.repeats)]
    rows.append(["advisor --help", f"{statistics.median(help_times):.3f}", f"{max(help_times):.3f}",
                 str(args.repeats)])
    for example, first in [("resnet50", "shipped profile"), ("bert", "shipped profile"),
                           ("gpt2", "shipped profile"), ("mlp", "shipped profile"),
                           ("custom/model", "user entrypoint: profiles with torch")]:
        cmd = [*ADVISOR, "recommend", f"examples/{example}.yaml", "--json"]
        cold = []
        for _ in range(args.repeats):  # each from an empty ADVISOR_HOME, as after install
            shutil.rmtree(home, ignore_errors=True)
            cold.append(_time(cmd, env))
        warm = [_time(cmd, env) for _ in range(args.repeats)]
        rows.append([f"recommend {example} (first run: {first})",
                     f"{statistics.median(cold):.3f}", f"{max(cold):.3f}", str(args.repeats)])
        rows.append([f"recommend {example} (profile cached)", f"{statistics.median(warm):.3f}",
                     f"{max(warm):.3f}", str(args.repeats)])
    shutil.rmtree(home, ignore_errors=True)
    write_table("cli", "CLI wall time (seconds, whole process)",
                ["command", "median s", "max s", "runs"], rows,
                ["targets: --help < 0.5 s; the first recommend of a built-in example < 4 s "
                 "(empty ADVISOR_HOME: shipped profiles and throughput model, python -m "
                 "advisor.throughput.shipped_artifacts); a cached recommend < 2 s"])


if __name__ == "__main__":
    main()
