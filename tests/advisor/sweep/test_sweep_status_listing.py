"""``advisor sweep status`` with no name lists the stored studies; sweep output is as wide as
``$COLUMNS`` (else 140) when piped, as the README promises (issue 33)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from optuna.trial import TrialState
from sweep_helpers import write_sweep

from advisor.sweep.accounting.records import COST_ATTR, PRICE_ATTR
from cli.main import advisor

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _invoke(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(advisor, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _trial(state: TrialState, cost: float) -> optuna.trial.FrozenTrial:
    return optuna.trial.create_trial(
        state=state, value=1.0 if state is TrialState.COMPLETE else None,
        user_attrs={COST_ATTR: cost}, params={"x": 1.0},
        distributions={"x": optuna.distributions.FloatDistribution(0, 2)})


def _two_studies(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'sweeps.db'}"
    lr = optuna.create_study(study_name="resnet-lr", storage=url)
    lr.set_user_attr(PRICE_ATTR, 1.0)
    lr.add_trials([_trial(TrialState.COMPLETE, 2.5), _trial(TrialState.PRUNED, 0.5),
                   _trial(TrialState.FAIL, 0.25)])
    wd = optuna.create_study(study_name="bert-wd", storage=url, direction="maximize")
    wd.add_trials([_trial(TrialState.COMPLETE, 0.0213)])
    return url


def test_status_without_a_name_lists_the_studies_as_json(tmp_path: Path) -> None:
    code, out, err = _invoke("sweep", "status", "--storage", _two_studies(tmp_path), "--json")
    assert code == 0, err
    rows = {row["study"]: row for row in json.loads(out)}
    assert set(rows) == {"resnet-lr", "bert-wd"}
    assert rows["resnet-lr"]["trials"] == 3 and rows["resnet-lr"]["spent_usd"] == 3.25
    assert rows["bert-wd"]["direction"] == "maximize" and rows["bert-wd"]["trials"] == 1


def test_status_without_a_name_lists_the_studies_as_a_table(tmp_path: Path) -> None:
    code, out, err = _invoke("sweep", "status", "--storage", _two_studies(tmp_path))
    assert code == 0, err
    lines = out.splitlines()
    lr = next(line for line in lines if "resnet-lr" in line)
    assert " 3 " in lr and "$3.25" in lr
    assert "$0.0213" in next(line for line in lines if "bert-wd" in line)
    assert "advisor sweep status STUDY" in out  # what to run next


def test_status_of_an_empty_storage_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    code, out, err = _invoke("sweep", "status", "--storage", url)
    assert code == 0, err
    assert "no studies" in out
    code, out, _ = _invoke("sweep", "status", "--storage", url, "--json")
    assert code == 0 and json.loads(out) == []


LONG = "a-study-name-long-enough-that-the-first-status-line-is-past-eighty-columns"


@pytest.mark.parametrize(("columns", "width"), [
    (None, 140),   # no $COLUMNS: the README's default for pipes
    ("200", 200),  # $COLUMNS honoured
])
def test_sweep_output_is_as_wide_as_columns(tmp_path: Path, columns: str | None,
                                            width: int) -> None:
    path = write_sweep(tmp_path, study=LONG + "-" * (width - 130), budget={"max_trials": 1},
                       entrypoint="objectives:plain", price_usd_per_hour=1.5)
    code, out, err = _invoke("sweep", str(path), env={"COLUMNS": columns})
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith("sweep a-study") and first.endswith("(local)")  # one line, not cut
    assert 80 < len(first) <= width
    storage = f"sqlite:///{tmp_path / 'sweep.db'}"
    code, out, _ = _invoke("sweep", "status", LONG + "-" * (width - 130), "--storage", storage,
                           env={"COLUMNS": columns})
    assert code == 0 and out.splitlines()[0] == first


@pytest.mark.parametrize("args", [
    ["sweep", "status"],
    ["sweep", "status", "--json"],
    ["sweep", "status", "resnet-lr"],
    ["report", "sweep", "resnet-lr", "--out", "{tmp}/review"],
])
def test_reading_a_storage_not_made_yet_creates_none(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "sweeps.db"
    code, out, err = _invoke(*[a.replace("{tmp}", str(tmp_path)) for a in args],
                             "--storage", f"sqlite:///{db}")
    assert not db.exists()  # a reader opened nothing that would create it
    if "resnet-lr" in args:
        assert code == 2 and "study 'resnet-lr' not found" in err and "known: none" in err
    else:
        assert code == 0, err
        assert "no studies" in out or json.loads(out) == []
