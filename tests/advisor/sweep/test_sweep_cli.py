"""``advisor sweep``: run, status, cleanup and the one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from sweep_helpers import write_sweep

from advisor.formatting import fmt_bytes
from cli.main import advisor

REPO = Path(__file__).resolve().parents[3]


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(advisor, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_run_then_status_then_cleanup(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, artifacts="arts", budget={"max_trials": 4},
                       price_usd_per_hour=36.0, cleanup={"keep_best": 1, "states": ["completed"]})
    storage = f"sqlite:///{tmp_path / 'sweep.db'}"
    code, out, err = _invoke("sweep", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["trials_by_state"] == {"complete": 4}
    code, out, _ = _invoke("sweep", "status", "t", "--storage", storage, "--json")
    status = json.loads(out)
    assert code == 0 and status["spent_usd"] > 0 and status["bytes_cleaned"] > 0
    assert len(list((tmp_path / "arts").iterdir())) == 1  # only the best trial's artifact
    code, out, _ = _invoke("sweep", "status", "t", "--storage", storage)
    assert code == 0 and "complete" in out and "saved by pruning" in out
    # sizes read as the sweep report's page writes them (fmt_bytes), not as a raw byte count
    assert f"artifacts cleaned: {fmt_bytes(status['bytes_cleaned'])}" in " ".join(out.split())
    code, out, _ = _invoke("sweep", "cleanup", "t", "--storage", storage, "--keep-best", "0",
                           "--dry-run")
    assert code == 0 and "would delete 1 artifacts, " in out and out.rstrip().endswith("B")
    assert len(list((tmp_path / "arts").iterdir())) == 1


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
def test_cleanup_of_a_missing_artifact_folder_is_one_line(tmp_path: Path,
                                                         dry_run: list[str]) -> None:
    # it listed the study's artifacts as deleted from a folder that does not exist, and
    # created that folder, even in a dry run
    path = write_sweep(tmp_path, artifacts="arts", budget={"max_trials": 2})
    storage = f"sqlite:///{tmp_path / 'sweep.db'}"
    assert _invoke("sweep", str(path), "--json")[0] == 0
    kept = sorted((tmp_path / "arts").iterdir())
    missing = tmp_path / "elsewhere"
    code, out, err = _invoke("sweep", "cleanup", "t", "--storage", storage, "--artifacts",
                             str(missing), "--keep-best", "0", *dry_run)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert f"artifacts: {missing} is not a folder" in err and not missing.exists()
    assert kept and sorted((tmp_path / "arts").iterdir()) == kept  # the real ones untouched


@pytest.mark.parametrize(("args", "words"), [
    # several workers on SQLite
    (["--workers", "2"], "needs a PostgreSQL storage URL"),
    # cloud workers need a database the instances can reach
    (["--launch"], "--launch: cloud workers need a PostgreSQL storage"),
])
def test_run_errors_are_one_line(tmp_path: Path, args: list[str], words: str) -> None:
    path = write_sweep(tmp_path)
    code, _, err = _invoke("sweep", str(path), *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_bad_sweep_yaml_names_the_field(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, budget={"max_usd": -3})
    code, _, err = _invoke("sweep", str(path))
    assert code == 2 and "budget.max_usd: must be greater than 0" in err


def test_unknown_study_lists_the_known_ones() -> None:
    code, _, err = _invoke("sweep", "status", "missing")
    assert code == 2 and "study 'missing' not found" in err


@pytest.mark.slow
def test_digits_example_end_to_end(tmp_path: Path) -> None:
    folder = tmp_path / "sweep_digits"
    shutil.copytree(REPO / "examples" / "sweep_digits", folder,
                    ignore=shutil.ignore_patterns("artifacts"))
    yaml_path = folder / "sweep.yaml"
    # a cap that the trial count reaches first, whatever the load on this machine; 8 trials:
    # seeded TPE and torch prune trials 4 and 6 (the median pruner starts after 4), and
    # keep_best 3 leaves 5 artifacts to clean
    text = yaml_path.read_text()
    assert "max_trials: 60" in text and "max_usd: 0.003" in text
    text = text.replace("max_trials: 60", "max_trials: 8")
    yaml_path.write_text(text.replace("max_usd: 0.003", "max_usd: 0.01"))
    code, out, err = _invoke("sweep", str(yaml_path), "--json")
    assert code == 0, err
    status = json.loads(out)
    assert status["trials_by_state"].get("pruned", 0) >= 1
    assert status["spent_usd"] <= 0.01 + max(status["usd_by_state"].values())
    left = list((folder / "artifacts").iterdir())
    assert 1 <= len(left) <= 3 and status["bytes_cleaned"] > 0


def test_help_teaches_the_run_options() -> None:
    code, out, _ = _invoke("sweep", "--help")
    assert code == 0
    for option in ("--workers", "--launch", "--json", "--storage"):
        assert f"\n  {option} " in out  # listed with its help, not only in an example
    assert "advisor sweep sweep.yaml --workers 4 --storage postgresql://" in out


def test_bad_workers_fail_before_any_output(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 7})
    code, out, err = _invoke("sweep", str(path), "--workers", "0")
    assert (code, out) == (2, "")
    assert err == "error: --workers: must be a whole number greater than 0 and at most 1e+18, got '0'\n"


def test_progress_goes_to_stderr_and_the_table_to_stdout(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 2})
    code, out, err = _invoke("sweep", str(path))
    assert code == 0, err
    assert "| pruned 0 | failed 0" in err and "| pruned" not in out
    assert "complete" in out and "stopped: max_trials reached" in out


def _ran(tmp_path: Path) -> str:
    path = write_sweep(tmp_path, entrypoint="objectives:plain", budget={"max_trials": 1})
    assert _invoke("sweep", str(path), "--json")[0] == 0
    return f"sqlite:///{tmp_path / 'sweep.db'}"


@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_status_report_creates_missing_folders(tmp_path: Path, option: str) -> None:
    storage = _ran(tmp_path)
    target = tmp_path / "no" / "such" / "folder" / "t"
    code, _, err = _invoke("sweep", "status", "t", "--storage", storage, option, str(target))
    assert code == 0, err
    assert target.is_file()


@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_status_report_under_a_file_is_one_line(tmp_path: Path, option: str) -> None:
    storage = _ran(tmp_path)
    blocker = tmp_path / "sweep.yaml"
    code, _, err = _invoke("sweep", "status", "t", "--storage", storage, option,
                           str(blocker / "t.out"))
    assert code == 2 and err.startswith(f"error: {option}: ") and "is a file" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(("url", "words"), [
    # not a URL at all (was sqlalchemy's ArgumentError)
    ("notaurl", "--storage: 'notaurl' is not a database URL; write sqlite:///"),
    # a SQLite file in a folder that does not exist (was OperationalError)
    ("sqlite:///{tmp}/none/x.db", "--storage: the folder {tmp}/none of the SQLite file"),
    # a database kind SQLAlchemy does not know
    ("mysqlx://h/db", "--storage: unknown database kind 'mysqlx'"),
])
def test_status_with_a_bad_storage_is_one_line(tmp_path: Path, url: str, words: str) -> None:
    code, out, err = _invoke("sweep", "status", "t1", "--storage", url.format(tmp=tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("error: " + words.format(tmp=tmp_path))
    assert len(err.strip().splitlines()) == 1


def test_bad_storage_in_sweep_yaml_names_the_field(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, storage="notaurl")
    code, out, err = _invoke("sweep", str(path))
    assert code == 2 and out == ""
    assert err.startswith("error: storage (sweep.yaml): 'notaurl' is not a database URL")
    assert len(err.strip().splitlines()) == 1


def test_syntax_error_in_the_entrypoint_is_one_line(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="syn:objective")
    (tmp_path / "syn.py").write_text("def objective(trial:\n    return 1\n")
    code, out, err = _invoke("sweep", str(path))
    assert code == 2 and out == ""
    assert "importing 'syn' failed: SyntaxError: " in err and "(syn.py, line 1)" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("budget", [{}, None])  # empty, and no budget at all
def test_sweep_without_a_cap_is_refused(tmp_path: Path, budget: dict[str, int] | None) -> None:
    path = write_sweep(tmp_path, budget=budget)
    code, out, err = _invoke("sweep", str(path))
    assert code == 2 and out == ""
    assert "budget: set at least one of max_usd, max_trials or max_hours" in err
    assert len(err.strip().splitlines()) == 1


def test_sweep_where_every_trial_fails_exits_1_and_keeps_the_study(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:always_fails", budget={"max_trials": 50})
    code, out, err = _invoke("sweep", str(path), "--json")
    assert code == 1
    status = json.loads(out)
    assert status["trials_by_state"] == {"fail": 5}  # stopped by 5 failures in a row
    assert status["last_error"] == "RuntimeError: broken objective (trial 4)"
    assert err.strip().splitlines()[-1] == (
        "error: every trial failed (5); last error: RuntimeError: broken objective (trial 4); "
        "fix the objective, then run the sweep again to resume it")
    code, out, _ = _invoke("sweep", "status", "t", "--storage",
                           f"sqlite:///{tmp_path / 'sweep.db'}", "--json")
    assert code == 0 and json.loads(out)["trials_by_state"] == {"fail": 5}


def test_worker_whose_trials_keep_failing_exits_1(tmp_path: Path) -> None:
    path = write_sweep(tmp_path, entrypoint="objectives:always_fails",
                       budget={"max_trials": 50, "max_consecutive_failures": 2})
    code, out, err = _invoke("sweep", "worker", str(path))
    assert code == 1 and "worker done: 2 trials" in out
    assert err.strip().splitlines()[-1].startswith("error: worker stopped: 2 trials failed in a row")
