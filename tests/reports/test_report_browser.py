"""Headless Chromium opens each HTML report from disk, network blocked, and screenshots it.

The driver is selenium with the Debian chromedriver (``/usr/bin/chromedriver``) named
explicitly, so selenium-manager never downloads anything. Screenshots go to
``$ADVISOR_SCREENSHOT_DIR`` when set, else to the test's tmp dir.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offline_html import blank_page
from report_samples import GENERATED_AT, sample_recommendation, sample_sweep

from reports.pdf import OFFLINE_FLAGS, find_chromium, print_pdf
from reports.recommendation import write_recommendation_report
from reports.sweep import write_sweep_report

pytestmark = pytest.mark.browser

CHROMEDRIVER = os.environ.get("ADVISOR_CHROMEDRIVER", "/usr/bin/chromedriver")

_CHART_STATS = """
return Array.from(document.querySelectorAll('svg.chart')).map(svg => {
  const box = svg.getBoundingClientRect();
  const drawn = Array.from(svg.querySelectorAll('.mark')).filter(m => {
    const b = m.getBBox(); return b.width > 0 || b.height > 0; }).length;
  return {name: svg.dataset.chart, width: box.width, height: box.height, drawn: drawn};
});
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium for the module, with a fresh profile and no network."""
    binary = find_chromium()
    assert binary is not None, "chromium is missing: apt-get install -y chromium chromium-driver"
    assert Path(CHROMEDRIVER).exists(), f"{CHROMEDRIVER} is missing: apt-get install chromium-driver"
    os.environ.setdefault("SE_OFFLINE", "true")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in OFFLINE_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.add_argument("--window-size=1280,1000")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(driver: Any, path: Path) -> list[dict[str, Any]]:
    """Load ``path``; returns the console entries it produced."""
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(path.resolve().as_uri())
    driver.execute_script("return document.fonts.ready")
    return list(driver.get_log("browser"))


def _screenshot(driver: Any, name: str, tmp_path: Path) -> Path:
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(1280, min(max(height, 800), 12000))
    folder = Path(os.environ.get("ADVISOR_SCREENSHOT_DIR") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.png"
    assert driver.save_screenshot(str(target))
    driver.set_window_size(1280, 1000)
    return target


@pytest.mark.parametrize(("name", "write", "sample", "charts"), [
    ("recommendation", write_recommendation_report, sample_recommendation,
     {"samples-per-dollar", "cost-vs-time"}),
    ("sweep", write_sweep_report, sample_sweep,
     {"spend-over-time", "spend-by-state", "cost-vs-objective"}),
])
def test_report_renders_offline_with_charts(browser: Any, tmp_path: Path, name: str, write,
                                            sample, charts: set[str]) -> None:
    files = write(sample(), tmp_path / "out", generated_at=GENERATED_AT)
    console = _open(browser, files.html)
    assert [e for e in console if e["level"] in ("SEVERE", "WARNING")] == []
    stats = browser.execute_script(_CHART_STATS)
    assert {s["name"] for s in stats} == charts
    for chart in stats:
        assert chart["width"] > 300 and chart["height"] > 40, chart
        assert chart["drawn"] > 0, f"chart {chart['name']} drew nothing"
    shot = _screenshot(browser, f"{name}-report", tmp_path)
    assert shot.stat().st_size > 20_000  # a real page, not a blank one


def test_external_request_is_blocked_and_reported(browser: Any, tmp_path: Path) -> None:
    # the negative control: a page that tries to fetch is caught by the console check
    bad = tmp_path / "bad.html"
    bad.write_text(blank_page().replace(
        "</body>", '<img src="http://example.com/pixel.png"></body>'))
    console = _open(browser, bad)
    assert any(e["level"] == "SEVERE" for e in console), console


@pytest.mark.slow
def test_pdf_print(tmp_path: Path) -> None:
    files = write_recommendation_report(sample_recommendation(), tmp_path,
                                        generated_at=GENERATED_AT)
    pdf = print_pdf(files.html, tmp_path / "r.pdf")
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 10_000
    if os.environ.get("ADVISOR_SCREENSHOT_DIR"):
        shutil.copy(pdf, Path(os.environ["ADVISOR_SCREENSHOT_DIR"]) / "recommendation-report.pdf")


EXAMPLES = Path(__file__).parents[2] / "examples"


def _check_charts(browser: Any, html: Path, names: set[str]) -> None:
    console = _open(browser, html)
    assert [e for e in console if e["level"] in ("SEVERE", "WARNING")] == []
    stats = browser.execute_script(_CHART_STATS)
    assert {s["name"] for s in stats} == names
    assert all(s["drawn"] > 0 for s in stats), stats


@pytest.mark.slow
def test_reports_of_the_examples(browser: Any, tmp_path: Path) -> None:
    """Both reports out of the shipped examples: resnet50.yaml and the digits sweep."""
    from click.testing import CliRunner

    from cli.main import advisor as advisor_cli

    runner = CliRunner()
    out = tmp_path / "out"
    done = runner.invoke(advisor_cli, ["report", "recommend", str(EXAMPLES / "resnet50.yaml"),
                                       "--out", str(out)])
    assert done.exit_code == 0, done.output
    _check_charts(browser, out / "recommendation.html", {"samples-per-dollar", "cost-vs-time"})
    _screenshot(browser, "example-resnet50-recommendation", tmp_path)

    sweep_dir = tmp_path / "sweep_digits"  # a copy, so artifacts land in tmp, not examples/
    shutil.copytree(EXAMPLES / "sweep_digits", sweep_dir,
                    ignore=shutil.ignore_patterns("artifacts", "__pycache__"))
    # 6 of its 60 trials (about 3 s of training, not 25): the charts need some spend, states
    # and objective values to draw, not many; seeded TPE and torch prune trial 4, so the
    # spend-by-state chart still shows two states
    yaml_path = sweep_dir / "sweep.yaml"
    text = yaml_path.read_text()
    assert "max_trials: 60" in text
    yaml_path.write_text(text.replace("max_trials: 60", "max_trials: 6"))
    done = runner.invoke(advisor_cli, ["sweep", str(sweep_dir / "sweep.yaml"), "--json"])
    assert done.exit_code == 0, done.output
    study = json.loads(done.stdout)["study"]
    done = runner.invoke(advisor_cli, ["report", "sweep", study, "--out", str(out)])
    assert done.exit_code == 0, done.output
    _check_charts(browser, out / "sweep.html",
                  {"spend-over-time", "spend-by-state", "cost-vs-objective"})
    _screenshot(browser, "example-digits-sweep", tmp_path)
