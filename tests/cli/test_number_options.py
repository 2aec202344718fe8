"""Issue 33: no number on the command line (NaN, inf, negative) switches a cap off or reaches
the code; each is refused in one line naming the option, exit code 2, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cli.probe
from cli.main import advisor

ROOT = Path(__file__).resolve().parents[2]
MLP = str(ROOT / "examples" / "mlp.yaml")
P5 = "aws:p5.48xlarge:us-east-1"


def _one_error_line(result: Result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines[:5]
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def nothing_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if a probe is started or planned."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a probe was planned or launched")

    monkeypatch.setattr(cli.probe, "_run_with_progress", refuse)
    monkeypatch.setattr(cli.probe, "_planned_offers", refuse)
    monkeypatch.setenv("ADVISOR_AWS_BUCKET", "my-bucket")


@pytest.mark.usefixtures("nothing_launches")
@pytest.mark.parametrize(("args", "option", "value"), [
    # the command: NaN passed every comparison, so the cap was off
    (["probe", MLP, "--on", P5, "--time-box", "1e6", "--max-usd", "nan"], "--max-usd", "nan"),
    # the planner launched two probes under a NaN cap
    (["probe", MLP, "--plan", "3", "--max-usd", "nan"], "--max-usd", "nan"),
    # an infinite cap is no cap
    (["probe", MLP, "--on", P5, "--max-usd", "inf"], "--max-usd", "inf"),
    # a negative cap
    (["probe", MLP, "--on", P5, "--max-usd", "-5"], "--max-usd", "-5"),
    # time box NaN, inf, negative, case-insensitive spellings
    (["probe", MLP, "--on", P5, "--time-box", "nan"], "--time-box", "nan"),
    (["probe", MLP, "--on", P5, "--time-box", "INF"], "--time-box", "INF"),
    (["probe", MLP, "--on", P5, "--time-box", "-30"], "--time-box", "-30"),
    # memory limit
    (["probe", MLP, "--on", "local", "--memory-limit-gib", "inf"], "--memory-limit-gib", "inf"),
    # the planned budget of a sweep report (was a traceback on a stored sweep)
    (["report", "sweep", "s", "--budget-usd", "nan", "--out", "r"], "--budget-usd", "nan"),
    (["report", "sweep", "s", "--budget-usd", "-inf", "--out", "r"], "--budget-usd", "-inf"),
    # a whole number: the planner's count
    (["probe", MLP, "--plan", "2.5"], "--plan", "2.5"),
    # counts that were click's four lines ('Usage: advisor sweep run ...', 'Try ...', 'Error:
    # Invalid value for ...'), the sweep's naming a hidden 'run' command the user never typed
    (["recommend", MLP, "--top", "abc"], "--top", "abc"),
    (["recommend", MLP, "--suggest-probes", "0"], "--suggest-probes", "0"),
    (["sweep", MLP, "--workers", "two"], "--workers", "two"),
    (["sweep", "cleanup", "s", "--keep-best", "-1"], "--keep-best", "-1"),
])
def test_a_number_option_out_of_range_is_one_line(args: list[str], option: str,
                                                  value: str) -> None:
    line = _one_error_line(CliRunner().invoke(advisor, args))
    assert line.startswith(f"error: {option}: "), line
    assert repr(value) in line, line


def test_a_number_that_is_not_one_is_one_line() -> None:
    line = _one_error_line(CliRunner().invoke(advisor, ["probe", MLP, "--on", P5,
                                                        "--max-usd", "lots"]))
    assert line.startswith("error: --max-usd: ") and "'lots'" in line, line


@pytest.mark.usefixtures("nothing_launches")
def test_probes_max_usd_nan_in_model_yaml_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(Path(MLP).read_text() + "probes: {max_usd: .nan}\n")
    line = _one_error_line(CliRunner().invoke(advisor, ["probe", str(spec), "--on", P5]))
    assert "probes.max_usd: must be a finite number, got nan" in line, line


@pytest.mark.parametrize(("args", "says"), [
    # a choice option: click's four lines ('Usage: ...', 'Try ...', '', "Error: Invalid value
    # for '--cloud': 'xyz' is not one of ...")
    (["pricing", "list", "--cloud", "xyz"], "error: --cloud: must be one of aws, gcp, azure, got 'xyz'"),
    (["model", "evaluate", "x.csv", "--model", "best"], "error: --model: must be one of "
     "transfer, median-ratio, nearest-ratio, got 'best'"),
    # what the command itself refuses before it runs
    (["probe", MLP], "error: give --on OFFER (repeatable) or --plan N"),
    (["probe", MLP, "--on", "local", "--allow-numerics"],
     "error: --allow-numerics applies to --tune; add --tune"),
])
def test_a_refused_choice_or_combination_is_one_line(args: list[str], says: str) -> None:
    assert _one_error_line(CliRunner().invoke(advisor, args)) == says


@pytest.mark.parametrize(("args", "starts", "command"), [
    # click's four lines: 'Usage: ...', "Try 'advisor recommend --help' for help.", '', 'Error: ...'
    (["recommend", MLP, "--fo"], "error: No such option '--fo'", "advisor recommend"),
    (["recommend"], "error: Missing argument 'MODEL_YAML'", "advisor recommend"),
    (["frobnicate"], "error: No such command 'frobnicate'", "advisor"),
    (["sweep", "status", "--bogus"], "error: No such option '--bogus'", "advisor sweep status"),
])
def test_a_usage_error_is_one_line_with_where_to_look(args: list[str], starts: str,
                                                      command: str) -> None:
    line = _one_error_line(CliRunner().invoke(advisor, args))
    assert line.startswith(starts) and line.endswith(f"(see '{command} --help')"), line
