"""``advisor pricing list|refresh|status`` through click's CliRunner, offline."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import pricing.sources.aws as aws_module
from cli.main import advisor
from pricing import Cloud, shipped_catalog
from pricing.sources.fakes_aws import AwsFakeFleet, stubbed_aws_factory

NOW = datetime.now(UTC)


def _run(*args: str) -> Any:
    return CliRunner().invoke(advisor, ["pricing", *args], catch_exceptions=False)


def _list_json(*args: str) -> dict[str, Any]:
    result = _run("list", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)  # type: ignore[no-any-return]


def test_list_filters_compose() -> None:
    data = _list_json("--cloud", "aws", "--accelerator", "h100", "--region", "us-east-1", "--spot")
    assert data["count"] >= 1
    assert {(o["cloud"], o["accelerator"], o["region"], o["market"]) for o in data["offers"]} == {
        ("aws", "H100-SXM", "us-east-1", "spot")}
    prices = [o["price_usd_per_accelerator_hour"] for o in data["offers"]]
    assert prices == sorted(prices)


def test_list_on_demand_only_and_flagged_only() -> None:
    assert {o["market"] for o in _list_json("--on-demand")["offers"]} == {"on-demand"}
    flagged = _list_json("--flagged")["offers"]
    assert len(flagged) == 47 and all(o["flagged"] for o in flagged)


@pytest.mark.parametrize(("args", "message"), [
    (["--region", "us-est-1"], "error: --region: unknown region 'us-est-1'; did you mean us-east-1"),
    (["--accelerator", "H10"], "error: --accelerator: unknown accelerator 'H10'; did you mean"),
    # nothing close: the valid names, families first
    (["--accelerator", "foo"], "error: --accelerator: unknown accelerator 'foo'; use a family "
                               "(A100, H100"),
])
def test_unknown_names_one_line_with_suggestion(args: list[str], message: str) -> None:
    result = CliRunner().invoke(advisor, ["pricing", "list", *args])
    assert result.exit_code == 2
    assert result.output.startswith(message) and result.output.count("\n") == 1


def test_unknown_accelerator_lists_the_valid_names() -> None:
    result = CliRunner().invoke(advisor, ["pricing", "list", "--accelerator", "foo"])
    assert "A100-80GB-SXM" in result.output and "TPU-v5e" in result.output


@pytest.mark.parametrize(("typed", "variants"), [
    ("A100", {"A100-40GB-SXM", "A100-80GB-SXM", "A100-80GB-PCIe"}),   # every variant with offers
    ("H100", {"H100-SXM", "H100-NVL"}),
    ("V100", {"V100-16GB-SXM2", "V100-32GB-SXM2"}),
    ("H100-SXM", {"H100-SXM"}),                                       # an exact name: just itself
])
def test_list_by_family_lists_every_variant(typed: str, variants: set[str]) -> None:
    assert {o["accelerator"] for o in _list_json("--accelerator", typed)["offers"]} == variants


def test_list_table_is_readable() -> None:
    result = _run("list", "--cloud", "gcp", "--accelerator", "tpu-v5p")
    assert result.exit_code == 0
    assert "tpu-v5p-32" in result.output and "approximate" in result.output


@pytest.mark.parametrize("args", [
    ["--cloud", "aws", "--region", "us-central1"],    # a GCP region
    ["--cloud", "aws", "--accelerator", "TPU"],       # no TPU on AWS
])
def test_filters_that_match_nothing_say_so(args: list[str]) -> None:
    # was an empty table titled '0 offers', and nothing else
    result = _run("list", *args)
    assert result.exit_code == 0
    assert result.output.startswith(
        f"no offer matches these filters; the catalog has {len(shipped_catalog().offers):,} "
        "offers")
    assert "┏" not in result.output
    assert _list_json(*args)["count"] == 0  # --json keeps its shape


def test_refresh_aws_end_to_end(monkeypatch: pytest.MonkeyPatch, advisor_home: Path) -> None:
    fleet = AwsFakeFleet.from_offers(shipped_catalog().offers, now=NOW)
    regions = ["us-east-1", "us-east-2"]
    factory, stubbers = stubbed_aws_factory(fleet, regions, page_size=20,
                                            throttle_first_price_page=True)
    monkeypatch.setattr(aws_module, "default_client_factory", factory)
    monkeypatch.setattr(aws_module.time, "sleep", lambda _s: None)

    result = _run("refresh", "--cloud", "aws", "--region", "us-east-1", "--region", "us-east-2",
                  "--json")
    assert result.exit_code == 0, result.output
    written = json.loads(result.output)
    assert Path(written["path"]).parent == advisor_home / "snapshots" / "aws"
    for stubber in stubbers.values():
        stubber.assert_no_pending_responses()

    status = json.loads(_run("status", "--json").output)["snapshots"]
    in_use = [s for s in status if s["cloud"] == "aws" and s["in_use"]]
    assert [s["path"] for s in in_use] == [written["path"]]
    assert in_use[0]["age_days"] < 1 and in_use[0]["rows"] > 100

    from advisor.ranking.service import current_catalog  # what recommend ranks on
    catalog = current_catalog()
    assert catalog.captured_at[Cloud.AWS] == NOW.date()
    assert Cloud.AWS not in catalog.approximate_dates
    listed = _list_json("--cloud", "aws", "--region", "us-east-1", "--on-demand")["offers"]
    assert {o["observed_at"] for o in listed} == {NOW.date().isoformat()}


def test_refresh_failure_exits_2_and_keeps_shipped(
    monkeypatch: pytest.MonkeyPatch, advisor_home: Path
) -> None:
    fleet = AwsFakeFleet.from_offers(shipped_catalog().offers, now=NOW)
    factory, _ = stubbed_aws_factory(fleet, ["us-east-1"], page_size=10, fail_price_page=3)
    monkeypatch.setattr(aws_module, "default_client_factory", factory)
    result = CliRunner().invoke(advisor, ["pricing", "refresh", "--cloud", "aws", "--region", "us-east-1"])
    assert result.exit_code == 2
    assert "aws refresh failed, the shipped catalog stays in use" in result.output
    assert "page 3" in result.output
    assert not (advisor_home / "snapshots" / "aws").exists() or not list(
        (advisor_home / "snapshots" / "aws").glob("*.json"))


def test_status_table_marks_shipped_in_use() -> None:
    result = _run("status")
    assert result.exit_code == 0
    assert result.output.count("*") >= 3


def test_status_table_right_aligns_its_counts() -> None:
    # counts and ages stood left-aligned ('│ 281  │ 139       │'), unlike every other table's
    rows = [line for line in _run("status").output.splitlines() if line.startswith("│ * │ aws")]
    cells = [c.strip(" ") for c in rows[0].split("│")[1:-1]]
    raw = rows[0].split("│")[1:-1]
    for cell, text in zip(cells[3:9], raw[3:9], strict=True):
        assert cell and text.endswith(cell + " "), raw


def test_an_infinite_price_in_a_snapshot_is_one_line_naming_file_and_row(
        advisor_home: Path) -> None:
    from pricing.snapshots import write_snapshot

    aws = [o for o in shipped_catalog().offers if o.cloud is Cloud.AWS]
    path = write_snapshot(advisor_home / "snapshots", Cloud.AWS, aws,
                          captured_at=datetime(2025, 7, 1, tzinfo=UTC))
    lines = path.read_text().splitlines(keepends=True)
    price = f",{aws[0].price_usd_per_hour!r},"
    assert price in lines[1]
    path.write_text("".join([lines[0], lines[1].replace(price, ",inf,", 1), *lines[2:]]))
    for args in (["pricing", "list", "--json"], ["recommend", "examples/mlp.yaml"]):
        result = CliRunner().invoke(advisor, args)
        assert result.exit_code == 2, result.output
        assert result.stderr == (f"error: {path}:2: price_usd_per_hour must be a finite number "
                                 "above 0, got 'inf'; fix or delete that row\n")
        assert "Infinity" not in result.stdout
