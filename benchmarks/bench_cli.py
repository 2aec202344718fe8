"""Wall time of the ``advisor`` commands, whole process: ``recommend`` (first run and cached
profile) and the start-up of every command (each ``--help`` and the common read-only calls).

A first run starts from an empty ADVISOR_HOME, as after install: the built-in examples read
their shipped profiles and the shipped throughput model (no torch, no fit); the custom example
(a user's entrypoint) still profiles with torch. The start-up table times every command's
``--help`` (the command tree is read from ``cli.main``), ``probes list``, ``pricing status``,
``pricing list``, ``sweep status`` (no studies) and ``recommend`` of a built-in example with a
cached profile (table and ``--json``) in a home prepared by one run of each; its floor is
Python importing what every command's output needs (numpy, click, rich, yaml).

``--baseline DIR`` times the same start-up calls on another checkout (say the main branch's
worktree) too, alternating the two run by run so that both see the same machine load, and adds
its column. Run with PYTHONDONTWRITEBYTECODE unset (an installed package has its .pyc files):

    python benchmarks/bench_cli.py [--repeats N] [--baseline DIR]

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
# what every command's output needs: the floor of a command that prints a table
FLOOR = [sys.executable, "-c", "import numpy, click, rich.console, rich.table, yaml"]
# read-only calls a user runs often (sweep status: no studies in the scratch home)
READ_ONLY = [
    ["probes", "list"],
    ["pricing", "status"],
    ["pricing", "list", "--accelerator", "H100"],
    ["sweep", "status"],
    ["recommend", "examples/resnet50.yaml"],
    ["recommend", "examples/resnet50.yaml", "--json"],
]


def _time(args: list[str], env: dict[str, str], cwd: Path = ROOT) -> float:
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _help_calls() -> list[list[str]]:
    """``--help`` of the group and of every command and subcommand, from the command tree."""
    sys.path.insert(0, str(ROOT))
    from cli.main import command_paths

    return [[*path, "--help"] for path in command_paths()]


def _recommend_rows(env: dict[str, str], home: Path, repeats: int) -> list[list[str]]:
    rows = []
    for example, first in [("resnet50", "shipped profile"), ("bert", "shipped profile"),
                           ("gpt2", "shipped profile"), ("mlp", "shipped profile"),
                           ("custom/model", "user entrypoint: profiles with torch")]:
        cmd = [*ADVISOR, "recommend", f"examples/{example}.yaml", "--json"]
        cold = []
        for _ in range(repeats):  # each from an empty ADVISOR_HOME, as after install
            shutil.rmtree(home, ignore_errors=True)
            cold.append(_time(cmd, env))
        warm = [_time(cmd, env) for _ in range(repeats)]
        rows.append([f"recommend {example} (first run: {first})",
                     f"{statistics.median(cold):.3f}", f"{max(cold):.3f}", str(repeats)])
        rows.append([f"recommend {example} (profile cached)", f"{statistics.median(warm):.3f}",
                     f"{max(warm):.3f}", str(repeats)])
    return rows


def _startup_table(env: dict[str, str], repeats: int, baseline: Path | None) -> str:
    """The start-up table (Markdown): each call alternately here and in ``baseline``."""
    trees = [ROOT] + ([baseline] if baseline is not None else [])
    calls = [(["advisor", *c], [*ADVISOR, *c]) for c in [*_help_calls(), *READ_ONLY]]
    calls.append((["floor: python -c 'import numpy, click, rich.console, rich.table, yaml'"],
                  FLOOR))
    envs = {tree: {**env, "PYTHONPATH": str(tree)} for tree in trees}
    for _, cmd in calls:  # prepare the home (profile cache, model, database) and the .pyc files
        for tree in trees:
            _time(cmd, envs[tree], tree)
    rows = []
    for shown, cmd in calls:
        times: dict[Path, list[float]] = {tree: [] for tree in trees}
        for _ in range(repeats):
            for tree in trees:
                times[tree].append(_time(cmd, envs[tree], tree))
        row = [" ".join(shown), f"{statistics.median(times[ROOT]):.3f}",
               f"{max(times[ROOT]):.3f}"]
        if baseline is not None:
            row.append(f"{statistics.median(times[baseline]):.3f}")
        rows.append(row + [str(repeats)])
    header = ["command", "median s", "max s"] + (["baseline median s"] if baseline else [])
    lines = ["## Start-up of every command (seconds, whole process)", "",
             "| " + " | ".join([*header, "runs"]) + " |", "|" + "---|" * (len(header) + 1)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += ["", "- cached: the scratch home holds the profile, the throughput model and the "
              "(empty) databases from one earlier run of each call"]
    if baseline is not None:
        lines.append(f"- baseline: {baseline} (git {_git_head(baseline)}), run alternately "
                     f"with this tree ({_git_head(ROOT)}), run by run")
    lines.append("- targets (not asserted): every --help under 0.15 s; read-only calls that "
                 "do not rank under 0.4 s")
    return "\n".join(lines)


def _git_head(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout whose start-up is timed alternately with this one")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="advisor-bench-"))
    env = {**os.environ, "ADVISOR_HOME": str(home)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    rows = []
    help_times = [_time([*ADVISOR, "--help"], env) for _ in range(args.repeats)]
    rows.append(["advisor --help", f"{statistics.median(help_times):.3f}", f"{max(help_times):.3f}",
                 str(args.repeats)])
    rows += _recommend_rows(env, home, args.repeats)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir()
    startup = _startup_table(env, args.repeats, args.baseline)
    shutil.rmtree(home, ignore_errors=True)
    write_table("cli", "CLI wall time (seconds, whole process)",
                ["command", "median s", "max s", "runs"], rows,
                ["targets: --help < 0.5 s; the first recommend of a built-in example < 4 s "
                 "(empty ADVISOR_HOME: shipped profiles and throughput model, python -m "
                 "advisor.throughput.shipped_artifacts); a cached recommend < 2 s"],
                appendix=startup)


if __name__ == "__main__":
    main()
