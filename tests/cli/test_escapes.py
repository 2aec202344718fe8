"""Issue 33: terminal escapes in data (a stored probe, a price snapshot, an argument) are shown
escaped (``\\x1b[31m``), never sent to the terminal."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from advisor.storage import default_storage_url
from cli.main import advisor
from cli.render import printable
from pricing import Cloud, shipped_catalog
from pricing.snapshots import write_snapshot
from probes.store import ProbeStore
from probes.types import ProbeResult, ProbeStatus

RED = "\x1b[31m"


def test_printable_escapes_control_and_format_characters_only() -> None:
    assert printable(f"a{RED}b\x07c\u202ed é ü") == "a\\x1b[31mb\\x07c\\u202ed é ü"


def _stdout(*args: str) -> str:
    result = CliRunner().invoke(advisor, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    assert "\x1b" not in result.output
    return result.stdout


def test_probes_list_fingerprint_shows_an_escape_escaped() -> None:
    out = _stdout("probes", "list", "--fingerprint", f"fp{RED}")
    assert "fp\\x1b[31m" in out


def test_probes_list_and_show_escape_stored_fields() -> None:
    ProbeStore(default_storage_url()).record(ProbeResult(
        probe_id="abc123", offer_key="aws:g5.xlarge:us-east-1:on-demand",
        workload_fingerprint="fp", status=ProbeStatus.ERROR, batch_size=32,
        device=f"cuda:{RED}evil", error=f"boom{RED}"))
    assert "boom\\x1b[31m" in _stdout("probes", "list")
    assert "boom\\x1b[31m" in _stdout("probes", "show", "abc123")


def test_pricing_list_escapes_snapshot_cells(advisor_home: Path) -> None:
    aws = [o for o in shipped_catalog().offers if o.cloud is Cloud.AWS]
    path = write_snapshot(advisor_home / "snapshots", Cloud.AWS, aws,
                          captured_at=datetime(2025, 7, 1, tzinfo=UTC))
    header, first, *rest = path.read_text().splitlines(keepends=True)
    first = first.replace(f",{aws[0].instance_type},", f",x{RED}[bold]y,", 1)
    path.write_text("".join([header, first, *rest]))
    out = _stdout("pricing", "list", "--cloud", "aws")
    assert "x\\x1b[31m[bold]y" in out


def test_emoji_codes_in_data_are_shown_as_written() -> None:
    # rich would turn ':fire:' into a flame by default: a stored field is data, not markup
    ProbeStore(default_storage_url()).record(ProbeResult(
        probe_id="def456", offer_key="aws:g5.xlarge:us-east-1:on-demand",
        workload_fingerprint="fp", status=ProbeStatus.ERROR, batch_size=32,
        device="cuda:0", error="step raised :fire: at :thumbs_up:"))
    out = _stdout("probes", "show", "def456")
    assert ":fire: at :thumbs_up:" in out and "\U0001f525" not in out
