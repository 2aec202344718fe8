"""One storage URL for the probe store and Optuna: plain postgresql:// bound to the installed
driver; postgresql+psycopg:// and postgresql+psycopg2:// work as written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from advisor.storage import sqlalchemy_url
from advisor.sweep.run.database import open_rdb_storage
from probes.store import ProbeStore
from probes.urls import sqlite_problem

DRIVERS = ["psycopg", "psycopg2"]


@pytest.mark.parametrize(("installed", "url", "expected"), [
    # both drivers: psycopg2, what the sweep's restart handling is tested with
    ({"psycopg", "psycopg2"}, "postgresql://a@h/db", "postgresql+psycopg2://a@h/db"),
    # only psycopg 3 (SQLAlchemy 2.1's own default)
    ({"psycopg"}, "postgresql://a@h/db", "postgresql+psycopg://a@h/db"),
    # Heroku-style scheme
    ({"psycopg"}, "postgres://a@h/db", "postgresql+psycopg://a@h/db"),
    # a driver named in the URL is kept
    ({"psycopg2"}, "postgresql+psycopg://a@h/db", "postgresql+psycopg://a@h/db"),
    # no driver at all: unchanged, SQLAlchemy's error names the missing module
    (set(), "postgresql://a@h/db", "postgresql://a@h/db"),
    # not PostgreSQL
    ({"psycopg"}, "sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
])
def test_plain_postgresql_url_is_bound_to_an_installed_driver(
        installed: set[str], url: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: (
        (real(name) if name in installed else None) if name in DRIVERS else real(name, *a)))
    assert sqlalchemy_url(url) == expected


@pytest.mark.parametrize(("url", "words"), [
    ("sqlite://", "in-memory"),                          # nothing would survive the command
    ("sqlite:///:memory:", "in-memory"),
    ("sqlite:////nonexistent/dir/x.db", "does not exist"),
    ("postgresql://u:pw@h/db", None),                    # not SQLite: nothing to say
])
def test_sqlite_problem(url: str, words: str | None) -> None:
    problem = sqlite_problem(url)
    assert (problem is None) if words is None else (words in (problem or ""))


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql", "postgresql+psycopg", "postgresql+psycopg2"])
def test_every_postgresql_scheme_opens_probe_store_and_optuna(scheme: str,
                                                              postgres_url: str) -> None:
    url = postgres_url.replace("postgresql://", f"{scheme}://", 1)
    store = ProbeStore(url)
    try:
        assert isinstance(store.list(), list)
    finally:
        store.close()
    storage = open_rdb_storage(url, origin="--storage")
    try:
        assert isinstance(storage.get_all_studies(), list)
    finally:
        storage.engine.dispose()


@pytest.mark.parametrize(("url", "expected"), [
    ("sqlite:///rel/x.db", "rel/x.db"),
    ("sqlite:////abs/x.db", "/abs/x.db"),
    ("sqlite:///x.db?timeout=5", "x.db"),
    ("sqlite://", None),
    ("sqlite:///:memory:", None),
    ("sqlite:///file:x.db?mode=memory&uri=true", None),
    ("sqlite:///file:x.db?uri=true", None),  # a URI: SQLite reads its own options
    ("postgresql://u@h/db", None),
])
def test_sqlite_file_is_one_rule(url: str, expected: str | None) -> None:
    from advisor.storage import sqlite_file as storage_file
    from probes.urls import sqlite_file

    assert sqlite_file(url) == (None if expected is None else Path(expected))
    assert storage_file is sqlite_file  # the sweep and the probe store share it


def test_a_home_relative_sqlite_file_is_opened_where_it_is_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sqlite:///~/x.db`` is the file under the home folder for every reader: the
    checks, the probe store (SQLAlchemy), Optuna's storage and the read-only lister; no
    folder named ``~`` appears in the working directory."""
    from probes.store import stored_results
    from probes.urls import sqlite_file

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    url = "sqlite:///~/probes.db"
    assert sqlite_file(url) == home / "probes.db"
    assert sqlalchemy_url(url) == f"sqlite:///{home / 'probes.db'}"
    assert sqlalchemy_url(f"{url}?timeout=5") == f"sqlite:///{home / 'probes.db'}?timeout=5"
    assert sqlite_problem(url) is None
    assert stored_results(url) == []  # nothing there yet, and nothing created
    assert not (home / "probes.db").exists()
    store = ProbeStore(url)
    try:
        assert store.list() == []
    finally:
        store.close()
    assert (home / "probes.db").is_file()
    open_rdb_storage("sqlite:///~/study.db", origin="--storage")
    assert (home / "study.db").is_file()
    assert not (work / "~").exists()
    monkeypatch.setenv("HOME", str(tmp_path / "missing"))
    assert "does not exist" in (sqlite_problem(url) or "")
