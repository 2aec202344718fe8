"""Credentials never shown: the one place that masks passwords in URLs and in messages.

Storage URLs (``postgresql://user:secret@host/db``) travel into error messages, logs,
status lines and reports; everything that shows one goes through ``shown_url`` or
``mask_secrets`` (``advisor.storage`` re-exports them: this is the one implementation). A
password is masked however it is written: percent-encoded or raw, holding ``/`` or ``@``,
after a user name holding ``@`` (Azure's ``user@server``); given the URL, also wherever a
driver echoes it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import unquote

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MASK", "db_error_line", "mask_secrets", "plain_sqlite_file", "shown_url", "sqlalchemy_url",
           "sqlite_database", "sqlite_file", "sqlite_problem", "url_secrets"]

MASK = "***"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_TOKEN_END = re.compile(r"[\s'\"<>]")  # where a URL quoted in a message ends
# password=... in a libpq key/value connection string or a query parameter
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>[^\s&;'\"]+)", re.IGNORECASE)
_SHORTEST_LITERAL = 3  # a known password shorter than this is masked only where a URL holds it


def _password_span(rest: str) -> tuple[int, int] | None:
    """Where the password lies in ``rest`` (a URL after ``scheme://``), as (start, end).

    As SQLAlchemy reads a URL, the user name ends at the first ``:`` or ``/`` (it may hold an
    ``@``, as Azure writes ``user@server``), and the password runs from that ``:`` to an
    ``@``; we mask to the last ``@``, so a password holding ``@`` or ``/`` is masked whole.
    """
    colon = next((i for i, ch in enumerate(rest) if ch in ":/"), None)
    if colon is None or rest[colon] != ":":
        return None
    at = rest.rfind("@", colon + 1)
    return None if at < 0 else (colon + 1, at)


def _mask_urls(text: str, *, whole: bool) -> str:
    """``text`` with the password of each URL in it masked: a URL runs to the end of ``text``
    when ``whole``, else to the first space, quote or angle bracket."""
    out, pos = [], 0
    for match in _SCHEME.finditer(text):
        if match.start() < pos:
            continue
        start = match.end()
        end = len(text)
        if not whole:
            stop = _TOKEN_END.search(text, start)
            end = stop.start() if stop else len(text)
        span = _password_span(text[start:end])
        if span is not None:
            out.append(text[pos:start + span[0]])
            out.append(MASK)
            pos = start + span[1]
    out.append(text[pos:])
    return "".join(out)


def url_secrets(url: str) -> tuple[str, ...]:
    """The password of a storage URL as written and as the driver receives it (unquoted)."""
    rest = url.partition("://")[2]
    span = _password_span(rest)
    if span is None:
        return ()
    written = rest[span[0]:span[1]]
    return tuple(s for s in dict.fromkeys((written, unquote(written))) if s)


def mask_secrets(text: str, *, url: str | None = None) -> str:
    """``text`` with every URL password and ``password=...`` value replaced by ``***``, and
    the password of ``url`` (when given) wherever else it appears."""
    masked = _PASSWORD_PARAM.sub(lambda m: f"{m.group('head')}{MASK}", _mask_urls(text, whole=False))
    for secret in url_secrets(url) if url else ():
        if len(secret) >= _SHORTEST_LITERAL:
            masked = masked.replace(secret, MASK)
    return masked


def shown_url(url: str) -> str:
    """A storage URL as it may be shown: its password masked, whatever characters it holds
    (a ``/`` or ``@`` in it, an ``@`` in the user name)."""
    return mask_secrets(_mask_urls(url, whole=True), url=url)


_DRIVERS = ("psycopg2", "psycopg")  # in order of preference for a plain postgresql://
_SQLITE_HEADER = b"SQLite format 3\x00"
_URL_FORMS = "sqlite:////absolute/path/advisor.db or postgresql://USER@HOST/DB"


def sqlalchemy_url(url: str) -> str:
    """``url`` as SQLAlchemy is given it: a SQLite file under ``~`` at its expanded absolute
    path (what ``sqlite_file`` and ``sqlite_problem`` look at; SQLAlchemy would open a
    folder named ``~``), and a plain ``postgresql://`` (or ``postgres://``) bound to an
    installed driver.

    SQLAlchemy 2.1 reads ``postgresql://`` as psycopg 3 and 2.0 as psycopg2, so the same URL
    fails with one driver installed and not the other. We bind it to psycopg2 where it is
    installed (the driver the sweep's restart and pool handling is tested with; psycopg 3
    warns about pooled connections Optuna leaves open), else to psycopg 3. URLs naming a
    driver (``postgresql+psycopg://``) and other databases are returned unchanged.
    """
    scheme, sep, rest = url.partition("://")
    database = sqlite_database(url)
    if database is not None and database.startswith("~"):
        path = sqlite_file(url)
        _, mark, options = rest.partition("?")
        return url if path is None else f"{scheme}:///{path}{mark}{options}"
    if not sep or scheme not in ("postgresql", "postgres"):
        return url
    import importlib.util

    for module in _DRIVERS:
        if importlib.util.find_spec(module) is not None:
            return f"postgresql+{module}://{rest}"
    return url


def sqlite_database(url: str) -> str | None:
    """The database a SQLite URL names, options cut (``sqlite:///rel.db`` -> ``rel.db``,
    ``sqlite:////abs.db`` -> ``/abs.db``, ``sqlite://`` -> ``""``); None for other databases."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.startswith("sqlite"):
        return None
    return (rest[1:] if rest.startswith("/") else rest).split("?")[0]


def sqlite_file(url: str) -> Path | None:
    """The file a SQLite URL names (relative, absolute with four slashes, ``~`` expanded as
    ``sqlalchemy_url`` does); None for other databases, an in-memory one and a ``file:`` URI
    (SQLite reads its options itself). The one rule for which file a store is."""
    from pathlib import Path

    database = sqlite_database(url)
    if (database is None or database in ("", ":memory:") or "mode=memory" in url
            or database.startswith("file:")):
        return None
    return Path(database).expanduser()


def plain_sqlite_file(url: str) -> Path | None:
    """``sqlite_file`` of a plain ``sqlite:///PATH`` URL (no driver, no options: a file the
    standard library's ``sqlite3`` reads as SQLAlchemy would open it); None for any other URL.
    Readers that skip SQLAlchemy for speed take only these."""
    plain = url.startswith("sqlite:///") and "?" not in url
    return sqlite_file(url) if plain else None


def sqlite_problem(url: str) -> str | None:
    """Why the SQLite URL ``url`` cannot keep advisor's state, in one line; None when it can
    (or when ``url`` is not SQLite). Looks without opening: an in-memory database (gone when
    the command ends), a missing folder, and an existing file that is not a SQLite database
    (which advisor names and never overwrites)."""
    database = sqlite_database(url)
    if database is None:
        return None
    if database in ("", ":memory:") or "mode=memory" in url:
        return (f"{url!r} is an in-memory SQLite database: it is gone when the command ends "
                f"and each connection sees its own; give a file: {_URL_FORMS}")
    path = sqlite_file(url)
    if path is None:  # a file: URI
        return None
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


def db_error_line(exc: BaseException, *, url: str | None = None) -> str:
    """The first line of a database error (SQLAlchemy's wrapped driver error), masked (also
    the password of ``url`` wherever the driver echoed it)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return mask_secrets(text.splitlines()[0] if text else type(exc).__name__, url=url)
