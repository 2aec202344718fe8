"""``advisor sweep``: run, status, cleanup and the one-line errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from sweep_helpers import write_sweep

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
    code, out, _ = _invoke("sweep", "cleanup", "t", "--storage", storage, "--keep-best", "0",
                           "--dry-run")
    assert code == 0 and "would delete 1 artifacts" in out
    assert len(list((tmp_path / "arts").iterdir())) == 1


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
    # a cap that the trial count reaches first, whatever the load on this machine
    text = yaml_path.read_text().replace("max_trials: 60", "max_trials: 14")
    yaml_path.write_text(text.replace("max_usd: 0.0015", "max_usd: 0.01"))
    code, out, err = _invoke("sweep", str(yaml_path), "--json")
    assert code == 0, err
    status = json.loads(out)
    assert status["trials_by_state"].get("pruned", 0) >= 1
    assert status["spent_usd"] <= 0.01 + max(status["usd_by_state"].values())
    left = list((folder / "artifacts").iterdir())
    assert 1 <= len(left) <= 3 and status["bytes_cleaned"] > 0
