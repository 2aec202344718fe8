"""What ``advisor recommend`` prints and writes: full offer keys, cents, files, progress."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import advisor.ranking.service
import cli.recommend as recommend_cli
from advisor.profiling.profile import WorkloadProfile
from advisor.ranking.decision import group_regions
from advisor.ranking.offers import Recommendation
from advisor.ranking.recommend import recommend
from advisor.spec import load_workload_spec
from cli.main import advisor as advisor_cli
from cli.render import min_width
from pricing import shipped_catalog
from reports.formatting import fmt_compact, fmt_usd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MLP_YAML = EXAMPLES / "mlp.yaml"
# The MLP of examples/mlp.yaml: 1.1 M parameters, tiny activations.
MLP = WorkloadProfile(flops_per_sample=6.6e6, params=1_100_000, weight_bytes=4_400_000,
                      gradient_bytes=4_400_000, optimizer_bytes=8_800_000,
                      activation_bytes_per_sample=20_000, method="test")


@pytest.fixture(scope="module")
def mlp_rec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recommendation]:
    """The real ranking of examples/mlp.yaml on the shipped catalog (profile fixed)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ADVISOR_HOME", str(tmp_path_factory.mktemp("home")))
        yield recommend(load_workload_spec(MLP_YAML), catalog=shipped_catalog(), profile=MLP,
                        today=date(2026, 1, 1))


@pytest.fixture()
def calls(mlp_rec: Recommendation, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``recommend_for_file`` returns ``mlp_rec``; the list records each call."""
    seen: list[Path] = []

    def fake(path: Path, **_kw: object) -> Recommendation:
        seen.append(path)
        return mlp_rec

    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", fake)
    return seen


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(advisor_cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _top_with_both_tpu_sizes(rec: Recommendation) -> int:
    keys = [f"{e.offer.cloud}:{e.offer.instance_type}" for e in rec.ranked]
    return max(keys.index("gcp:tpu-v5litepod-1"), keys.index("gcp:tpu-v5litepod-4")) + 1


# --- output files (defects 1 and 7) ----------------------------------------------------------

@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_missing_folders_are_created(calls: list[Path], tmp_path: Path, option: str) -> None:
    target = tmp_path / "new" / "deeper" / f"r.{option[2:]}"
    code, _, err = _run("recommend", str(MLP_YAML), option, str(target), "--json")
    assert code == 0, err
    assert target.stat().st_size > 0


@pytest.mark.parametrize("option", ["--csv", "--html"])
def test_a_file_in_the_path_is_one_line_before_any_work(calls: list[Path], tmp_path: Path,
                                                        option: str) -> None:
    (tmp_path / "afile").write_text("x")
    code, out, err = _run("recommend", str(MLP_YAML), option, str(tmp_path / "afile" / "r.out"))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {option}: ") and "is a file" in err and err.count("\n") == 1
    assert calls == []  # validated before profiling and ranking


def test_a_folder_given_as_the_csv_file_is_one_line(calls: list[Path], tmp_path: Path) -> None:
    code, _, err = _run("recommend", str(MLP_YAML), "--csv", str(tmp_path))
    assert code == 2 and err.startswith("error: --csv: ") and err.count("\n") == 1
    assert "give a file name" in err and calls == []


def test_written_files_are_listed_on_stderr(calls: list[Path], tmp_path: Path) -> None:
    code, out, err = _run("recommend", str(MLP_YAML), "--csv", str(tmp_path / "r.csv"),
                          "--html", str(tmp_path / "r.html"), "--json")
    assert code == 0, err
    json.loads(out)  # stdout stays one JSON document
    assert f"wrote csv     {tmp_path / 'r.csv'}" in err
    assert f"wrote columns {tmp_path / 'r.columns.md'}" in err
    assert f"wrote html    {tmp_path / 'r.html'}" in err
    assert (tmp_path / "r.columns.md").exists()


@pytest.mark.parametrize(("args", "says"), [
    (["--csv", "{model}"], "--csv: {model} is MODEL_YAML, the file this command reads"),
    (["--html", "{model}"], "--html: {model} is MODEL_YAML, the file this command reads"),
    (["--csv", "{link}"], "--csv: {link} is MODEL_YAML"),   # a symbolic link to it
    (["--csv", "{dir}/r.csv", "--html", "{dir}/r.csv"],
     "--html: {dir}/r.csv is also where --csv goes"),
    (["--csv", "{dir}/r.csv", "--html", "{dir}/r.columns.md"],
     "--html: {dir}/r.columns.md is also where --csv's columns file goes"),
])
def test_an_output_over_the_input_or_another_output_is_refused(
        calls: list[Path], tmp_path: Path, args: list[str], says: str) -> None:
    # 'recommend m.yaml --csv m.yaml' wrote the ranking over the user's model.yaml
    model = tmp_path / "model.yaml"
    model.write_text(MLP_YAML.read_text())
    (tmp_path / "link.yaml").symlink_to(model)
    names = {"model": str(model), "link": str(tmp_path / "link.yaml"), "dir": str(tmp_path)}
    code, out, err = _run("recommend", str(model), *(a.format(**names) for a in args))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {says.format(**names)}") and err.count("\n") == 1, err
    assert model.read_text() == MLP_YAML.read_text()
    assert not calls and not list(tmp_path.glob("r.*"))  # nothing written


# --- the table (defects 2 and 3) -------------------------------------------------------------

def test_run_cost_is_shown_to_the_cent(calls: list[Path], mlp_rec: Recommendation) -> None:
    # a wide terminal: at 80 columns (pytest-xdist's workers set COLUMNS=80) rows stack
    code, out, err = _run("recommend", str(MLP_YAML), "--top", "5", env={"COLUMNS": "200"})
    assert code == 0, err
    rows = _table_rows(out)
    assert len(rows) == 5
    shown = [group.best for group in group_regions(mlp_rec.ranked)]
    for cells, est in zip(rows, shown, strict=False):
        # run $, not whole dollars ("0"), and under $1 three significant figures (not "0.02")
        assert cells[-2] == fmt_usd(est.run_cost_usd)
        assert est.run_cost_usd < 1 and len(cells[-2].replace(".", "").lstrip("0")) >= 2


@pytest.mark.parametrize("columns", [
    None,    # piped without COLUMNS: 140 wide
    "135",   # optional columns left out
    "80",    # the one-entry-per-offer layout
    "40",    # still wide enough for every key
])
def test_offer_keys_are_never_truncated(calls: list[Path], mlp_rec: Recommendation,
                                        columns: str | None) -> None:
    top = _top_with_both_tpu_sizes(mlp_rec)
    env = {"COLUMNS": columns} if columns else {"COLUMNS": ""}
    code, out, err = _run("recommend", str(MLP_YAML), "--top", str(top), env=env)
    assert code == 0, err
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= int(columns or 140)
    for est in mlp_rec.ranked[:top]:
        assert f"{est.offer.cloud}:{est.offer.instance_type}" in out
    assert "gcp:tpu-v5litepod-1" in out and "gcp:tpu-v5litepod-4" in out


@pytest.mark.parametrize("width", [
    80,   # one entry per offer
    100,  # still one entry per offer
    120,  # the narrowest the entries take at the most
    135,  # the table, optional columns left out
    200,  # the whole table
])
def test_every_line_fits_and_the_key_cells_stay_whole(calls: list[Path],
                                                      mlp_rec: Recommendation,
                                                      width: int) -> None:
    code, out, err = _run("recommend", str(MLP_YAML), "--top", "10",
                          env={"COLUMNS": str(width)})
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= width and "…" not in out
    for group in group_regions(mlp_rec.ranked)[:10]:
        est = group.best
        assert f"{est.offer.cloud}:{est.offer.instance_type}" in out
        # the range's low end orders the rows: never left out, never folded
        assert f"{fmt_compact(est.samples_per_dollar_low)}-" in out
        assert fmt_usd(est.run_cost_usd) in out
        assert est.offer.region in out  # text columns wrap between words, not inside one


@pytest.mark.parametrize("width", [
    133,  # about the narrowest the table takes (samples/s and samples/$ left out)
    140,  # piped without COLUMNS
    150,  # samples/s left out
    162,  # every column, the text ones wrapped
    200,  # room for every cell on one line
])
def test_text_columns_wrap_between_words_never_inside_one(calls: list[Path],
                                                          mlp_rec: Recommendation,
                                                          width: int) -> None:
    # rich, left to narrow the wrapping columns itself, folded words ('V100-16GB-SX' over
    # 'M2') though the table had room for each word whole
    code, out, err = _run("recommend", str(MLP_YAML), "--top", "15",
                          env={"COLUMNS": str(width)})
    assert code == 0, err
    assert max(len(line) for line in out.splitlines()) <= width and "┃" in out  # a table
    cells = [c.strip() for line in out.splitlines() if line.startswith(("│", "┃"))
             for c in line.strip("│┃").split("│" if line.startswith("│") else "┃")]
    words = {word for cell in cells for word in cell.split()}
    assert "accelerators" in words  # the header
    for group in group_regions(mlp_rec.ranked)[:15]:
        est = group.best
        assert est.offer.accelerator in words and est.offer.region in words


@pytest.mark.parametrize("all_regions", [False, True])
@pytest.mark.parametrize("top", [1, 10, 40])
def test_the_table_is_measured_as_rich_measures_it(mlp_rec: Recommendation, top: int,
                                                   all_regions: bool) -> None:
    # ranking_table picks its columns from the cells' widths; rich's measurement of the
    # table it builds is the truth
    rows = recommend_cli._cells(mlp_rec, top, all_regions=all_regions)
    rows[0] = {**rows[0], "region": "a-region-name-longer-than-any  +3",
               "accelerators": "8x Ünïcode-accelerator"}  # a wrapping cell's longest word
    for n in range(3):
        columns = recommend_cli._COLUMNS[n:]
        table = recommend_cli._table(mlp_rec, rows, columns)
        assert recommend_cli._min_width(rows, columns) == min_width(table)


def test_a_tiny_console_folds_but_never_cuts(calls: list[Path]) -> None:
    code, out, err = _run("recommend", str(MLP_YAML), "--top", "3", env={"COLUMNS": "24"})
    assert code == 0, err
    assert "…" not in out
    assert "Standard_NC4as_T4_v3" in "".join(line.strip() for line in out.splitlines())


def test_left_out_columns_are_named(calls: list[Path]) -> None:
    code, out, _ = _run("recommend", str(MLP_YAML), env={"COLUMNS": "135"})
    assert code == 0
    assert "left out to fit 135 columns; --json or --csv has every column" in out


def test_a_rejection_count_quotes_its_example_as_an_example(calls: list[Path],
                                                            mlp_rec: Recommendation) -> None:
    # "rejected 667: region us-west-2 not in constraints.regions (e.g. ...)" read as if all
    # 667 offers were in us-west-2: the reason is the example offer's own
    code, out, err = _run("recommend", str(MLP_YAML), env={"COLUMNS": "400"})
    assert code == 0, err
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("rejected ")]
    counts = mlp_rec.rejected.kind_counts().most_common(6)
    assert len(lines) == len(counts) and any(n > 1 for _, n in counts)
    for line, (kind, n) in zip(lines, counts, strict=True):
        example = mlp_rec.rejected.first_of(kind)
        assert example is not None
        if n > 1:
            assert line == (f"rejected {n:>4}, e.g. {example.offer.key}: {example.reason} "
                            "(--json lists each)")
        else:
            assert line == f"rejected {n:>4}: {example.reason} ({example.offer.key})"


# --- progress (defect 4) ---------------------------------------------------------------------

@pytest.fixture()
def profiling(mlp_rec: Recommendation, monkeypatch: pytest.MonkeyPatch) -> None:
    """``recommend_for_file`` says it is profiling a new model, then returns ``mlp_rec``."""
    def fake(path: Path, *, progress: Any = None, **_kw: object) -> Recommendation:
        if progress is not None:
            progress("profiling mlp-mnist with torch (first run for this model; cached "
                     "afterwards) ...")
        return mlp_rec

    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", fake)


def test_profiling_shows_a_status_on_a_terminal(profiling: None) -> None:
    code, out, err = _run("recommend", str(MLP_YAML), "--json", env={"TTY_COMPATIBLE": "1"})
    assert code == 0, err
    assert "profiling mlp-mnist with torch" in err
    assert json.loads(out)["workload"] == "mlp-mnist"  # nothing extra on stdout


def test_piped_profiling_is_said_in_one_plain_line(profiling: None) -> None:
    # seconds of silence in a log look like a hang: the slow first run says what it does
    code, out, err = _run("recommend", str(MLP_YAML), "--json", env={"TTY_COMPATIBLE": "0"})
    assert code == 0
    assert err == ("profiling mlp-mnist with torch (first run for this model; cached "
                   "afterwards) ...\n")
    assert json.loads(out)["workload"] == "mlp-mnist"


def test_piped_ranking_without_profiling_says_nothing(calls: list[Path]) -> None:
    code, _, err = _run("recommend", str(MLP_YAML), "--json", env={"TTY_COMPATIBLE": "0"})
    assert code == 0 and err == ""


@pytest.mark.usefixtures("no_shipped_artifacts")
def test_the_service_says_profiling_once_when_the_profile_is_not_cached() -> None:
    from advisor.ranking.service import recommend_for_file

    heard: list[str] = []
    recommend_for_file(MLP_YAML, progress=heard.append)
    assert heard == ["profiling mlp-mnist with torch (first run for this model; cached "
                     "afterwards) ..."]
    recommend_for_file(MLP_YAML, progress=heard.append)  # cached now: nothing to say
    assert len(heard) == 1


# --- one row per choice, the headline, --rank-by (issue 15) ----------------------------------

def _table_rows(out: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("│").split("│")]
            for line in out.splitlines() if line.startswith("│") and line[1:4].strip()]


def test_table_folds_regions_and_all_regions_lists_every_row(calls: list[Path],
                                                             mlp_rec: Recommendation) -> None:
    env = {"COLUMNS": "200"}
    _, grouped, _ = _run("recommend", str(MLP_YAML), "--top", "8", env=env)
    _, every, _ = _run("recommend", str(MLP_YAML), "--top", "8", "--all-regions", env=env)
    groups = group_regions(mlp_rec.ranked)[:8]
    rows = _table_rows(grouped)
    assert [r[0] for r in rows] == [str(g.rank) for g in groups]
    assert [r[2] for r in rows] == [g.best.offer.region + (f" +{g.other_regions}"
                                                           if g.other_regions else "")
                                    for g in groups]
    assert [r[0] for r in _table_rows(every)] == [str(i) for i in range(1, 9)]
    assert "--all-regions lists every row" in grouped


def test_headline_leads_and_json_keeps_every_row(calls: list[Path],
                                                 mlp_rec: Recommendation) -> None:
    _, out, _ = _run("recommend", str(MLP_YAML), env={"COLUMNS": "200"})
    _, text, _ = _run("recommend", str(MLP_YAML), "--json")
    data = json.loads(text)
    assert len(data["ranked"]) == len(mlp_rec.ranked)  # not folded
    assert data["headline"].startswith("pick: ")
    assert " ".join(out.split()).startswith(data["headline"])  # the first thing printed


def test_rank_by_reaches_the_library(monkeypatch: pytest.MonkeyPatch,
                                     mlp_rec: Recommendation) -> None:
    seen: list[object] = []

    def fake(path: Path, **kwargs: object) -> Recommendation:
        seen.append(kwargs["rank_by"])
        return mlp_rec

    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", fake)
    assert _run("recommend", str(MLP_YAML), "--rank-by", "estimate", "--json")[0] == 0
    assert _run("recommend", str(MLP_YAML), "--json")[0] == 0
    assert [str(s) for s in seen] == ["estimate", "conservative"]
    code, _, err = _run("recommend", str(MLP_YAML), "--rank-by", "best")
    # one line, as every option refuses (click's was four: usage, --help pointer, blank, error)
    assert code == 2 and err == "error: --rank-by: must be one of conservative, estimate, got 'best'\n"


# --- the table explains itself at 140 columns (issue 33) ------------------------------------

def test_at_140_columns_the_ordering_column_stays(calls: list[Path]) -> None:
    code, out, _ = _run("recommend", str(MLP_YAML), env={"COLUMNS": "140"})
    assert code == 0
    header = "".join(line for line in out.splitlines() if line.startswith("┃"))
    assert "range" in header  # the low end of the range orders the rows
    assert "samples/$ left out to fit 140 columns" in out


def test_skipped_numbers_and_the_spot_band_are_explained(calls: list[Path],
                                                         mlp_rec: Recommendation) -> None:
    code, out, _ = _run("recommend", str(MLP_YAML), env={"COLUMNS": "200"})
    shown = group_regions(mlp_rec.ranked)[:15]
    assert code == 0 and [g.rank for g in shown] != list(range(1, 16))  # numbers skip
    assert "# = the offer's place among all ranked offers" in out
    assert "spot X% = the instance type's published monthly interruption band" in out
    _, every_row, _ = _run("recommend", str(MLP_YAML), "--all-regions", env={"COLUMNS": "200"})
    assert "# = the offer's place" not in every_row  # 1, 2, 3, ... needs no word


def test_wrapped_lines_hang_instead_of_restarting_at_column_0(calls: list[Path]) -> None:
    code, out, _ = _run("recommend", str(MLP_YAML), env={"COLUMNS": "90"})
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("pick: ") and len(lines[0]) <= 90
    assert lines[1].startswith("      ") and lines[1].strip()  # the headline goes on, indented
    bullets = lines[lines.index("assumptions:") + 1:]
    assert all(line.startswith(("  - ", "    ")) for line in bullets)  # no line at column 0


def test_suggest_probes_with_nothing_ranked_says_there_is_no_pick(
        mlp_rec: Recommendation, monkeypatch: pytest.MonkeyPatch) -> None:
    # "none would change the pick enough to pay off" spoke of a pick that does not exist
    empty = replace(mlp_rec, ranked=())
    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", lambda _p, **_k: empty)
    code, out, err = _run("recommend", str(MLP_YAML), "--suggest-probes", "3")
    assert code == 1, err
    assert ("suggested probes: none: no offer meets every constraint, so there is no pick "
            "for a probe to settle") in " ".join(out.split())  # however wide the console
    assert "pay off" not in out


@pytest.mark.parametrize("as_json", [False, True])
def test_nothing_ranked_exits_1_after_saying_why(
        mlp_rec: Recommendation, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        as_json: bool) -> None:
    # exit 0 let `advisor recommend model.yaml && launch` go on with no pick; the table was an
    # empty frame of column names; the files and the JSON are still written, whole
    empty = replace(mlp_rec, ranked=())
    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", lambda _p, **_k: empty)
    csv_file = tmp_path / "ranking.csv"
    code, out, err = _run("recommend", str(MLP_YAML), "--csv", str(csv_file),
                          *(["--json"] if as_json else []))
    assert code == 1, err
    assert csv_file.is_file() and "Traceback" not in err
    if as_json:
        doc = json.loads(out)
        assert doc["ranked"] == [] and doc["headline"].startswith("no offer meets")
    else:
        assert out.startswith("no offer meets every constraint")
        assert "samples/$" not in out and "━" not in out  # no empty table
        assert "0 offers ranked" in out and "rejected" in out


@pytest.mark.parametrize(("constraints", "says"), [
    ("regions: [us-eas-1]", "constraints.regions: unknown region 'us-eas-1'; did you mean"),
    ("accelerators: [H1000]", "constraints.accelerators.include: unknown accelerator 'H1000'"),
    ("{clouds: [gcp], regions: [us-east-1]}", "constraints.regions: 'us-east-1' has offers only"),
])
def test_a_constraint_name_error_names_the_file_before_any_profiling(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, constraints: str, says: str) -> None:
    # as every other model.yaml error does; and a typo costs no profiling run first
    def no_profiling(_spec: object) -> None:
        raise AssertionError("profiled before the constraints' names were checked")

    monkeypatch.setattr(advisor.ranking.service, "profile_workload", no_profiling)
    model = tmp_path / "model.yaml"
    text = MLP_YAML.read_text().replace("constraints:\n", "constraints_old:\n")
    model.write_text(text.split("constraints_old:")[0]
                     + (f"constraints: {constraints}\n" if constraints.startswith("{")
                        else f"constraints:\n  {constraints}\n"))
    code, out, err = _run("recommend", str(model))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {model}: {says}") and err.count("\n") == 1, err
