"""advisor model evaluate: the protocol on synthetic data, and bad BENCH.csv files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from advisor.errors import AdvisorError
from advisor.throughput.baseline import MedianRatioModel
from advisor.throughput.evaluation import evaluate, read_bench
from advisor.throughput.transfer import TransferModel
from cli.main import advisor
from pricing import load_accelerators

ACCELERATORS = {"T4": 1.0, "A10G": 2.5, "L4": 1.8, "A100": 6.0, "H100": 14.0}
PRICES = {"T4": 0.8, "A10G": 1.4, "L4": 1.0, "A100": 3.7, "H100": 12.0}


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _multiplicative_bench(path: Path) -> Path:
    lines = ["workload,accelerator,throughput_samples_per_s,price_usd_per_hour"]
    for w, size in {"a": 100.0, "b": 40.0, "c": 7.0, "d": 300.0}.items():
        lines += [f"{w},{acc},{size * speed},{PRICES[acc]}" for acc, speed in ACCELERATORS.items()]
    return _write(path / "bench.csv", "\n".join(lines) + "\n")


def test_exact_ratios_are_predicted_exactly(tmp_path: Path) -> None:
    bench = _multiplicative_bench(tmp_path)
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "2",
                                          "--repeats", "3", "--reference", "none", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data) == {"n", "mape", "median_ape", "top1_pct", "mean_regret_pct",
                         "coverage_pct"}
    assert data["n"] == 4 * 5 * 3
    assert data["mape"] < 1.0
    assert data["mean_regret_pct"] < 0.5 and data["top1_pct"] > 99


def test_unseen_target_still_predicts_every_row(tmp_path: Path) -> None:
    bench = _multiplicative_bench(tmp_path)
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "-k", "2", "-r", "2",
                                          "--reference", "none", "--unseen-target", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["n"] == 4 * 5 * 2


def _odd_bench(tmp_path: Path) -> Path:
    """The multiplicative bench, except that workload d runs 2x faster on H100."""
    bench = _multiplicative_bench(tmp_path)
    lines = bench.read_text().splitlines()
    odd = next(i for i, line in enumerate(lines) if line.startswith("d,H100,"))
    w, acc, sps, price = lines[odd].split(",")
    lines[odd] = f"{w},{acc},{2 * float(sps)},{price}"
    return _write(bench, "\n".join(lines) + "\n")


def test_by_accelerator_names_where_the_model_misses(tmp_path: Path) -> None:
    bench = str(_odd_bench(tmp_path))
    args = ["model", "evaluate", bench, "-k", "2", "-r", "3", "--reference", "none"]
    plain = CliRunner().invoke(advisor, [*args, "--json"])
    assert "by_accelerator" not in json.loads(plain.output)
    result = CliRunner().invoke(advisor, [*args, "--by-accelerator", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    rows = data["by_accelerator"]
    assert rows[0]["accelerator"] == "H100-SXM"  # the odd cell's target, worst first
    assert [r["mape"] for r in rows] == sorted((r["mape"] for r in rows), reverse=True)
    assert sum(r["n"] for r in rows) == data["n"] == 4 * 5 * 3
    # the overall MAPE is the predictions-weighted mean of the per-target ones
    assert sum(r["mape"] * r["n"] for r in rows) / data["n"] == pytest.approx(data["mape"])
    table = CliRunner().invoke(advisor, [*args, "--by-accelerator"], terminal_width=120)
    assert table.exit_code == 0, table.output
    assert "per target accelerator, worst MAPE first" in table.output
    assert table.output.index("H100-SXM") < table.output.index("A10G")


def test_predictions_are_paired_across_models(tmp_path: Path) -> None:
    """``predictions`` has one entry per prediction, averaging to the MAPE, in an order that
    depends on the seed only: two models' lists compare prediction by prediction."""
    specs = load_accelerators()
    rows = read_bench(_odd_bench(tmp_path), specs)
    # predictions run by sorted workload, sorted target, then repeat: (d, H100) is 3 * 5 + 2
    odd_slots = {3 * (3 * 5 + 2) + r for r in range(3)}
    slots = []
    for factory in (TransferModel, MedianRatioModel):
        result = evaluate(rows, accelerators=specs, model_factory=factory, probes=2, repeats=3,
                          reference=())
        errors = [p.ape for p in result.predictions]
        assert len(errors) == result.n == 4 * 5 * 3
        assert 100 * sum(errors) / len(errors) == pytest.approx(result.mape)
        assert 100 * sum(p.inside for p in result.predictions) / result.n == pytest.approx(
            result.coverage_pct)
        largest = sorted(range(len(errors)), key=errors.__getitem__)[-3:]
        assert set(largest) == odd_slots, factory
        slots.append([(p.workload, p.target) for p in result.predictions])
    assert slots[0] == slots[1]


@pytest.mark.parametrize(("text", "expected"), [
    # the throughput column is missing
    ("workload,accelerator,samples\nA,T4,3\n", "missing column throughput_samples_per_s"),
    # a non-positive throughput, named with its line
    ("workload,accelerator,throughput_samples_per_s\nA,T4,0\n", ":2: column throughput_samples"),
    # an accelerator the catalog does not know
    ("workload,accelerator,throughput_samples_per_s\nA,Voodoo5,3\n", "column accelerator"),
    # a negative price
    ("workload,accelerator,throughput_samples_per_s,price_usd_per_hour\nA,T4,3,-1\n",
     "column price_usd_per_hour"),
])
def test_bad_bench_is_one_line_and_exit_2(tmp_path: Path, text: str, expected: str) -> None:
    bench = _write(tmp_path / "bad.csv", text)
    with pytest.raises(AdvisorError, match=expected.replace("(", r"\(")):
        read_bench(bench, load_accelerators())
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "1"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and result.output.startswith("error:")


def test_aliases_resolve_to_catalog_names(tmp_path: Path) -> None:
    bench = _write(tmp_path / "b.csv", "workload,accelerator,throughput_samples_per_s\n"
                                       "A,V100,3\nA,h100,9\n")
    assert [r.accelerator for r in read_bench(bench, load_accelerators())] == [
        "V100-16GB-SXM2", "H100-SXM"]


def test_too_few_accelerators_for_k_probes(tmp_path: Path) -> None:
    bench = _multiplicative_bench(tmp_path)
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(bench), "--probes", "5",
                                          "--reference", "none"])
    assert result.exit_code == 2
    assert "lower --probes" in result.output


def test_the_shipped_sample_bench_is_valid_and_evaluates() -> None:
    sample = Path(__file__).resolve().parents[2] / "examples" / "bench_sample.csv"
    rows = read_bench(sample, load_accelerators())
    assert len({r.workload for r in rows}) >= 5 and len({r.accelerator for r in rows}) >= 5
    result = CliRunner().invoke(advisor, ["model", "evaluate", str(sample), "--probes", "3",
                                          "--repeats", "2", "--json"])
    assert result.exit_code == 0, result.stderr
    assert 0 < json.loads(result.stdout)["mape"] < 50
