"""What a killed trial is charged against how long it ran: a real sweep, its worker kill -9'd.

Run: ``python benchmarks/bench_sweep_charges.py`` (writes benchmarks/results/sweep_charges.md).
Each case starts ``advisor sweep sweep.yaml`` (SQLite, ``heartbeat_s: 2``, $1 per second) on
an objective that sleeps, kills the worker with SIGKILL after the given time, then runs
``advisor sweep status`` until the trial is failed by heartbeat. Run time is from the trial's
start (Optuna's ``datetime_start``) to the kill; the charge is the trial's ``advisor:wall_s``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import optuna
import yaml

from advisor.sweep.accounting.records import FOUND_DEAD_ATTR, WALL_ATTR

sys.path.insert(0, str(Path(__file__).parent))
from _table import write_table  # noqa: E402

HEARTBEAT_S = 2
KILL_AFTER_S = (3.17, 7.17, 12.6)

OBJECTIVE = textwrap.dedent('''
    import os, pathlib, time

    def sleeper(trial):
        (pathlib.Path(__file__).parent / "worker.pid").write_text(str(os.getpid()))
        time.sleep(600)
        return 0.0
''')


def _case(folder: Path, kill_after_s: float) -> tuple[float, float, float]:
    """(run time, charge, seconds from the kill until status found it dead)."""
    folder.mkdir()
    (folder / "objectives.py").write_text(OBJECTIVE)
    url = f"sqlite:///{folder / 'sweep.db'}"
    (folder / "sweep.yaml").write_text(yaml.safe_dump({
        "study": "kill", "entrypoint": "objectives:sleeper", "storage": url,
        "search_space": {"x": {"type": "float", "low": 0.0, "high": 1.0}},
        "sampler": {"type": "random", "seed": 0}, "pruner": {"type": "none"},
        "price_usd_per_hour": 3600.0, "budget": {"max_trials": 1}, "heartbeat_s": HEARTBEAT_S,
    }))
    env = {**os.environ, "ADVISOR_HOME": str(folder / "home")}
    worker = subprocess.Popen(["advisor", "sweep", "sweep.yaml"], cwd=folder, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid_file = folder / "worker.pid"
    while not pid_file.exists():
        time.sleep(0.01)
    study = optuna.load_study(study_name="kill", storage=url)
    started = study.trials[0].datetime_start
    assert started is not None
    time.sleep(max(started.timestamp() + kill_after_s - time.time(), 0.0))
    os.kill(int(pid_file.read_text()), signal.SIGKILL)
    killed_at = time.time()
    worker.wait()
    while True:
        subprocess.run(["advisor", "sweep", "status", "kill", "--storage", url], env=env,
                       capture_output=True, check=True)
        trial = optuna.load_study(study_name="kill", storage=url).trials[0]
        if trial.state is optuna.trial.TrialState.FAIL:
            break
        time.sleep(0.5)
    ran = killed_at - started.timestamp()
    found = float(trial.user_attrs[FOUND_DEAD_ATTR]) - killed_at
    return ran, float(trial.user_attrs[WALL_ATTR]), found


def main() -> None:
    """Run the cases and write the table."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, after in enumerate(KILL_AFTER_S):
            ran, charged, found = _case(Path(tmp) / f"case{i}", after)
            rows.append([f"{after:g}", f"{ran:.2f}", f"{charged:.2f}", f"{charged - ran:+.2f}",
                         f"{found:.2f}"])
    write_table("sweep_charges", "Killed trials: run time vs charge (heartbeat_s: 2)",
                ["kill after (s)", "ran (s)", "charged (s)", "charged - ran (s)",
                 "found dead after kill (s)"], rows,
                notes=["charged = from the trial's start until `advisor sweep status` found it "
                       "dead (later than its last heartbeat + 2 s); before the fix a trial "
                       "killed after 7.17 s was charged 5.37 s (its last heartbeat, whole "
                       "seconds)",
                       "status polled every 0.5 s after the kill; the grace period is 4 s"])


if __name__ == "__main__":
    main()
