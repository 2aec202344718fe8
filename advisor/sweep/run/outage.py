"""A short database outage, ridden out: the heartbeat and a running trial's storage calls.

``OutageTolerantStorage`` is Optuna's RDB storage whose heartbeat skips a beat it cannot
record (one warning per outage; the heartbeat thread lives on and the next beat tries
again), and whose calls a running trial makes (report a step, set an attribute or a
parameter, end the trial, read trials and study attributes) are retried with back-off while
the connection is lost, for at most ``outage_s`` seconds; then one ``AdvisorError`` line. A
trial that cannot be ended so stays running in the database and is failed and charged by the
heartbeat rule (``advisor.sweep.run.heartbeat``) once the database is back.

Only connection errors are retried (``is_connection_error``): a refused login, a missing
role or database, and every other database error are raised at once. Creating a trial is not
retried (its insert may have landed before the connection dropped): the worker loop counts
that as a trial cut by a database error (``advisor.sweep.run.runner``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import optuna

from advisor.storage import db_error_line
from advisor.sweep.errors import StoreUnavailable

__all__ = ["OUTAGE_S", "OutageTolerantStorage", "is_connection_error", "is_refused_login",
           "ride_out"]

log = logging.getLogger("advisor.sweep")

OUTAGE_S = 60.0  # how long a running trial's storage calls wait for the database
T = TypeVar("T")

# libpq's words for a login the server refused or cannot serve: waiting does not help
_REFUSED_LOGIN = ("password authentication failed", "authentication failed", "does not exist", "pg_hba.conf",
                  "permission denied for database")
# SQLSTATE classes 28 (invalid authorization) and 3D (invalid catalog name: no such database)
_REFUSED_SQLSTATES = ("28", "3D")


def _driver_error(exc: BaseException) -> BaseException:
    return getattr(exc, "orig", None) or exc


def is_refused_login(exc: BaseException) -> bool:
    """True for a connection the server refused for who asked (wrong password, no such role or
    database, not allowed by pg_hba.conf): retrying cannot help."""
    orig = _driver_error(exc)
    state = getattr(orig, "pgcode", None) or getattr(orig, "sqlstate", None)
    if isinstance(state, str) and state.startswith(_REFUSED_SQLSTATES):
        return True
    text = str(orig).lower()
    return "no password supplied" in text or (
        "fatal" in text and any(words in text for words in _REFUSED_LOGIN))


def _dbapi_error(exc: BaseException) -> BaseException | None:
    """The driver error behind ``exc``: itself, or in its cause chain (Optuna wraps one lost
    at commit in ``StorageInternalError``)."""
    from sqlalchemy.exc import DBAPIError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, DBAPIError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def is_connection_error(exc: BaseException) -> bool:
    """True for a lost or refused connection worth waiting for (a server restarting or briefly
    unreachable), also behind Optuna's ``StorageInternalError``; False for a refused login and
    for every other error."""
    from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

    db = _dbapi_error(exc)
    if not isinstance(db, DBAPIError) or is_refused_login(db):
        return False
    return isinstance(db, OperationalError | InterfaceError) or db.connection_invalidated


def ride_out(what: str, call: Callable[[], T], *, outage_s: float = OUTAGE_S,
             sleep: Callable[[float], None] = time.sleep) -> T:
    """``call()``, retried with back-off (0.2 s doubling to 5 s) while the database connection
    is lost, for at most ``outage_s``; then AdvisorError, one line. One warning per outage."""
    deadline = time.monotonic() + outage_s
    delay, warned = 0.2, False
    while True:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - re-raised unless the connection is lost
            if not is_connection_error(exc):
                raise
            line = db_error_line(_dbapi_error(exc) or exc)
            if time.monotonic() + delay > deadline:
                raise StoreUnavailable(f"storage: {what} failed: the database was unreachable "
                                       f"for {outage_s:.0f} s ({line})") from exc
            if not warned:
                log.warning("storage: %s failed (%s); retrying for up to %.0f s", what, line,
                            outage_s)
                warned = True
            sleep(delay)
            delay = min(delay * 2, 5.0)


_RETRIED = {  # the calls a running trial and the worker loop make, and what they do
    "get_all_trials": "reading the trials",
    "get_best_trial": "reading the best trial",
    "get_study_directions": "reading the study",
    "get_study_system_attrs": "reading the study",
    "get_study_user_attrs": "reading the study's settings",
    "get_trial": "reading a trial",
    "get_trial_id_from_study_id_trial_number": "reading a trial",
    "get_trial_param": "reading a trial parameter",
    "get_trial_system_attrs": "reading a trial",
    "get_trial_user_attrs": "reading a trial",
    "set_trial_intermediate_value": "reporting a trial's step",
    "set_trial_param": "recording a trial parameter",
    "set_trial_state_values": "ending a trial",
    "set_trial_system_attr": "recording a trial attribute",
    "set_trial_user_attr": "recording a trial attribute",
}


def _ridden(name: str, what: str) -> Callable[..., Any]:
    method = getattr(optuna.storages.RDBStorage, name)

    @functools.wraps(method)
    def call(self: OutageTolerantStorage, *args: Any, **kwargs: Any) -> Any:
        return ride_out(what, lambda: method(self, *args, **kwargs), outage_s=self.outage_s)

    return call


class OutageTolerantStorage(optuna.storages.RDBStorage):
    """Optuna's RDB storage that rides out a database outage of up to ``outage_s`` seconds.

    Thread safe as RDBStorage is: the heartbeat thread and the trial's threads share it.
    Raises AdvisorError (one line) when a call still fails after ``outage_s``; other
    database errors as RDBStorage raises them.
    """

    def __init__(self, url: str, *, outage_s: float = OUTAGE_S, **kwargs: Any) -> None:
        if not outage_s >= 0:
            raise ValueError(f"outage_s must be 0 or more, got {outage_s}")
        self.outage_s = outage_s
        self._missed_lock = threading.Lock()
        self._missed_since: dict[int, float] = {}  # trial id -> when its beats began to fail
        # RDBStorage reads the URL as a str.format template ({SCHEMA_VERSION}): a brace in a
        # user name or password would fail there (IndexError) or change the URL
        super().__init__(url.replace("{", "{{").replace("}", "}}"), **kwargs)

    def record_heartbeat(self, trial_id: int) -> None:
        """Record the trial's heartbeat; a beat the database cannot take is skipped (warned
        once per outage), so the heartbeat thread lives through the outage."""
        from sqlalchemy.exc import SQLAlchemyError

        try:
            super().record_heartbeat(trial_id)
        except (SQLAlchemyError, optuna.exceptions.StorageInternalError) as exc:
            with self._missed_lock:
                first = trial_id not in self._missed_since
                self._missed_since.setdefault(trial_id, time.monotonic())
            if first:
                log.warning("storage: heartbeat not recorded (%s); the trial goes on and the "
                            "next beat tries again", db_error_line(_dbapi_error(exc) or exc))
            return
        with self._missed_lock:
            since = self._missed_since.pop(trial_id, None)
        if since is not None:
            log.info("storage: heartbeats recorded again after %.1f s", time.monotonic() - since)


for _name, _what in _RETRIED.items():
    setattr(OutageTolerantStorage, _name, _ridden(_name, _what))
