"""Headless Chromium opens the probe report from disk, network blocked, and screenshots it
(the browser, console check and screenshot helpers of test_report_browser.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_probe_report import GENERATED_AT, tuned_sample
from test_report_browser import _CHART_STATS, _open, _screenshot, browser

from reports.probe import write_probe_report

pytestmark = pytest.mark.browser
__all__ = ["browser"]  # the module-scoped fixture, shared


def test_probe_report_renders_offline_with_both_charts(browser: Any, tmp_path: Path) -> None:
    files = write_probe_report(tuned_sample(), tmp_path / "out", price_usd_per_hour=1.0,
                               generated_at=GENERATED_AT)
    console = _open(browser, files.html)
    assert [e for e in console if e["level"] in ("SEVERE", "WARNING")] == []
    stats = {s["name"]: s for s in browser.execute_script(_CHART_STATS)}
    assert set(stats) == {"speedups", "step-split"}
    assert stats["speedups"]["drawn"] == 4 and stats["speedups"]["width"] > 300
    assert stats["step-split"]["drawn"] == 4  # input wait, forward, backward, optimizer
    shot = _screenshot(browser, "probe-report", tmp_path)
    assert shot.stat().st_size > 20_000
