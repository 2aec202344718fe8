"""The CSV reports carry every figure the headline shows, say truthfully what orders them and
write every number as a plain decimal (issue 33)."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import pytest
from report_samples import G4, NC, mlp_ranking, sample_recommendation, sample_sweep

from advisor.ranking import recommendation_to_dict
from advisor.ranking.offers import Rejection, RejectionKind
from advisor.throughput import Basis
from reports.columns import csv_cell
from reports.recommendation_csv import COLUMN_DOCS, write_recommendation_csv
from reports.sweep_csv import write_sweep_csv


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_ranked_rows_carry_the_headline_range(tmp_path: Path) -> None:
    rec = sample_recommendation()
    path, _ = write_recommendation_csv(rec, tmp_path / "r.csv")
    for row, est in zip(_rows(path), rec.ranked, strict=False):
        cost = [float(row[k]) for k in ("run_cost_usd_low", "run_cost_usd", "run_cost_usd_high")]
        hours = [float(row[k]) for k in ("run_hours_low", "run_hours", "run_hours_high")]
        assert cost == pytest.approx([est.run_cost_usd_low, est.run_cost_usd,
                                      est.run_cost_usd_high], abs=1e-6)
        assert cost == sorted(cost) and hours == sorted(hours)
        assert hours[0] * est.offer.price_usd_per_hour == pytest.approx(cost[0], rel=1e-6)


def test_rank_is_documented_by_what_orders_it(tmp_path: Path) -> None:
    rank_doc = next(c.meaning for c in COLUMN_DOCS if c.name == "rank")
    assert "most samples per dollar" not in rank_doc
    assert "samples_per_dollar_low" in rank_doc and "rank_by" in rank_doc
    path, _ = write_recommendation_csv(sample_recommendation(), tmp_path / "r.csv")
    assert {r["rank_by"] for r in _rows(path) if r["status"] == "ranked"} == {"conservative"}


def test_every_basis_a_row_can_carry_is_documented() -> None:
    # the ranking writes 'tuned' (recommend --tuned) but the column's doc named only three
    basis_doc = next(c.meaning for c in COLUMN_DOCS if c.name == "basis")
    for basis in Basis:
        assert f"`{basis}`" in basis_doc, basis


def test_rejected_rows_carry_the_figures_their_reason_quotes(tmp_path: Path) -> None:
    rec = sample_recommendation()
    rec = replace(rec, rejected=(
        Rejection(G4, RejectionKind.DEADLINE, {"run_hours": 81.25, "deadline_hours": 72,
                                               "spot": ""}),
        Rejection(NC, RejectionKind.BUDGET, {"run_cost_usd": 3512.5, "budget_usd": 3000,
                                             "spot": ""}),
    ))
    path, _ = write_recommendation_csv(rec, tmp_path / "r.csv")
    deadline, budget = _rows(path)[-2:]
    assert "81.2 h" in deadline["reason"] and deadline["run_hours"] == "81.25"
    assert "$3,512.50" in budget["reason"] and budget["run_cost_usd"] == "3512.5"
    assert budget["run_hours"] == "" and deadline["run_cost_usd"] == ""


@pytest.mark.parametrize(("value", "text"), [
    (9.477e-05, "0.00009477"),  # the sweep.csv cost the issue quotes
    (1e-10, "0.0000000001"),     # far below a cent
    (0.1 + 0.2, "0.30000000000000004"),  # the shortest repr, never rounded by the formatter
    (1.5e16, "15000000000000000"),  # large: no exponent either
    (17500.0, "17500.0"),
    (-2.5e-07, "-0.00000025"),
    (3, "3"),                    # ints and strings pass through
    ("spot", "spot"),
    (None, ""),
    (math.inf, ""),              # not a number a spreadsheet reads: empty (not applicable)
    (math.nan, ""),
])
def test_csv_cell_is_a_plain_decimal(value: object, text: str) -> None:
    assert csv_cell(value) == text


def test_sweep_csv_writes_small_costs_without_an_exponent(tmp_path: Path) -> None:
    data = sample_sweep()
    tiny = replace(data.trials[3], cost_usd=9.477e-05)
    data = replace(data, trials=(*data.trials[:3], tiny, *data.trials[4:]))
    path, _ = write_sweep_csv(data, tmp_path / "s.csv")
    text = path.read_text()
    assert "e-0" not in text and "E-0" not in text
    assert {r["trial"]: r for r in _rows(path)}["3"]["cost_usd"] == "0.00009477"


def test_csv_rows_carry_the_spot_band_and_rejection_kind_json_does(tmp_path: Path) -> None:
    # the table shows 'spot >20%?' and --json each row's band and reason_kind; the CSV had
    # neither, so a spreadsheet could only parse reasons back
    rec = mlp_ranking(clouds=["aws", "gcp"], budget_usd=0.06)
    doc = recommendation_to_dict(rec)
    path, columns = write_recommendation_csv(rec, tmp_path / "r.csv")
    rows = {row["offer"]: row for row in _rows(path)}
    for item in doc["ranked"]:
        row = rows[item["offer"]]
        assert row["spot_interruption_band"] == (item.get("spot_interruption_band") or "")
        assert row["spot_band_basis"] == (item.get("spot_band_basis") or "")
    spot = [r for r in rows.values() if r["market"] == "spot" and r["status"] == "ranked"]
    assert spot and all(r["spot_interruption_band"] and r["spot_band_basis"] for r in spot)
    kinds = {item["offer"]: item["reason_kind"] for item in doc["rejected"]}
    assert {o: rows[o]["reason_kind"] for o in kinds} == kinds
    assert {"cloud", "budget"} <= set(kinds.values())
    text = columns.read_text()
    assert "`spot_interruption_band`" in text and "`reason_kind`" in text
