"""Credentials never shown: the one place that masks passwords in URLs and in messages.

Storage URLs (``postgresql://user:secret@host/db``) travel into error messages, logs,
status lines and reports; everything that shows one goes through ``shown_url`` or
``mask_secrets``.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "db_error_line", "mask_secrets", "shown_url", "sqlalchemy_url", "sqlite_problem"]

MASK = "***"
# scheme://user:password@  (the password may hold anything but '@', '/' and whitespace)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*):(?P<secret>[^@/\s]+)@")
# password=... in a libpq key/value connection string or a query parameter
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>[^\s&;'\"]+)", re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """``text`` with every URL password and ``password=...`` value replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:{MASK}@", text)
    return _PASSWORD_PARAM.sub(lambda m: f"{m.group('head')}{MASK}", text)


def shown_url(url: str) -> str:
    """A URL as it may be shown: its password (if any) masked."""
    return mask_secrets(url)


_DRIVERS = ("psycopg2", "psycopg")  # in order of preference for a plain postgresql://
_SQLITE_HEADER = b"SQLite format 3\x00"
_URL_FORMS = "sqlite:////absolute/path/advisor.db or postgresql://USER@HOST/DB"


def sqlalchemy_url(url: str) -> str:
    """``url`` with a plain ``postgresql://`` (or ``postgres://``) bound to an installed driver.

    SQLAlchemy 2.1 reads ``postgresql://`` as psycopg 3 and 2.0 as psycopg2, so the same URL
    fails with one driver installed and not the other. We bind it to psycopg2 where it is
    installed (the driver the sweep's restart and pool handling is tested with; psycopg 3
    warns about pooled connections Optuna leaves open), else to psycopg 3. URLs naming a
    driver (``postgresql+psycopg://``) and other databases are returned unchanged.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("postgresql", "postgres"):
        return url
    import importlib.util

    for module in _DRIVERS:
        if importlib.util.find_spec(module) is not None:
            return f"postgresql+{module}://{rest}"
    return url


def sqlite_problem(url: str) -> str | None:
    """Why the SQLite URL ``url`` cannot keep advisor's state, in one line; None when it can
    (or when ``url`` is not SQLite). Looks without opening: an in-memory database (gone when
    the command ends), a missing folder, and an existing file that is not a SQLite database
    (which advisor names and never overwrites)."""
    from pathlib import Path

    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.startswith("sqlite"):
        return None
    database = rest[1:].split("?")[0] if rest.startswith("/") else rest.split("?")[0]
    if database in ("", ":memory:") or "mode=memory" in url:
        return (f"{url!r} is an in-memory SQLite database: it is gone when the command ends "
                f"and each connection sees its own; give a file: {_URL_FORMS}")
    if database.startswith("file:"):
        return None
    path = Path(database).expanduser()
    folder = path.parent
    if not folder.is_dir():
        problem = "is not a folder" if folder.exists() else "does not exist"
        return (f"the folder {folder} of the SQLite file in {shown_url(url)!r} {problem}; "
                f"create it (mkdir -p {folder}) or give another path")
    if path.is_dir():
        return f"{path} (in {shown_url(url)!r}) is a folder, not a SQLite file; give a file path"
    try:
        with path.open("rb") as file:
            head = file.read(len(_SQLITE_HEADER))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read the SQLite file {path}: {exc.strerror or exc}"
    if head and head != _SQLITE_HEADER:
        return (f"{path} is not a SQLite database (truncated, or another kind of file); "
                "advisor leaves it as it is: move it aside or give another path")
    return None


def db_error_line(exc: BaseException) -> str:
    """The first line of a database error (SQLAlchemy's wrapped driver error), masked."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return mask_secrets(text.splitlines()[0] if text else type(exc).__name__)
