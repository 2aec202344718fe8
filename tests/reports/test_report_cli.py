"""``advisor report recommend|sweep``, ``recommend --html`` and ``sweep status --html/--csv``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from offline_html import external_references
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial
from report_samples import sample_recommendation

import advisor.ranking.service
from advisor.ranking import RankBy, Rejection, RejectionKind, TunedPolicy
from advisor.sweep.accounting.records import COST_ATTR, PRICE_ATTR
from cli.main import advisor as advisor_cli
from reports.formatting import fmt_money

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def fake_recommend(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """``recommend_for_file`` returns the hand-built recommendation (no profiling); the
    commands run in a folder holding a stand-in ``model.yaml`` (the argument must exist)."""
    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file",
                        lambda _path, **_kw: sample_recommendation())
    cwd = tmp_path_factory.mktemp("cwd")
    (cwd / "model.yaml").write_text("name: stand-in\n")
    monkeypatch.chdir(cwd)


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(advisor_cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_report_recommend_writes_html_csv_and_columns(fake_recommend: None, tmp_path: Path) -> None:
    code, out, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path / "r"),
                          "--baseline", "aws:p4d.24xlarge:us-east-1:on-demand", "--json")
    assert code == 0, err
    paths = json.loads(out)
    assert set(paths) == {"html", "csv", "columns", "savings"}
    html = Path(paths["html"]).read_text()
    assert "--baseline aws:p4d.24xlarge:us-east-1:on-demand" in html
    assert external_references(html) == []
    assert Path(paths["csv"]).read_text().startswith("rank,status,offer")


def test_bad_baseline_is_one_line_and_writes_nothing(fake_recommend: None, tmp_path: Path) -> None:
    code, _, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path / "r"),
                        "--baseline", "aws:p5.48xlarge")
    assert code == 2
    assert err.startswith("error: --baseline: no offer") and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_report_into_a_path_through_a_file_is_one_line(fake_recommend: None,
                                                      tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, out, err = _run("report", "recommend", "model.yaml", "--out",
                          str(tmp_path / "afile" / "sub"))
    assert code == 2 and out == ""
    assert err.startswith("error: --out: ") and "afile is a file" in err and err.count("\n") == 1


def test_report_out_is_a_file_is_one_line(fake_recommend: None, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, _, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path / "afile"))
    assert code == 2 and err.startswith("error: --out: ") and err.count("\n") == 1


def test_report_creates_missing_folders(fake_recommend: None, tmp_path: Path) -> None:
    code, _, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path / "a" / "b"))
    assert code == 0, err
    assert (tmp_path / "a" / "b" / "recommendation.html").exists()


def test_baseline_without_market_is_on_demand_and_said(fake_recommend: None,
                                                       tmp_path: Path) -> None:
    code, _, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path),
                        "--baseline", "aws:p4d.24xlarge:us-east-1")
    assert code == 0, err
    assert "baseline aws:p4d.24xlarge:us-east-1:on-demand (" in err
    html = (tmp_path / "recommendation.html").read_text()
    assert ("no market named, so on-demand): aws:p4d.24xlarge:us-east-1:on-demand at $32.77/h"
            in html)


@pytest.mark.parametrize("as_json", [False, True])
def test_a_rejected_baseline_says_why_there_is_no_saving_everywhere(
        fake_recommend: None, tmp_path: Path, as_json: bool) -> None:
    # the HTML said it; stderr and --json were silent, as if the saving had been forgotten
    code, out, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path),
                          "--baseline", "aws:g4dn.xlarge", *(["--json"] if as_json else []))
    assert code == 0, err
    why = "it was rejected (needs 21.5 GiB per device at batch 256"
    assert f"no saving against the baseline: {why}" in err
    assert "the top pick saves" not in err
    html = (tmp_path / "recommendation.html").read_text()
    assert "It was rejected (needs 21.5 GiB per device" in html
    if as_json:
        doc = json.loads(out)
        assert doc["savings"] is None and doc["no_saving_because"].startswith(why)



@pytest.mark.parametrize("as_json", [False, True])
def test_with_nothing_ranked_no_saving_says_there_is_no_pick(
        monkeypatch: pytest.MonkeyPatch, fake_recommend: None, tmp_path: Path,
        as_json: bool) -> None:
    # every offer over the budget: the saving is missing for want of a pick, not because the
    # default baseline (a rejected offer like all of them) "was rejected"
    sample = sample_recommendation()
    over = tuple(Rejection(e.offer, RejectionKind.BUDGET,
                           {"run_cost_usd": 50.0, "budget_usd": 1.0, "spot": ""})
                 for e in sample.ranked)
    empty = replace(sample, ranked=(), rejected=(*over, *sample.rejected))
    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", lambda _p, **_k: empty)
    code, out, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path),
                          *(["--json"] if as_json else []))
    assert code == 0, err
    why = "no offer meets every constraint, so there is no top pick to compare"
    assert f"no saving against the baseline: {why}" in err
    assert "it was rejected" not in err
    if as_json:
        doc = json.loads(out)
        assert doc["savings"] is None and doc["no_saving_because"] == why


def test_recommend_html_option(fake_recommend: None, tmp_path: Path) -> None:
    target = tmp_path / "rank.html"
    code, _, err = _run("recommend", "model.yaml", "--html", str(target), "--json")
    assert code == 0, err
    assert "Instance recommendation: resnet50-imagenet" in target.read_text()


def _stored_study(url: str) -> None:
    study = optuna.create_study(study_name="demo", storage=url)
    study.set_user_attr(PRICE_ATTR, 0.5)
    for i, state in enumerate([TrialState.COMPLETE, TrialState.PRUNED]):
        study.add_trial(create_trial(
            state=state, value=0.5 if state is TrialState.COMPLETE else None,
            params={"lr": 0.1 * (i + 1)}, distributions={"lr": FloatDistribution(0.01, 1.0)},
            intermediate_values={0: 0.9}, user_attrs={COST_ATTR: 0.25}))


def test_report_sweep_and_status_exports(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _stored_study(url)
    code, out, err = _run("report", "sweep", "demo", "--out", str(tmp_path / "s"),
                          "--storage", url, "--budget-usd", "3")
    assert code == 0, err
    assert "wrote html" in out
    html = (tmp_path / "s" / "sweep.html").read_text()
    assert "budget $3.00" in html and "Sweep budget review: demo" in html
    code, _, err = _run("sweep", "status", "demo", "--storage", url, "--html",
                        str(tmp_path / "st.html"), "--csv", str(tmp_path / "st.csv"))
    assert code == 0, err
    assert (tmp_path / "st.csv").read_text().count("\n") == 3  # header + 2 trials
    assert (tmp_path / "st.columns.md").exists()
    assert "spend-over-time" in (tmp_path / "st.html").read_text()


def test_sweep_status_and_its_report_write_each_dollar_figure_alike(tmp_path: Path) -> None:
    # the terminal wrote $0.0010 where the page wrote $0.00098 for the same trials' dollars
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = optuna.create_study(study_name="cheap", storage=url)
    study.set_user_attr(PRICE_ATTR, 0.397)
    for i, (state, usd) in enumerate([(TrialState.COMPLETE, 0.000975),
                                      (TrialState.PRUNED, 0.000203)]):
        study.add_trial(create_trial(
            state=state, value=0.5 if state is TrialState.COMPLETE else None,
            params={"lr": 0.1 * (i + 1)}, distributions={"lr": FloatDistribution(0.01, 1.0)},
            intermediate_values={0: 0.9}, user_attrs={COST_ATTR: usd}))
    code, out, err = _run("sweep", "status", "cheap", "--storage", url, "--html",
                          str(tmp_path / "st.html"))
    assert code == 0, err
    page = (tmp_path / "st.html").read_text()
    for usd in (0.000975, 0.000203, 0.000975 + 0.000203):
        assert fmt_money(usd) in out and fmt_money(usd) in page, (fmt_money(usd), out)


@pytest.mark.parametrize(("args", "says"), [
    # the study's own database: 'sweep status demo --csv db.sqlite' replaced it with the CSV
    (["--csv", "{db}"], "--csv: {db} is the storage's SQLite file, the file this command reads"),
    (["--html", "{db}"], "--html: {db} is the storage's SQLite file"),
    (["--html", "{dir}/t.out", "--csv", "{dir}/t.out"], "--csv: {dir}/t.out is also where --html goes"),
])
def test_sweep_status_never_writes_over_its_database_or_another_output(
        tmp_path: Path, args: list[str], says: str) -> None:
    db = tmp_path / "db.sqlite"
    _stored_study(f"sqlite:///{db}")
    before = db.read_bytes()
    names = {"db": str(db), "dir": str(tmp_path)}
    code, out, err = _run("sweep", "status", "demo", "--storage", f"sqlite:///{db}",
                          *(a.format(**names) for a in args))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {says.format(**names)}") and err.count("\n") == 1, err
    assert db.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite"]


def test_recommend_never_writes_over_the_probe_store(fake_recommend: None,
                                                     advisor_home: Path) -> None:
    from advisor.storage import default_storage_url
    from probes.store import ProbeStore

    ProbeStore(default_storage_url()).list()  # the store exists, as after a first probe
    store = advisor_home / "advisor.db"
    before = store.read_bytes()
    code, _, err = _run("recommend", "model.yaml", "--csv", str(store))
    assert code == 2 and err.startswith(f"error: --csv: {store} is the probe store, the file")
    assert store.read_bytes() == before


def test_report_sweep_unknown_study(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    _stored_study(url)
    code, _, err = _run("report", "sweep", "nope", "--out", str(tmp_path), "--storage", url)
    assert code == 2 and "study 'nope' not found" in err and "known: demo" in err


def test_report_ranks_as_recommend_does_with_its_ranking_options(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # report recommend had no --include-flagged, --rank-by or --tuned: its report could not
    # show the ranking the terminal showed with them
    seen: list[dict[str, object]] = []

    def capture(_path: object, **kw: object) -> object:
        seen.append({k: kw[k] for k in ("include_flagged", "rank_by", "tuned")})
        return sample_recommendation()

    monkeypatch.setattr(advisor.ranking.service, "recommend_for_file", capture)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.yaml").write_text("name: stand-in\n")
    options = ["--include-flagged", "--rank-by", "estimate", "--tuned", "same_numerics"]
    assert _run("recommend", "model.yaml", "--json", *options)[0] == 0
    code, _, err = _run("report", "recommend", "model.yaml", "--out", str(tmp_path / "r"),
                        *options)
    assert code == 0, err
    assert seen[0] == seen[1] == {"include_flagged": True, "rank_by": RankBy.ESTIMATE,
                                  "tuned": TunedPolicy.SAME_NUMERICS}


def test_report_by_the_point_estimate_says_so(tmp_path: Path) -> None:
    code, _, err = _run("report", "recommend", str(REPO / "examples" / "mlp.yaml"), "--out",
                        str(tmp_path), "--rank-by", "estimate")
    assert code == 0, err
    page = (tmp_path / "recommendation.html").read_text()
    assert "by its point estimate" in page and "by the low end of its range" not in page


def test_the_written_files_read_as_words_in_one_column(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    # report probe printed its dataclass keys ('wrote profile_csv /...') out of line with
    # 'wrote html    /...'
    import cli.report
    from reports.probe import ProbeReportFiles

    files = ProbeReportFiles(tmp_path / "probe.html", tmp_path / "t.csv", tmp_path / "t.md",
                             None, tmp_path / "p.csv", tmp_path / "p.md")
    cli.report._done(files, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[3] == f"wrote profile csv     {tmp_path / 'p.csv'}"
    assert len({line.index(str(tmp_path)) for line in lines}) == 1 and len(lines) == 5
    assert "_" not in "".join(line.split(str(tmp_path))[0] for line in lines)
