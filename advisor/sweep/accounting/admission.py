"""Admit new trials across workers so that ``max_trials`` and ``max_usd`` hold exactly.

Without coordination, two workers that check the budget at the same moment both see room
for one more trial and both start one: ``max_trials`` is passed by up to workers - 1 and the
dollar cap by as many expected trial costs. On PostgreSQL, workers take a readers-writer
advisory lock from the budget check until their new trial exists (Optuna created it):

- every worker holds a shared *registration* lock for its life, so a check can count the
  workers (``pg_locks``);
- far from the cap (more room than one trial per worker) the check runs under the shared
  admission lock: workers do not wait for each other, and even if all of them start a trial
  at once the budget holds;
- near the cap the check runs under the exclusive admission lock, which waits until every
  other admitted worker has created its trial, so it counts them all.

The lock is released as soon as the new trial starts. PostgreSQL releases a dead worker's
locks with its connection. Other storages (SQLite: one worker) get a no-op admission.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import optuna

__all__ = ["Admission"]

log = logging.getLogger("advisor.sweep")

_REGISTER_KEY, _ADMIT_KEY = 0x5357_0001, 0x5357_0002


class Admission:
    """One worker's side of the admission lock (a dedicated database connection)."""

    def __init__(self, study: optuna.Study) -> None:
        storage: Any = study._storage  # noqa: SLF001 - Optuna wraps RDBStorage in a cache
        backend = getattr(storage, "_backend", storage)
        engine: Any = getattr(backend, "engine", None)
        self.active = engine is not None and engine.dialect.name == "postgresql"
        self._engine: Any = None
        if self.active:
            import sqlalchemy as sa
            from sqlalchemy.pool import NullPool

            # no pool: closing must end the database session, which releases its locks
            self._engine = sa.create_engine(engine.url, poolclass=NullPool)
        self._study_id = int(study._study_id)  # noqa: SLF001
        self._conn: Any = None
        self._held: str | None = None
        self._lock = threading.Lock()

    def _connection(self) -> Any:
        if self._conn is None:
            conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("SELECT pg_advisory_lock_shared(%s, %s)",
                                 (_REGISTER_KEY, self._study_id))
            self._conn = conn
        return self._conn

    def _drop(self) -> None:
        conn, self._conn, self._held = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # noqa: BLE001 - the connection is gone anyway
                log.debug("admission: closing a broken connection failed", exc_info=True)

    def workers(self) -> int:
        """Workers registered on this study now (at least this one)."""
        if not self.active:
            return 1
        with self._lock:
            try:
                count = self._connection().exec_driver_sql(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND "
                    "classid = %s AND objid = %s AND granted",
                    (_REGISTER_KEY, self._study_id)).scalar()
            except Exception:
                self._drop()
                raise
        return max(int(count or 0), 1)

    def enter(self, *, exclusive: bool) -> None:
        """Take the admission lock (shared or exclusive), dropping one already held."""
        if not self.active:
            return
        self.leave()
        function = "pg_advisory_lock" if exclusive else "pg_advisory_lock_shared"
        with self._lock:
            try:
                self._connection().exec_driver_sql(f"SELECT {function}(%s, %s)",
                                                   (_ADMIT_KEY, self._study_id))
            except Exception:
                self._drop()
                raise
            self._held = "exclusive" if exclusive else "shared"

    def leave(self) -> None:
        """Release the admission lock if held; never raises (a lost connection released it)."""
        with self._lock:
            if self._held is None or self._conn is None:
                return
            function = ("pg_advisory_unlock" if self._held == "exclusive"
                        else "pg_advisory_unlock_shared")
            try:
                self._conn.exec_driver_sql(f"SELECT {function}(%s, %s)",
                                           (_ADMIT_KEY, self._study_id))
                self._held = None
            except Exception:  # noqa: BLE001 - dropping the connection releases its locks
                log.warning("admission: could not release the lock; dropping its connection")
                self._drop()

    def close(self) -> None:
        """Release everything (the registration too) and close the connection."""
        self.leave()
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # noqa: BLE001
                    log.debug("admission: close failed", exc_info=True)
                self._conn = None
            if self._engine is not None:
                self._engine.dispose()
