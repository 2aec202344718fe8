"""Where advisor keeps its state: the user data directory and the one storage URL.

``ADVISOR_HOME`` overrides the directory (tests and CI set it); ``ADVISOR_STORAGE_URL``
overrides the storage URL (SQLite file by default, PostgreSQL for teams and many workers).
``sqlalchemy_url`` binds a plain ``postgresql://`` to the installed driver (psycopg2, else
psycopg 3); the probe store and the sweep's Optuna storage both open URLs through it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

from probes.urls import MASK, sqlalchemy_url

__all__ = ["data_dir", "db_error_line", "default_storage_url", "is_postgres_url",
           "mask_secrets", "profile_cache_dir", "shown_url", "sqlalchemy_url", "url_secrets"]

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_TOKEN_END = re.compile(r"[\s'\"<>]")
# password=... in a libpq key/value connection string or a query parameter
_PASSWORD_PARAM = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>[^\s&;'\"]+)", re.IGNORECASE)
_SHORTEST_LITERAL = 3  # a known password shorter than this is masked only where a URL holds it


def data_dir() -> Path:
    """The user data directory (created on first use)."""
    override = os.environ.get("ADVISOR_HOME")
    if override:
        path = Path(override).expanduser()
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("advisor", appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_storage_url() -> str:
    """The storage URL for probe results and sweeps: env override, else a SQLite file."""
    return os.environ.get("ADVISOR_STORAGE_URL") or f"sqlite:///{data_dir() / 'advisor.db'}"


def is_postgres_url(url: str) -> bool:
    """True for a PostgreSQL SQLAlchemy URL."""
    return url.startswith(("postgresql://", "postgresql+", "postgres://"))


def profile_cache_dir() -> Path:
    """Where workload profiles are cached by fingerprint."""
    path = data_dir() / "profiles"
    path.mkdir(parents=True, exist_ok=True)
    return path


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
    """A storage URL as it may be shown: its password masked, whatever characters it holds."""
    return mask_secrets(_mask_urls(url, whole=True), url=url)


def db_error_line(exc: BaseException, *, url: str | None = None) -> str:
    """The first line of a database error (SQLAlchemy's wrapped driver error), masked (also
    the password of ``url`` wherever the driver echoed it)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return mask_secrets(text.splitlines()[0] if text else type(exc).__name__, url=url)
