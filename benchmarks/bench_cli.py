"""Wall time of `advisor --help` and `advisor recommend` (cold and cached profile).

Run: python benchmarks/bench_cli.py [--repeats N]. Writes benchmarks/results/cli.md.
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
    for example in ["resnet50", "bert", "gpt2", "mlp"]:
        cmd = [*ADVISOR, "recommend", f"examples/{example}.yaml", "--json"]
        shutil.rmtree(home / "profiles", ignore_errors=True)
        cold = _time(cmd, env)
        warm = [_time(cmd, env) for _ in range(args.repeats)]
        rows.append([f"recommend {example} (first run: profiles with torch)", f"{cold:.3f}",
                     f"{cold:.3f}", "1"])
        rows.append([f"recommend {example} (profile cached)", f"{statistics.median(warm):.3f}",
                     f"{max(warm):.3f}", str(args.repeats)])
    shutil.rmtree(home, ignore_errors=True)
    write_table("cli", "CLI wall time (seconds, whole process)",
                ["command", "median s", "max s", "runs"], rows,
                ["targets: --help < 0.5 s; recommend < 2 s after install (profile cached by "
                 "workload fingerprint; the first run imports torch to count FLOPs)"])


if __name__ == "__main__":
    main()
