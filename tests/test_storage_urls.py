"""One storage URL for the probe store and Optuna: plain postgresql:// bound to the installed
driver; postgresql+psycopg:// and postgresql+psycopg2:// work as written."""

from __future__ import annotations

import importlib.util

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
