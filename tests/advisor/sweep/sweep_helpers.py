"""Helpers for the sweep tests: write a sweep.yaml and a tiny objective module into a folder."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from advisor.sweep.spec import SweepSpec

OFFER = "aws:g5.xlarge:us-east-1:spot"  # the offer cloud-worker tests launch
BUCKET = "sweep-bundles"
AMI_PARAMETER = "/test/ami"  # moto reserves /aws/service/...

OBJECTIVES = textwrap.dedent('''
    """Tiny objectives for the sweep tests (imported relative to the sweep.yaml folder)."""
    import os
    import pathlib
    import time

    import optuna

    from advisor.sweep import suggest, upload_artifact

    HERE = pathlib.Path(__file__).parent


    def _save(trial, text="weights"):
        path = HERE / f"out-{os.getpid()}-{trial.number}.bin"
        path.write_text(text * (trial.number + 1))
        upload_artifact(trial, path)
        path.unlink()


    def quadratic(trial):
        """(x - 2)^2 with intermediate values; saves an artifact; prunable."""
        params = suggest(trial)
        x = params["x"]
        for step in range(5):
            trial.report((x - 2) ** 2 + (5 - step) * 0.1, step)
            if trial.should_prune():
                _save(trial)
                raise optuna.TrialPruned()
        _save(trial)
        return (x - 2) ** 2


    def plain(trial):
        """(x - 2)^2 from the YAML search space, nothing else."""
        return (suggest(trial)["x"] - 2) ** 2


    def always_fails(trial):
        """Raises on every trial, naming it."""
        raise RuntimeError(f"broken objective (trial {trial.number})")


    def raises_on_odd(trial):
        """Fails every odd trial."""
        x = trial.params["x"]
        if trial.number % 2:
            raise RuntimeError("boom on an odd trial")
        return x


    def marked(trial):
        """Writes a marker per trial number (to catch a trial run twice), sleeps a little."""
        marker = HERE / "markers" / f"{trial.number}"
        marker.parent.mkdir(exist_ok=True)
        with open(marker, "a") as handle:
            handle.write(f"{os.getpid()}\\n")
        time.sleep(float(os.environ.get("SWEEP_TEST_SLEEP_S", "0.2")))
        return trial.params["x"] ** 2


    def returns_text(trial):
        """Returns a string, not a number."""
        return "low loss"


    def returns_nan(trial):
        """Returns NaN."""
        return float("nan")


    def returns_none(trial):
        """Forgets to return."""
        trial.params


    def calls_exit(trial):
        """Calls sys.exit(3) on trial 1, returns x on the others."""
        import sys
        if trial.number == 1:
            sys.exit(3)
        return trial.params["x"]


    def ctrl_c(trial):
        """Ctrl-C (KeyboardInterrupt) during trial 2, after a little work."""
        if trial.number == 2:
            time.sleep(0.05)
            raise KeyboardInterrupt
        return trial.params["x"]


    def waits_for_ctrl_c(trial):
        """Trial 1 announces itself in started.txt, then sleeps until a signal ends it."""
        if trial.number == 1:
            (HERE / "started.txt").write_text(str(os.getpid()))
            time.sleep(60)
        return trial.params["x"]


    def sleeper(trial):
        """The first trial to claim the lock file writes its pid and sleeps a minute."""
        lock = HERE / "sleeper.lock"
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            time.sleep(0.4)
            return trial.params["x"] ** 2
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        (HERE / "sleeper.pid").write_text(str(os.getpid()))
        time.sleep(60)
        return 0.0
''')


def write_sweep(folder: Path, **fields: Any) -> Path:
    """Write objectives.py and a sweep.yaml (defaults below, overridden by ``fields``)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "objectives.py").write_text(OBJECTIVES)
    data: dict[str, Any] = {
        "study": "t",
        "entrypoint": "objectives:quadratic",
        "search_space": {"x": {"type": "float", "low": -5.0, "high": 5.0}},
        "sampler": {"type": "random", "seed": 0},
        "pruner": {"type": "none"},
        "budget": {"max_trials": 6},
        "heartbeat_s": 1,
        "storage": f"sqlite:///{folder / 'sweep.db'}",
    }
    data.update(fields)
    data = {k: v for k, v in data.items() if v is not None}
    path = folder / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def stored_time(seconds_ago: float, *, now_s: float | None = None) -> datetime:
    """``seconds_ago`` before now (or before ``now_s``, seconds since the epoch) as the
    installed Optuna writes a trial-time column (naive: local time under 4.x, UTC under 5.x),
    for tests that backdate a trial in the database."""
    from advisor.sweep.accounting.timestamps import column_value, installed_clock

    now = datetime.now(UTC) if now_s is None else datetime.fromtimestamp(now_s, UTC)
    return column_value(now - timedelta(seconds=seconds_ago), installed_clock())


def dead_worker_trial(spec: SweepSpec, *, ran_s: float, silent_s: float,
                      price_usd_per_hour: float = 3600.0, now_s: float | None = None) -> int:
    """A RUNNING trial whose worker died: started ``ran_s + silent_s`` seconds before now (or
    before ``now_s``, seconds since the epoch, for a test that reads at that moment), last
    heartbeat ``silent_s`` seconds ago by the database clock (set in the SQLite database: no
    sleeping)."""
    import sqlalchemy as sa

    from advisor.sweep.run.runner import open_study

    study = open_study(spec, price_usd_per_hour=price_usd_per_hour)
    trial = study.ask()
    storage = study._storage._backend  # type: ignore[attr-defined]  # noqa: SLF001
    storage.record_heartbeat(trial._trial_id)  # noqa: SLF001
    started = stored_time(ran_s + silent_s, now_s=now_s)
    with storage.engine.begin() as conn:
        conn.execute(sa.text("UPDATE trials SET datetime_start = :s WHERE trial_id = :t"),
                     {"s": started, "t": trial._trial_id})  # noqa: SLF001
        conn.execute(sa.text("UPDATE trial_heartbeats SET heartbeat = datetime('now', :ago) "
                             "WHERE trial_id = :t"),
                     {"ago": f"-{silent_s:.0f} seconds", "t": trial._trial_id})  # noqa: SLF001
    return int(trial.number)
