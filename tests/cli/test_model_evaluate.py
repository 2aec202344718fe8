"""advisor model evaluate: the human output when the benchmark has no prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import advisor

SPEEDS = {"T4": 1.0, "A10G": 2.5, "L4": 1.8, "A100": 6.0}


def _unpriced_bench(path: Path) -> Path:
    lines = ["workload,accelerator,throughput_samples_per_s"]
    for workload, size in {"a": 100.0, "b": 40.0, "c": 7.0}.items():
        lines += [f"{workload},{acc},{size * speed}" for acc, speed in SPEEDS.items()]
    bench = path / "bench.csv"
    bench.write_text("\n".join(lines) + "\n")
    return bench


def _evaluate(bench: Path, *extra: str) -> str:
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "2",
                                          "--repeats", "2", "--reference", "none", *extra])
    assert result.exit_code == 0, result.output
    return result.output


def test_no_prices_says_why_instead_of_nan(tmp_path: Path) -> None:
    output = _evaluate(_unpriced_bench(tmp_path))
    assert "nan" not in output
    assert "MAPE" in output
    assert "top-1 pick / mean regret: - (needs a price_usd_per_hour column" in output


def test_no_prices_is_null_in_json(tmp_path: Path) -> None:
    data = json.loads(_evaluate(_unpriced_bench(tmp_path), "--json"))
    assert data["top1_pct"] is None and data["mean_regret_pct"] is None


def _bench_with(path: Path, accelerator: str) -> Path:
    """Workload a on the four SPEEDS accelerators, then one row on ``accelerator`` (line 6)."""
    lines = ["workload,accelerator,throughput_samples_per_s"]
    lines += [f"a,{acc},{100 * speed}" for acc, speed in SPEEDS.items()]
    bench = path / "bench.csv"
    bench.write_text("\n".join([*lines, f"a,{accelerator},50"]) + "\n")
    return bench


@pytest.mark.parametrize(("accelerator", "says"), [
    # a typo: close matches, each a name the column takes; was '...P100?; use a name from
    # 'advisor pricing list' (e.g. A100-40GB-SXM, H100, T4)' after the question
    ("H1000", "column accelerator: unknown accelerator 'H1000'; did you mean H100, V100, P100?"),
    # a family where the row needs one accelerator: was "'Quadro'; did you mean Quadro, ..."
    ("Quadro", "column accelerator: accelerator 'Quadro' is a family of 2 (Quadro-RTX-6000, "
               "Quadro-RTX-8000); name one of them"),
    # nothing close: every name the column takes, and no family (a row needs one accelerator)
    ("zzz", "column accelerator: unknown accelerator 'zzz'; use one of A10, A100-40GB-PCIe,"),
    # an empty cell: was "unknown accelerator ''; did you mean A100, H100, Quadro?"
    ("", "column accelerator is empty; name the accelerator as 'advisor pricing list' does"),
])
def test_an_unknown_accelerator_is_one_line_with_the_choices(
        tmp_path: Path, accelerator: str, says: str) -> None:
    bench = _bench_with(tmp_path, accelerator)
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "1"])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {bench}:6: {says}"), result.stderr
    assert result.stderr.count("\n") == 1 and "?;" not in result.stderr
    if accelerator == "zzz":
        assert "use a family" not in result.stderr and "Quadro-RTX-6000" in result.stderr


def test_one_workload_is_predicted_from_the_shipped_reference(tmp_path: Path) -> None:
    # was a traceback: LeaveOneGroupOut needs two workloads
    bench = _bench_with(tmp_path, "L40S")
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "2",
                                          "--repeats", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 5  # each of its five accelerators, once


def test_one_workload_without_a_reference_says_what_to_add(tmp_path: Path) -> None:
    # was a traceback: scikit-learn's 'All the 1 fits failed' around the model's own error
    bench = _bench_with(tmp_path, "L40S")
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "2",
                                          "--reference", "none"])
    assert result.exit_code == 2
    assert result.stderr == ("error: workload a: no reference rows to fit the model on without "
                             "it; add rows of other workloads to the file or use --reference "
                             "shipped\n")


@pytest.mark.parametrize(("path", "says"), [
    # click's three lines ('Usage: ...', 'Try ...', "Error: Invalid value for 'BENCH_CSV'")
    ("missing.csv", "cannot read {path}: No such file or directory"),
    (".", "{path} is a directory; give the path of a CSV file in it"),
    # was read to the end: a MemoryError traceback
    ("/dev/zero", "{path} is not a regular file (a pipe, device or socket); give the path of "
                  "a CSV file"),
])
def test_a_bench_path_that_is_no_file_is_one_line(tmp_path: Path, path: str, says: str) -> None:
    if path == "/dev/zero" and not Path(path).exists():
        pytest.skip("no /dev/zero")
    given = path if path.startswith("/") else str(tmp_path / path)
    result = CliRunner().invoke(advisor, ["model", "evaluate", given, "--probes", "1"])
    assert result.exit_code == 2
    assert result.stderr == f"error: BENCH_CSV: {says.format(path=given)}\n"
