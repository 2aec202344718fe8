"""The probe store: every probe's result on one SQLAlchemy storage URL (SQLite or PostgreSQL).

Results are keyed by probe id and indexed by workload fingerprint and offer key, so
``recommend`` finds the measurements of the workload it ranks. Tables are created on first
use. The URL comes from the caller (the CLI passes ``advisor.storage.default_storage_url()``).
The result types load where a result is read or written: ``stored_results`` of a workload
with no probes (most rankings) pays for neither them nor SQLAlchemy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any

from probes.errors import ProbeError
from probes.urls import (
    db_error_line,
    mask_secrets,
    plain_sqlite_file,
    shown_url,
    sqlalchemy_url,
    sqlite_file,
    sqlite_problem,
)

if TYPE_CHECKING:
    from probes.types import ProbeResult, ProbeStatus

__all__ = ["ProbeStore", "most_trustworthy", "stored_results"]

_TABLE = "advisor_probe_results"
_DRIVER_HINT = "; install the PostgreSQL driver: pip install 'advisor[postgres]'"
_MATCHES_SHOWN = 10  # ids an ambiguous-prefix error lists before "and N more"


class ProbeStore:
    """Probe results in the ``advisor_probe_results`` table.

    Thread-safe as far as the SQLAlchemy engine is; one row per probe id (recording the
    same probe again replaces its row, so a ``pending`` can become ``ok``).
    """

    def __init__(self, url: str) -> None:
        if not url or "://" not in url:
            raise ProbeError(f"storage URL {shown_url(url)!r} is not a SQLAlchemy URL; "
                             "use sqlite:///path/advisor.db or postgresql://user@host/db")
        problem = sqlite_problem(url)
        if problem is not None:
            raise ProbeError(f"probe store: {problem}")
        import sqlalchemy as sa

        self.url = url
        self._sa = sa
        try:
            self._engine = sa.create_engine(sqlalchemy_url(url), future=True)
        except (sa.exc.ArgumentError, ImportError) as exc:
            raise ProbeError(f"storage URL {shown_url(url)!r}: {mask_secrets(str(exc))}"
                             f"{_DRIVER_HINT if isinstance(exc, ImportError) else ''}") from exc
        meta = sa.MetaData()
        self._table = sa.Table(
            _TABLE, meta,
            sa.Column("probe_id", sa.String(64), primary_key=True),
            sa.Column("workload_fingerprint", sa.String(64), index=True, nullable=False),
            sa.Column("offer_key", sa.String(200), index=True, nullable=False),
            sa.Column("status", sa.String(20), nullable=False),
            sa.Column("created_at", sa.String(40), nullable=False),
            sa.Column("payload", sa.Text, nullable=False),
        )
        try:
            meta.create_all(self._engine)
        except sa.exc.SQLAlchemyError as exc:
            raise ProbeError(self._problem("cannot open", exc)) from exc

    def close(self) -> None:
        """Close the store's database connections (a later call opens new ones)."""
        self._engine.dispose()

    @property
    def shown_url(self) -> str:
        """The store's URL as it may be shown (password masked)."""
        return shown_url(self.url)

    def _problem(self, what: str, exc: BaseException) -> str:
        return _store_problem(what, self.shown_url, exc)

    def record(self, result: ProbeResult) -> None:
        """Insert or replace the row of ``result.probe_id``."""
        row = {
            "probe_id": result.probe_id, "workload_fingerprint": result.workload_fingerprint,
            "offer_key": result.offer_key, "status": str(result.status),
            "created_at": result.created_at.isoformat(), "payload": result.to_json(),
        }
        table = self._table
        with self._transaction(f"cannot store probe {result.probe_id} in") as conn:
            conn.execute(table.delete().where(table.c.probe_id == result.probe_id))
            conn.execute(table.insert().values(**row))

    def get(self, probe_id: str) -> ProbeResult:
        """The result of one probe; ProbeError naming the id when there is none."""
        table = self._table
        with self._transaction() as conn:
            row = conn.execute(self._sa.select(table.c.payload)
                               .where(table.c.probe_id == probe_id)).first()
        if row is None:
            raise ProbeError(f"no probe with id {probe_id!r}; see 'advisor probes list'")
        return _results([row[0]])[0]

    def resolve_id(self, text: str) -> str:
        """The id of the one probe whose id is ``text`` or starts with it (surrounding spaces
        ignored; an exact id wins). ProbeError, one line, when none or several match."""
        prefix = text.strip()
        if not prefix:
            raise ProbeError("probe id is empty; give an id (or its first characters) "
                             "from 'advisor probes list'")
        table = self._table
        # substr(id) = prefix rather than LIKE: no wildcards, and case-sensitive on every backend.
        starts = self._sa.func.substr(table.c.probe_id, 1, len(prefix)) == prefix
        query = (self._sa.select(table.c.probe_id).where(starts).order_by(table.c.probe_id)
                 .limit(_MATCHES_SHOWN + 1))
        with self._transaction() as conn:
            ids = [str(row[0]) for row in conn.execute(query).all()]
            count = len(ids)
            if count > _MATCHES_SHOWN:
                count = conn.execute(self._sa.select(self._sa.func.count())
                                     .select_from(table).where(starts)).scalar_one()
        if prefix in ids:
            return prefix
        if len(ids) == 1:
            return ids[0]
        if not ids:
            raise ProbeError(f"no probe with id {prefix!r} or an id starting with it; "
                             "see 'advisor probes list'")
        more = f" and {count - _MATCHES_SHOWN} more" if count > _MATCHES_SHOWN else ""
        raise ProbeError(f"probe id {prefix!r} matches {count} probes: "
                         f"{', '.join(ids[:_MATCHES_SHOWN])}{more}; give more characters of the id")

    def list(self, *, fingerprint: str | None = None, offer_key: str | None = None,
             status: ProbeStatus | None = None) -> list[ProbeResult]:
        """Results matching every filter given, oldest first."""
        table = self._table
        query = self._sa.select(table.c.payload).order_by(table.c.created_at, table.c.probe_id)
        if fingerprint is not None:
            query = query.where(table.c.workload_fingerprint == fingerprint)
        if offer_key is not None:
            query = query.where(table.c.offer_key == offer_key)
        if status is not None:
            query = query.where(table.c.status == str(status))
        with self._transaction() as conn:
            rows = conn.execute(query).all()
        return _results(r[0] for r in rows)

    @contextmanager
    def _transaction(self, what: str = "cannot read") -> Iterator[Any]:
        try:
            with self._engine.begin() as conn:
                yield conn
        except self._sa.exc.SQLAlchemyError as exc:
            raise ProbeError(self._problem(what, exc)) from exc


def stored_results(url: str, fingerprint: str | None = None) -> list[ProbeResult]:
    """``ProbeStore(url).list(fingerprint=fingerprint)`` (every workload's when None), only
    reading: a SQLite file is read with the standard library (``recommend`` reads the store on
    every run, and importing SQLAlchemy costs it a quarter of a second or more); other URLs
    through ``ProbeStore``. A SQLite file that does not exist (none is created) or has no
    table holds no results. ProbeError (one line) as ``ProbeStore`` gives."""
    path = sqlite_file(url)
    if path is not None and not path.exists():
        return []  # no store yet: nothing measured, and none created
    path = plain_sqlite_file(url)
    if path is None:
        store = ProbeStore(url)
        try:
            return store.list(fingerprint=fingerprint)
        finally:
            store.close()
    import sqlite3

    where, values = ("", ()) if fingerprint is None else (
        " WHERE workload_fingerprint = ?", (fingerprint,))
    query = f"SELECT payload FROM {_TABLE}{where} ORDER BY created_at, probe_id"
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
            rows = conn.execute(query, values).fetchall()
    except sqlite3.Error as exc:
        if "no such table" in str(exc):
            return []
        raise ProbeError(_store_problem("cannot read", shown_url(url), exc)) from exc
    return _results(payload for (payload,) in rows)


def _results(payloads: Iterable[str]) -> list[ProbeResult]:
    """Stored payloads as results; the result types load here, at the first one read."""
    texts = list(payloads)
    if not texts:
        return []
    from probes.types import ProbeResult

    return [ProbeResult.from_json(text) for text in texts]


def _store_problem(what: str, shown: str, exc: BaseException) -> str:
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


def most_trustworthy(results: Iterable[ProbeResult]) -> list[ProbeResult]:
    """The most trustworthy ``ok`` result per offer key and device, sorted by offer key:
    the newest stable one (its samples/s known within the probe's target), else the one
    with the narrowest confidence interval (newest on ties). Give results oldest first.

    What ``recommend`` uses as ``measured`` throughput (``samples_per_second`` at
    ``batch_size`` per device). Local probes are told apart by device: one measured on the
    laptop's CPU and one on a workstation's GPU are both kept.
    """
    from probes.types import ProbeStatus

    best: dict[tuple[str, str], ProbeResult] = {}
    for result in results:
        if result.status is not ProbeStatus.OK:
            continue
        key = (result.offer_key, result.device)
        held = best.get(key)
        if held is None or _trust(result) >= _trust(held):
            best[key] = result
    return [best[key] for key in sorted(best)]


def _trust(result: ProbeResult) -> tuple[bool, float]:
    """Stable first, then a narrower interval (an unknown width counts as the widest)."""
    width = result.rel_halfwidth if result.rel_halfwidth is not None else math.inf
    return result.stable, -width if not result.stable else 0.0
