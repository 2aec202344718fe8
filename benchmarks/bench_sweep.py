"""Sweep benchmarks: what pruning saves, and the scheduling overhead of 4 PostgreSQL workers.

Run: ``python benchmarks/bench_sweep.py``. Prints a table and writes
benchmarks/results/sweep.md.

1. Pruning (targets: at most 40%). The same 60-trial TPE sweep, with the median pruner and
   without, over a synthetic learning-curve objective (20 epochs, 10 simulated seconds each,
   loss curves that depend on lr and width plus per-trial noise), charged at $1/h on an
   injected clock so it runs in seconds. Reported: dollars the pruned sweep spent until its
   first trial within 1% of the best value the unpruned sweep found, as a share of the
   unpruned sweep's total dollars, per seed.
2. Overhead (target < 20 ms): 4 local worker processes on a private PostgreSQL server run
   200 trials of an objective that does nothing; overhead per trial = span from the first
   trial start to the last trial end x 4 workers / trials (ask, budget gate, cost attributes,
   cleanup scan, tell).
"""

from __future__ import annotations

import math
import os
import pwd
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import optuna
import yaml

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_table  # noqa: E402

from advisor.sweep import parse_sweep_spec, run_sweep, run_worker  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

EPOCHS, EPOCH_S, TRIALS = 20, 10.0, 60


class Clock:
    """Simulated seconds advanced by the objective."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _curve_objective(clock: Clock, seed: int) -> optuna.study.study.ObjectiveFuncType:
    def objective(trial: optuna.Trial) -> float:
        lr, width = trial.params["lr"], trial.params["width"]
        rng = random.Random(seed * 1000 + trial.number)
        final = 0.05 + 0.3 * (math.log10(lr) + 1.2) ** 2 + 0.1 * abs(math.log2(width) - 6) / 4
        final += rng.gauss(0, 0.01)
        rate = 0.08 + 0.25 * min(lr * 5, 1.0)
        loss = final
        for epoch in range(EPOCHS):
            clock.now += EPOCH_S
            loss = final + (2.3 - final) * math.exp(-rate * (epoch + 1)) + rng.gauss(0, 0.005)
            trial.report(loss, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return loss

    return objective


def _one_sweep(folder: Path, seed: int, pruner: str) -> optuna.Study:
    name = f"bench-{pruner}-{seed}"
    spec = parse_sweep_spec({
        "study": name, "entrypoint": "unused:objective",
        "storage": f"sqlite:///{folder / 'bench.db'}",
        "search_space": {"lr": {"type": "float", "low": 1e-4, "high": 1.0, "log": True},
                         "width": {"type": "int", "low": 8, "high": 256, "log": True}},
        "sampler": {"type": "tpe", "seed": seed, "n_startup_trials": 8},
        "pruner": {"type": pruner, "n_startup_trials": 5, "n_warmup_steps": 3}
        if pruner == "median" else "none",
        "budget": {"max_trials": TRIALS}, "price_usd_per_hour": 1.0,
    })
    clock = Clock()
    run_worker(spec, clock=clock, objective=_curve_objective(clock, seed))
    return optuna.load_study(study_name=name, storage=spec.storage)


def _cost(t: optuna.trial.FrozenTrial) -> float:
    return float(t.user_attrs["advisor:cost_usd"])


def _cost_to_reach(study: optuna.Study, target: float) -> float | None:
    spent = 0.0
    for t in sorted(study.trials, key=lambda t: t.number):
        spent += _cost(t)
        if t.state is optuna.trial.TrialState.COMPLETE and t.value is not None \
                and t.value <= target:
            return spent
    return None


def pruning_rows(folder: Path, seeds: range) -> list[list[str]]:
    """One row per seed: unpruned total and best, pruned cost to reach, share."""
    rows = []
    for seed in seeds:
        full = _one_sweep(folder, seed, "none")
        pruned = _one_sweep(folder, seed, "median")
        target = full.best_value * 1.01
        full_total = sum(_cost(t) for t in full.trials)
        reach = _cost_to_reach(pruned, target)
        share = f"{100 * reach / full_total:.0f}%" if reach is not None else "not reached"
        n_pruned = sum(t.state is optuna.trial.TrialState.PRUNED for t in pruned.trials)
        rows.append([
            f"pruning, seed {seed}", f"${full_total:.3f} (best {full.best_value:.4f})",
            f"${sum(_cost(t) for t in pruned.trials):.3f} ({n_pruned} pruned, "
            f"best {pruned.best_value:.4f})",
            f"${reach:.3f}" if reach is not None else "-", share])
    return rows


def _start_postgres(tmp: str) -> tuple[str, list[str], str]:
    bin_dir = os.path.dirname(sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))[-1])
    run_as: list[str] = []
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        os.chown(tmp, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    data = f"{tmp}/data"
    subprocess.run([*run_as, f"{bin_dir}/initdb", "-D", data, "-U", "advisor", "--auth=trust",
                    "--no-sync"], check=True, capture_output=True)
    subprocess.run([*run_as, f"{bin_dir}/pg_ctl", "-D", data, "-l", f"{tmp}/log", "-o",
                    f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1", "-w", "start"],
                   check=True, capture_output=True)
    subprocess.run([*run_as, f"{bin_dir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U",
                    "advisor", "bench"], check=True, capture_output=True)
    stop = [*run_as, f"{bin_dir}/pg_ctl", "-D", data, "-m", "immediate", "stop"]
    return f"postgresql+psycopg2://advisor@127.0.0.1:{port}/bench", stop, data


def overhead_row(folder: Path, trials: int = 200, workers: int = 4) -> list[str]:
    """Scheduling overhead per trial with ``workers`` processes on PostgreSQL."""
    tmp = tempfile.mkdtemp(prefix="advisor-bench-pg-")
    url, stop, _ = _start_postgres(tmp)
    try:
        (folder / "noop.py").write_text(textwrap.dedent('''
            def objective(trial):
                return trial.params["x"] ** 2
        '''))
        (folder / "sweep.yaml").write_text(yaml.safe_dump({
            "study": "overhead", "entrypoint": "noop:objective", "storage": url,
            "search_space": {"x": {"type": "float", "low": -1.0, "high": 1.0}},
            "sampler": {"type": "random", "seed": 0}, "pruner": "none",
            "budget": {"max_trials": trials}, "price_usd_per_hour": 1.0}))
        run_sweep(folder / "sweep.yaml", workers=workers, poll_s=0.5)
        study = optuna.load_study(study_name="overhead", storage=url)
        done = [t for t in study.trials if t.datetime_complete is not None]
        start = min(t.datetime_start for t in done if t.datetime_start is not None)
        end = max(t.datetime_complete for t in done if t.datetime_complete is not None)
        per_trial_ms = (end - start).total_seconds() * workers / len(done) * 1000
    finally:
        subprocess.run(stop, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    return [f"overhead, {workers} workers, PostgreSQL", f"{len(done)} no-op trials",
            f"{(end - start).total_seconds():.2f} s span", f"{per_trial_ms:.1f} ms/trial",
            "target < 20 ms"]


def main() -> None:
    """Run both benchmarks and write the table."""
    os.environ.setdefault("ADVISOR_HOME", tempfile.mkdtemp(prefix="advisor-bench-home-"))
    folder = Path(tempfile.mkdtemp(prefix="advisor-bench-sweep-"))
    try:
        rows = pruning_rows(folder, range(3))
        rows.append(overhead_row(folder))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    write_table(
        "sweep", "advisor sweep: pruning savings and scheduling overhead",
        ["case", "without pruning", "with median pruning", "$ to within 1% of best",
         "share of unpruned $ (target <= 40%)"], rows,
        notes=[f"Pruning rows: {TRIALS} TPE trials, {EPOCHS} epochs x {EPOCH_S:g} simulated s, "
               "$1/h, synthetic learning curves (see the module docstring).",
               "Overhead row: span x workers / trials, objective does nothing; columns reuse "
               "the header loosely (trials, span, per-trial overhead, target).",
               f"{os.cpu_count()} CPUs shared with other jobs while measured."])



if __name__ == "__main__":
    main()
