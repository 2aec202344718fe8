"""Reading the probe store for ``recommend`` and ``probes list``: what a command that only
reads pays.

A SQLite store is read with the standard library, never created, and its rows are decoded
into ``ProbeResult`` only when there are some: a run with no probes of its workload loads
neither SQLAlchemy nor the result types. Other URLs go through ``ProbeStore``.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING

from probes.errors import ProbeError
from probes.urls import db_error_line, shown_url, sqlite_database

if TYPE_CHECKING:
    from probes.types import ProbeResult

__all__ = ["TABLE", "store_problem", "stored_results"]

TABLE = "advisor_probe_results"


def stored_results(url: str, fingerprint: str | None = None) -> list[ProbeResult]:
    """``ProbeStore(url).list(fingerprint=fingerprint)`` (every workload's when None), only
    reading: a SQLite file is read with the standard library (``recommend`` reads the store on
    every run, and importing SQLAlchemy costs it a quarter of a second or more); other URLs
    through ``ProbeStore``. A SQLite file that does not exist (none is created) or has no
    table holds no results. ProbeError (one line) as ``ProbeStore`` gives."""
    path = _sqlite_path(url)
    if path is not None and not path.exists():
        return []  # no store yet: nothing measured, and none created
    if path is None or not url.startswith("sqlite:///") or "?" in url:
        from probes.store import ProbeStore

        store = ProbeStore(url)
        try:
            return store.list(fingerprint=fingerprint)
        finally:
            store.close()
    import sqlite3

    where, values = ("", ()) if fingerprint is None else (
        " WHERE workload_fingerprint = ?", (fingerprint,))
    query = f"SELECT payload FROM {TABLE}{where} ORDER BY created_at, probe_id"
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            rows = conn.execute(query, values).fetchall()
    except sqlite3.Error as exc:
        if "no such table" in str(exc):
            return []
        raise ProbeError(store_problem("cannot read", shown_url(url), exc)) from exc
    if not rows:
        return []
    from probes.types import ProbeResult

    return [ProbeResult.from_json(payload) for (payload,) in rows]


def _sqlite_path(url: str) -> Path | None:
    """The file a SQLite URL names (relative, or absolute with four slashes); None for other
    databases, an in-memory one and a ``file:`` URI."""
    database = sqlite_database(url)
    if database is None or database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database).expanduser()


def store_problem(what: str, shown: str, exc: BaseException) -> str:
    """One line: what failed on which store, the database's reason, and what to do."""
    line = db_error_line(exc)
    if "not a database" in line or "malformed" in line:
        return (f"{what} the probe store at {shown}: {line}; the file is damaged "
                "or not a SQLite database: advisor leaves it as it is; move it aside or "
                "set ADVISOR_STORAGE_URL to another file")
    if "readonly" in line or "read-only" in line:
        return (f"{what} the probe store at {shown}: {line}; make the file and its "
                "folder writable or set ADVISOR_STORAGE_URL to a writable database")
    return (f"{what} the probe store at {shown}: {line}; check the URL "
            "(ADVISOR_STORAGE_URL), the server and your access to it")
