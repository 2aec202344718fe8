"""The sweep's storage URL: where it came from, checked before use, opened, and retried.

Errors of SQLAlchemy and the database drivers are translated here into one-line
``AdvisorError`` messages that name what set the URL (``--storage``, sweep.yaml's
``storage``, ``ADVISOR_STORAGE_URL``) and how to fix it, the password masked however it is
written (``advisor.storage.shown_url``). A database that goes away while a sweep runs (a
restart) is waited for by ``with_db_retry`` between trials (``DB_RETRY_S``) and by the
storage itself within a trial (``advisor.sweep.run.outage``). A server that refuses the login
(wrong password, no such role or database) is one line at once; one that cannot be reached
when the sweep opens is retried for ``OPEN_RETRY_S``, each connection attempt given up after
``CONNECT_TIMEOUT_S``.
"""

from __future__ import annotations

import inspect
import logging
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from advisor.errors import AdvisorError
from advisor.storage import (
    db_error_line,
    default_storage_url,
    is_postgres_url,
    shown_url,
    sqlalchemy_url,
)
from advisor.sweep.accounting.budget import grace_period_s
from advisor.sweep.errors import StoreUnavailable
from advisor.sweep.run.outage import OutageTolerantStorage, is_connection_error, is_refused_login
from advisor.sweep.spec.sweep_spec import SweepSpec
from probes import sqlite_problem

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DB_RETRY_S",
    "OPEN_RETRY_S",
    "check_storage_url",
    "db_error_in",
    "open_rdb_storage",
    "shown_url",
    "storage_origin",
    "storage_url_of",
    "with_db_retry",
]

log = logging.getLogger("advisor.sweep")

DB_RETRY_S = 120.0  # between trials: a server restarting mid-sweep
OPEN_RETRY_S = 15.0  # opening the study: a server just restarting, not one that is not there
CONNECT_TIMEOUT_S = 5  # one connection attempt to PostgreSQL (libpq waits forever by default)
_URL_FORMS = "sqlite:////absolute/path/advisor.db or postgresql://USER@HOST/DB"

StaleCallback = Callable[[optuna.Study, FrozenTrial], None]


def storage_url_of(spec: SweepSpec, override: str | None = None) -> str:
    """The storage URL: the command-line override, sweep.yaml's, else the default SQLite file."""
    return override or spec.storage or default_storage_url()


def storage_origin(spec: SweepSpec | None, override: str | None = None) -> str:
    """What set the storage URL, named as the user would change it."""
    if override:
        return "--storage"
    if spec is not None and spec.storage:
        return "storage (sweep.yaml)"
    if os.environ.get("ADVISOR_STORAGE_URL"):
        return "ADVISOR_STORAGE_URL"
    return "storage (the default SQLite file under ADVISOR_HOME)"


def check_storage_url(url: str, *, origin: str) -> None:
    """Raise AdvisorError (naming ``origin``) unless ``url`` is a database URL we can open.

    Catches what would otherwise surface as a SQLAlchemy traceback: text that is not a URL,
    an unknown database kind, and a SQLite file whose folder does not exist.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(sqlalchemy_url(url))
    except ArgumentError:
        raise AdvisorError(f"{origin}: {shown_url(url)!r} is not a database URL; write "
                           f"{_URL_FORMS}") from None
    try:
        parsed.get_dialect()
    except ArgumentError:
        raise AdvisorError(f"{origin}: unknown database kind {parsed.drivername!r} in "
                           f"{shown_url(url)!r}; write {_URL_FORMS}") from None
    problem = sqlite_problem(url)
    if problem is not None:
        raise AdvisorError(f"{origin}: {problem}")


def _callback_kwargs(on_stale: StaleCallback | None) -> dict[str, Any]:
    if on_stale is None:
        return {}
    # renamed in Optuna 4.9 (the old name warns); optuna>=4.0,<6 is supported (pyproject.toml)
    names = inspect.signature(optuna.storages.RDBStorage).parameters
    key = ("heartbeat_stale_trial_callback" if "heartbeat_stale_trial_callback" in names
           else "failed_trial_callback")
    return {key: on_stale}


def open_rdb_storage(url: str, *, origin: str, heartbeat_s: int | None = None,
                     on_stale: StaleCallback | None = None) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage at ``url`` (heartbeats every ``heartbeat_s`` when given).

    A trial whose heartbeat is older than ``grace_period_s(heartbeat_s)`` counts as stale;
    ``on_stale`` runs for each trial this process fails for it. Raises AdvisorError naming
    ``origin`` for a bad URL or a database that refuses the connection.
    """
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    check_storage_url(url, origin=origin)
    heartbeat: dict[str, Any] = {}
    if heartbeat_s is not None:
        heartbeat = {"heartbeat_interval": heartbeat_s, "grace_period": grace_period_s(heartbeat_s),
                     **_callback_kwargs(on_stale)}
    try:
        with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return OutageTolerantStorage(sqlalchemy_url(url), engine_kwargs=_engine_kwargs(url),
                                         **heartbeat)
    except (ImportError, ValueError, ArgumentError) as exc:
        raise AdvisorError(f"{origin}: cannot open {shown_url(url)!r}: "
                           f"{db_error_line(exc, url=url)}") from exc
    except SQLAlchemyError as exc:
        line = db_error_line(exc, url=url)
        if is_refused_login(exc):
            raise AdvisorError(f"{origin}: {shown_url(url)!r} refused the login: {line}; fix the "
                               "user, password (or PGPASSWORD) or database name") from None
        # a server may come back (StoreUnavailable); a local file that cannot be opened will not
        kind = AdvisorError if url.startswith("sqlite") else StoreUnavailable
        error = kind(f"{origin}: cannot open {shown_url(url)!r}: {line}; "
                     "check the URL, the server and your access to it")
        if not url.startswith("sqlite"):
            raise error from exc  # a server may be restarting: with_db_retry sees the cause
    raise error  # a local file will not come back: nothing in the chain to retry


def _engine_kwargs(url: str) -> dict[str, Any]:
    """SQLAlchemy engine options: a PostgreSQL session writes and reads heartbeats (its
    ``now()``) in UTC, whatever the server's or the client's time zone, as SQLite does."""
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if is_postgres_url(url):
        from sqlalchemy.engine import make_url

        query = make_url(sqlalchemy_url(url)).query
        given = query.get("options", "")
        options = " ".join([*([given] if isinstance(given, str) and given else []),
                            "-c timezone=UTC"])
        kwargs["connect_args"] = {"options": options}
        if "connect_timeout" not in query:  # the URL's own wins
            kwargs["connect_args"]["connect_timeout"] = CONNECT_TIMEOUT_S
    return kwargs


def db_error_in(exc: BaseException) -> BaseException | None:
    """The database error behind ``exc`` (itself or in its cause/context chain), if any.

    Optuna can mask a lost connection behind another error raised while it cleans up.
    """
    from sqlalchemy.exc import DBAPIError, OperationalError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OperationalError | DBAPIError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


_HEAL_HINT = ("a local SQLite file that is read-only, damaged or gone does not come back by "
              "waiting: make it and its folder writable, or give another --storage")


def _will_not_heal(db_error: BaseException) -> bool:
    """True for a SQLite error other than a lock: retrying a read-only or damaged file is
    pointless (a server that restarts is worth waiting for; a locked file is released)."""
    import sqlite3

    orig = getattr(db_error, "orig", None)
    return isinstance(orig, sqlite3.Error) and "locked" not in str(orig)


def with_db_retry(what: str, call: Callable[[], Any], *, retry_s: float = DB_RETRY_S,
                  sleep: Callable[[float], None] = time.sleep) -> Any:
    """Call, retrying with back-off (0.2 s doubling up to 5 s) while the database is
    unreachable (e.g. restarting); AdvisorError after ``retry_s``, at once for a refused login
    or a file that will not heal, other errors as they are. One warning per wait."""
    # A loop, not tenacity: its three outcomes come from one database error here; tenacity
    # would split them into a retry predicate, a before-sleep hook and a translation after.
    deadline = time.monotonic() + retry_s
    delay, warned = 0.2, False
    while True:
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - re-raised unless a database error is behind it
            db_error = db_error_in(exc)
            if db_error is None:
                raise
            first_line = db_error_line(db_error)
            if _will_not_heal(db_error):
                raise AdvisorError(f"storage: {what} failed: {first_line}; "
                                   f"{_HEAL_HINT}") from exc
            if is_refused_login(db_error):
                raise AdvisorError(f"storage: {what} failed: the server refused the login: "
                                   f"{first_line}; fix the user, password (or PGPASSWORD) or "
                                   "database name") from None
            if not is_connection_error(db_error):
                raise
            if time.monotonic() + delay > deadline:
                raise StoreUnavailable(f"storage: {what} failed for {retry_s:.0f} s: "
                                   f"{first_line}") from exc
            if not warned:
                log.warning("storage: %s failed (%s); retrying for up to %.0f s", what,
                            first_line, retry_s)
                warned = True
            sleep(delay)
            delay = min(delay * 2, 5.0)
