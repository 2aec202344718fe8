"""The HTML reports come from Jinja2 templates: autoescaped, strict, shipped as package data,
with Markdown code shown as code and each price source named once."""

from __future__ import annotations

import ast
import fnmatch
import re
import tomllib
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from jinja2 import StrictUndefined
from report_samples import GENERATED_AT, sample_recommendation, sample_sweep
from test_probe_report import tuned_sample

from reports.probe import render_probe_html
from reports.recommendation import PriceSources, price_sources, render_recommendation_html
from reports.render import CSP, code_spans, environment
from reports.sweep import render_sweep_html

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "reports" / "templates"


def _pages() -> dict[str, str]:
    return {
        "recommendation": render_recommendation_html(sample_recommendation(),
                                                     generated_at=GENERATED_AT),
        "sweep": render_sweep_html(sample_sweep(), generated_at=GENERATED_AT),
        "probe": render_probe_html(tuned_sample(), price_usd_per_hour=1.0,
                                   generated_at=GENERATED_AT),
    }


@pytest.mark.parametrize(("text", "spans"), [
    ("plain", [("plain", False)]),                                   # nothing to mark
    ("`a` or `b`", [("a", True), (" or ", False), ("b", True)]),     # two spans
    ("see `x`.", [("see ", False), ("x", True), (".", False)]),      # span mid-sentence
    ("a ` b", [("a ` b", False)]),                                   # lone backtick stays text
    ("`a` and ` c", [("a", True), (" and ` c", False)]),             # the unpaired last one too
])
def test_code_spans(text: str, spans: list[tuple[str, bool]]) -> None:
    assert code_spans(text) == spans


@pytest.mark.parametrize("name", ["recommendation", "sweep", "probe"])
def test_pages_show_code_not_backticks(name: str) -> None:
    # issue 33: the columns' Markdown `code` reached the page as raw backticks
    document = _pages()[name]
    assert "`" not in document
    assert document.count("<code>") > 5


def test_columns_meaning_code_is_marked_up() -> None:
    document = _pages()["recommendation"]
    assert "<code>ranked</code> (meets every constraint) or <code>rejected</code>" in document


class _Meta(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.csp: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp.append(a.get("content"))


@pytest.mark.parametrize("name", ["recommendation", "sweep", "probe"])
def test_every_page_carries_the_csp(name: str) -> None:
    parser = _Meta()
    parser.feed(_pages()[name])
    assert parser.csp == [CSP]
    assert CSP == "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def test_environment_escapes_and_is_strict() -> None:
    env = environment()
    assert env.autoescape is True and env.undefined is StrictUndefined
    assert env.from_string("{{ x }}").render(x="<b>&") == "&lt;b&gt;&amp;"


_VANTAGE = ("instances.vantage.sh instances.json (AWS on-demand list price) as mirrored in "
            "github.com/tsaol/aws-gpu at 7412fd2")
_SNAPSHOT = "skypilot-catalog v7, hand-extracted"


def _supplemented(price: float) -> str:
    # the source pricing._import_shared gives an offer whose price a supplement replaced
    return f"{_VANTAGE}; replaces {price} USD/h of {_SNAPSHOT} (2025-03-01)"


def test_price_source_is_named_once() -> None:
    # issue 33: one supplement's source was repeated once per offer it priced (about 10 times)
    rec = sample_recommendation()
    ranked = tuple(replace(e, offer=replace(e.offer, source=_supplemented(30.0 + i)))
                   for i, e in enumerate(rec.ranked[:4])) + rec.ranked[4:]
    rec = replace(rec, ranked=ranked, rejected=tuple(
        replace(r, offer=replace(r.offer, source=_SNAPSHOT)) for r in rec.rejected))
    assert price_sources([e.offer for e in rec.ranked] + [r.offer for r in rec.rejected]) == [
        PriceSources("catalog:offers.csv", (("", 1),), replacing=False),
        PriceSources(_VANTAGE, (("", 4),), replacing=True),
        PriceSources(_SNAPSHOT, (("", 3),), replacing=False)]
    document = render_recommendation_html(rec, generated_at=GENERATED_AT)
    assert document.count("instances.vantage.sh") == 1
    assert "USD/h of" not in document
    assert f"{_VANTAGE} (4 offers); these prices replace the snapshot's" in document


def test_sources_that_differ_in_their_last_words_share_a_line() -> None:
    # the shipped catalog's supplement: one file per instance family, from the same mirror
    rec = sample_recommendation()
    files = ["data/p4d_instances.js", "data/p4d_instances.js", "data/p5_instances.js"]
    ranked = tuple(replace(e, offer=replace(e.offer, source=f"{_MIRROR} {f} at 7412fd2"))
                   for e, f in zip(rec.ranked, files, strict=False)) + rec.ranked[3:]
    groups = price_sources([e.offer for e in ranked])
    assert groups[1] == PriceSources(_MIRROR, (("data/p4d_instances.js at 7412fd2", 2),
                                               ("data/p5_instances.js at 7412fd2", 1)), False)
    document = render_recommendation_html(replace(rec, ranked=ranked), generated_at=GENERATED_AT)
    assert document.count(_MIRROR) == 1
    assert (f"{_MIRROR}: data/p4d_instances.js at 7412fd2 (2 offers), data/p5_instances.js at "
            "7412fd2 (1 offer)") in document


_MIRROR = "instances.vantage.sh instances.json as mirrored in github.com/tsaol/aws-gpu"


def test_templates_are_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["reports"]
    files = [p.relative_to(ROOT / "reports").as_posix() for p in TEMPLATES.rglob("*")
             if p.is_file()]
    assert files and all(any(fnmatch.fnmatch(f, g) for g in globs) for f in files), files
    assert {"base.html.j2", "recommendation.html.j2", "sweep.html.j2", "probe.html.j2"} <= {
        Path(f).name for f in files}


_TAG = re.compile(r"<(/?)(html|head|body|div|span|p|table|tr|td|th|ul|li|section|svg|rect|"
                  r"circle|path|line|text|g|code|details|figure)\b")


def test_markup_lives_in_templates() -> None:
    """No Python module under reports/ writes an HTML or SVG tag (docstrings aside)."""
    found = []
    for path in sorted((ROOT / "reports").rglob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef)
                and n.body and isinstance(n.body[0], ast.Expr)}
        found += [f"{path.name}:{n.lineno}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and id(n) not in docs and _TAG.search(n.value)]
    assert found == []
    assert not (ROOT / "reports" / "html.py").exists()
