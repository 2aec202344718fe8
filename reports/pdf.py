"""Print an HTML report to PDF with headless Chromium (optional; needs a chromium binary).

The page is opened from disk with the network blocked, the same way the browser tests open
it, so printing never fetches anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from reports.errors import ReportError

__all__ = ["OFFLINE_FLAGS", "find_chromium", "print_pdf"]

OFFLINE_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",
)

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary: ``$ADVISOR_CHROMIUM``, else the first on PATH."""
    configured = os.environ.get("ADVISOR_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    return next((p for p in map(shutil.which, _CANDIDATES) if p), None)


def print_pdf(html_path: Path, pdf_path: Path, *, timeout_s: float = 120.0) -> Path:
    """Render ``html_path`` to ``pdf_path`` (A4, print CSS); ReportError if it cannot."""
    binary = find_chromium()
    if binary is None:
        raise ReportError("--pdf: no chromium found; install it (apt-get install chromium) or "
                          "set ADVISOR_CHROMIUM=/path/to/chrome, or leave out --pdf")
    with tempfile.TemporaryDirectory(prefix="advisor-pdf-") as profile:
        cmd = [binary, *OFFLINE_FLAGS, f"--user-data-dir={profile}", "--no-pdf-header-footer",
               f"--print-to-pdf={pdf_path.resolve()}", html_path.resolve().as_uri()]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ReportError(f"--pdf: chromium failed to print {html_path}: {exc}") from exc
    if done.returncode != 0 or not pdf_path.exists() or pdf_path.stat().st_size == 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise ReportError(f"--pdf: chromium could not print {html_path} (exit "
                          f"{done.returncode}: {tail[0]})")
    return pdf_path
