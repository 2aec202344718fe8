"""ProbeStore.resolve_id: a probe id from a unique prefix, the exact id first, one-line errors."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from probe_helpers import make_request, ok_result

from probes.errors import ProbeError
from probes.store import ProbeStore

IDS = ("8812fb604c01", "8812aa000000", "77ab00000000", "abc", "abc123")


@pytest.fixture
def store(tmp_path: Path) -> ProbeStore:
    store = ProbeStore(f"sqlite:///{tmp_path / 'x.db'}")
    for probe_id in IDS:
        store.record(ok_result(make_request(probe_id)))
    return store


@pytest.mark.parametrize(("text", "probe_id"), [
    ("8812f", "8812fb604c01"),           # unique prefix
    ("77", "77ab00000000"),              # short unique prefix
    ("8812fb604c01", "8812fb604c01"),    # the whole id
    ("abc", "abc"),                      # an exact id wins over the longer ids it prefixes
    (" 8812f ", "8812fb604c01"),         # pasted with spaces
])
def test_resolve_id_finds_one_probe(store: ProbeStore, text: str, probe_id: str) -> None:
    assert store.resolve_id(text) == probe_id


def test_ambiguous_prefix_lists_the_matches_on_one_line(store: ProbeStore) -> None:
    with pytest.raises(ProbeError) as info:
        store.resolve_id("8812")
    message = str(info.value)
    assert "8812aa000000" in message and "8812fb604c01" in message and "\n" not in message


def test_many_matches_are_listed_briefly(tmp_path: Path) -> None:
    store = ProbeStore(f"sqlite:///{tmp_path / 'x.db'}")
    for n in range(30):
        store.record(ok_result(make_request(f"ff{n:010d}")))
    message = str(pytest.raises(ProbeError, store.resolve_id, "ff").value)
    assert "30 probes" in message and "ff0000000000" in message and "ff0000000029" not in message


@pytest.mark.parametrize("text", [
    "99",        # no probe starts with it
    "8812%",     # LIKE wildcards are plain characters
    "8_12",
    "8812FB",    # ids are compared exactly (lower-case hex)
])
def test_unmatched_prefix_names_the_fix(store: ProbeStore, text: str) -> None:
    with pytest.raises(ProbeError, match="advisor probes list"):
        store.resolve_id(text)


def test_empty_id_is_refused(store: ProbeStore) -> None:
    with pytest.raises(ProbeError, match="probe id"):
        store.resolve_id("  ")


@pytest.mark.postgres
def test_postgres_resolves_like_sqlite(postgres_url: str) -> None:
    store = ProbeStore(postgres_url)
    run = uuid.uuid4().hex[:8]          # the session's database is shared: ids of this run only
    for suffix in ("fb604c01", "aa000000", "AB000000"):
        store.record(ok_result(make_request(run + suffix)))
    assert store.resolve_id(run + "f") == run + "fb604c01"
    assert store.resolve_id(run + "a") == run + "aa000000"          # case-sensitive, like sqlite
    for ambiguous_or_missing in (run, run + "%", run + "_b"):
        with pytest.raises(ProbeError):
            store.resolve_id(ambiguous_or_missing)
