"""ProbeStore on SQLite (and PostgreSQL): record, get, list, latest per offer, measured."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from probe_helpers import make_request, ok_result

from probes.errors import ProbeError
from probes.store import ProbeStore, most_trustworthy, stored_results
from probes.types import ProbeResult, ProbeStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def measured_throughput(store: ProbeStore, fingerprint: str) -> list[ProbeResult]:
    """``most_trustworthy`` of the workload's stored ``ok`` results (what ``recommend`` uses)."""
    return most_trustworthy(store.list(fingerprint=fingerprint, status=ProbeStatus.OK))


def _filled(store: ProbeStore) -> None:
    first = replace(ok_result(make_request("a1", "aws:g5.xlarge:us-east-1"), 100.0), created_at=T0)
    newer = replace(ok_result(make_request("a2", "aws:g5.xlarge:us-east-1"), 110.0),
                    created_at=T0 + timedelta(hours=1))
    oom = replace(ProbeResult.failure(make_request("a3", "aws:g4dn.xlarge:us-east-1"),
                                      ProbeStatus.OOM, "does not fit"),
                  created_at=T0 + timedelta(hours=2))
    local = replace(ok_result(make_request("l1", "local"), 20.0), created_at=T0)
    other = replace(ok_result(make_request("o1", "local"), 5.0), workload_fingerprint="other")
    for result in (first, newer, oom, local, other):
        store.record(result)


def test_sqlite_store_is_created_on_first_use(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    ProbeStore(url).record(ok_result(make_request()))
    assert ProbeStore(url).get("p1").samples_per_second == 123.0


def test_measured_throughput_is_the_newest_ok_result_per_offer(tmp_path: Path) -> None:
    store = ProbeStore(f"sqlite:///{tmp_path / 'x.db'}")
    _filled(store)  # the newer a2 replaces a1; the OOM offer is no measurement
    measured = measured_throughput(store, "fp-tiny")
    assert [(r.offer_key, r.samples_per_second) for r in measured] == [
        ("aws:g5.xlarge:us-east-1", 110.0), ("local", 20.0)]


def test_recording_again_replaces_the_row(tmp_path: Path) -> None:
    store = ProbeStore(f"sqlite:///{tmp_path / 'x.db'}")
    request = make_request()
    store.record(ProbeResult.failure(request, ProbeStatus.ERROR, "interrupted"))
    store.record(ok_result(request))
    assert [r.status for r in store.list()] == [ProbeStatus.OK]


def test_unknown_probe_id_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ProbeError, match="advisor probes list"):
        ProbeStore(f"sqlite:///{tmp_path / 'x.db'}").get("nope")


def test_bad_url_is_a_probe_error() -> None:
    with pytest.raises(ProbeError, match="SQLAlchemy URL"):
        ProbeStore("advisor.db")


@pytest.mark.postgres
def test_postgres_store(postgres_url: str) -> None:
    store = ProbeStore(postgres_url)
    _filled(store)
    assert store.get("a2").samples_per_second == 110.0
    assert len(measured_throughput(store, "fp-tiny")) == 2


def test_measured_throughput_prefers_a_stable_probe_to_a_newer_noisy_one(tmp_path: Path) -> None:
    store = ProbeStore(f"sqlite:///{tmp_path / 'x.db'}")
    key = "aws:g5.xlarge:us-east-1"

    def probe(probe_id: str, sps: float, hours: int, *, stable: bool, width: float | None,
              ) -> ProbeResult:
        return replace(ok_result(make_request(probe_id, key), sps), stable=stable,
                       rel_halfwidth=width, created_at=T0 + timedelta(hours=hours))

    store.record(probe("s1", 100.0, 0, stable=True, width=0.07))
    store.record(probe("n1", 60.0, 1, stable=False, width=0.45))   # newer, but noisy
    assert [r.probe_id for r in measured_throughput(store, "fp-tiny")] == ["s1"]
    store.record(probe("s2", 104.0, 2, stable=True, width=0.01))   # newer and stable
    assert [r.probe_id for r in measured_throughput(store, "fp-tiny")] == ["s2"]


def test_among_noisy_probes_the_narrowest_interval_wins(tmp_path: Path) -> None:
    store = ProbeStore(f"sqlite:///{tmp_path / 'x.db'}")
    key = "aws:g5.xlarge:us-east-1"
    for hours, (probe_id, width) in enumerate([("w1", 0.2), ("w2", 0.5), ("w3", None)]):
        store.record(replace(ok_result(make_request(probe_id, key)), stable=False,
                             rel_halfwidth=width, created_at=T0 + timedelta(hours=hours)))
    assert [r.probe_id for r in measured_throughput(store, "fp-tiny")] == ["w1"]


def test_workload_results_read_sqlite_as_the_store_lists_them(tmp_path: Path) -> None:
    # recommend reads SQLite with the standard library: the same results, oldest first
    url = f"sqlite:///{tmp_path / 'x.db'}"
    store = ProbeStore(url)
    _filled(store)
    for fingerprint in ("fp-tiny", "other", "none"):
        assert stored_results(url, fingerprint) == store.list(fingerprint=fingerprint)
    assert [r.probe_id for r in stored_results(url, "fp-tiny")] == ["a1", "l1", "a2", "a3"]


def test_workload_results_of_a_file_without_the_table_are_none(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()  # a SQLite file, no tables yet
    assert stored_results(f"sqlite:///{path}", "fp-tiny") == []
    assert path.stat().st_size == 0  # read only: nothing created


def test_workload_results_of_a_damaged_file_name_it(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)  # header, then garbage
    with pytest.raises(ProbeError, match=r"cannot read the probe store at .*x\.db.*damaged"):
        stored_results(f"sqlite:///{path}", "fp-tiny")
    assert path.read_bytes()[:16] == b"SQLite format 3\x00"


def test_workload_results_of_other_urls_go_through_the_store(tmp_path: Path) -> None:
    # a URL with options is SQLAlchemy's to read
    url = f"sqlite:///{tmp_path / 'x.db'}?timeout=5"
    _filled(ProbeStore(url))
    assert [r.probe_id for r in stored_results(url, "other")] == ["o1"]


def test_workload_results_of_a_store_not_yet_made_are_none_and_make_none(tmp_path: Path
                                                                          ) -> None:
    for url in (f"sqlite:///{tmp_path / 'x.db'}", f"sqlite:///{tmp_path / 'x.db'}?timeout=5"):
        assert stored_results(url, "fp-tiny") == []
    assert not (tmp_path / "x.db").exists()
