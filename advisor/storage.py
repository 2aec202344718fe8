"""Where advisor keeps its state: the user data directory and the one storage URL.

``ADVISOR_HOME`` overrides the directory (tests and CI set it); ``ADVISOR_STORAGE_URL``
overrides the storage URL (SQLite file by default, PostgreSQL for teams and many workers).
``sqlalchemy_url`` binds a plain ``postgresql://`` to the installed driver (psycopg2, else
psycopg 3); the probe store and the sweep's Optuna storage both open URLs through it.
"""

from __future__ import annotations

import os
from pathlib import Path

from probes.urls import sqlalchemy_url

__all__ = ["data_dir", "default_storage_url", "is_postgres_url", "profile_cache_dir",
           "sqlalchemy_url"]


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
