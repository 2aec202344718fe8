"""CSV reports compared byte for byte with golden files (set ADVISOR_UPDATE_GOLDEN=1 to rewrite)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
from report_samples import sample_recommendation, sample_sweep

from reports.recommendation_csv import COLUMNS as REC_COLUMNS
from reports.recommendation_csv import write_recommendation_csv
from reports.sweep_csv import COLUMNS as SWEEP_COLUMNS
from reports.sweep_csv import write_sweep_csv

GOLDEN = Path(__file__).parents[1] / "data" / "golden"


def _check(written: Path, golden_name: str) -> None:
    golden = GOLDEN / golden_name
    if os.environ.get("ADVISOR_UPDATE_GOLDEN"):
        golden.write_bytes(written.read_bytes())
    assert written.read_bytes() == golden.read_bytes(), (
        f"{written.name} differs from {golden}; if the change is intended, rerun with "
        "ADVISOR_UPDATE_GOLDEN=1 and review the diff")


@pytest.mark.parametrize(("writer", "sample", "golden"), [
    (write_recommendation_csv, sample_recommendation, "recommendation.csv"),  # offers
    (write_sweep_csv, sample_sweep, "sweep.csv"),                             # trials
])
def test_csv_matches_golden(tmp_path: Path, writer, sample, golden: str) -> None:
    csv_path, doc = writer(sample(), tmp_path / golden)
    _check(csv_path, golden)
    _check(doc, golden.replace(".csv", ".columns.md"))


@pytest.mark.parametrize(("writer", "sample", "columns"), [
    (write_recommendation_csv, sample_recommendation, REC_COLUMNS),
    (write_sweep_csv, sample_sweep, SWEEP_COLUMNS),
])
def test_every_column_is_documented(tmp_path: Path, writer, sample, columns: list[str]) -> None:
    _, doc = writer(sample(), tmp_path / "x.csv")
    text = doc.read_text()
    assert doc.name == "x.columns.md"
    for name in columns:
        assert f"| `{name}` |" in text


def test_recommendation_csv_keeps_prices_as_used(tmp_path: Path) -> None:
    rec = sample_recommendation()
    path, _ = write_recommendation_csv(rec, tmp_path / "r.csv")
    rows = list(csv.DictReader(path.read_text().splitlines()))
    assert [r["status"] for r in rows] == ["ranked"] * 5 + ["rejected"] * 3
    assert [r["rank"] for r in rows[:5]] == ["1", "2", "3", "4", "5"]
    assert rows[0]["offer"] == rec.ranked[0].offer.key
    assert float(rows[0]["price_usd_per_hour"]) == rec.ranked[0].offer.price_usd_per_hour
    assert {r["price_observed_at"] for r in rows} == {"2025-03-01"}
    assert {r["prices_captured_at"] for r in rows} == {"2025-03-01"}
    assert rows[5]["reason"].startswith("needs 21.5 GiB")
    low, mid, high = (float(rows[0][k]) for k in ("samples_per_dollar_low",
                                                  "samples_per_dollar", "samples_per_dollar_high"))
    assert low < mid < high


def test_sweep_csv_marks_best_and_intermediate_values(tmp_path: Path) -> None:
    path, _ = write_sweep_csv(sample_sweep(), tmp_path / "s.csv")
    rows = {r["trial"]: r for r in csv.DictReader(path.read_text().splitlines())}
    assert [n for n, r in rows.items() if r["is_best"] == "true"] == ["4"]
    assert rows["2"]["value_kind"] == "last_intermediate"
    assert rows["3"]["objective_value"] == "" and rows["3"]["state"] == "fail"
    assert rows["6"]["finished_at"] == ""
    assert rows["0"]["started_at"] == "2025-03-01T09:00:00+00:00"
