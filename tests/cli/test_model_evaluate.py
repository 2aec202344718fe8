"""advisor model evaluate: the human output when the benchmark has no prices."""

from __future__ import annotations

import json
from pathlib import Path

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
