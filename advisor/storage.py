"""Where advisor keeps its state: the user data directory and the one storage URL.

``ADVISOR_HOME`` overrides the directory (tests and CI set it); ``ADVISOR_STORAGE_URL``
overrides the storage URL (SQLite file by default, PostgreSQL for teams and many workers).
``sqlalchemy_url`` binds a plain ``postgresql://`` to the installed driver (psycopg2, else
psycopg 3); the probe store and the sweep's Optuna storage both open URLs through it. The
password masking (``shown_url``, ``mask_secrets``, ``db_error_line``) is ``probes.urls``',
re-exported here: the probe store and the sweep show URLs through the same code.
"""

from __future__ import annotations

import os
from pathlib import Path

from advisor.errors import AdvisorError

# the masking lives in the lower layer (the probe store shows URLs too): one implementation
from probes import (
    MASK,
    db_error_line,
    mask_secrets,
    plain_sqlite_file,
    shown_url,
    sqlalchemy_url,
    sqlite_file,
    url_secrets,
)

__all__ = ["MASK", "data_dir", "db_error_line", "default_storage_url", "is_postgres_url",
           "mask_secrets", "plain_sqlite_file", "profile_cache_dir", "shown_url", "sqlalchemy_url",
           "sqlite_file", "url_secrets"]


def data_dir() -> Path:
    """The user data directory (created on first use); AdvisorError, naming ADVISOR_HOME,
    when it is a file or cannot be created."""
    override = os.environ.get("ADVISOR_HOME")
    if override:
        path = Path(override).expanduser()
    else:
        from platformdirs import user_data_dir

        path = Path(user_data_dir("advisor", appauthor=False))
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        where = f"ADVISOR_HOME {path}" if override else f"advisor's data folder {path}"
        problem = ("is a file, not a folder" if path.exists() and not path.is_dir()
                   else f"cannot be created ({exc.strerror or exc})")
        raise AdvisorError(f"{where} {problem}; set ADVISOR_HOME to a folder advisor may "
                           "write (it is created if missing)") from None
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
