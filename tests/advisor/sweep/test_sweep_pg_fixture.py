"""The session's private PostgreSQL server answers SQL and survives a restart."""

from __future__ import annotations

import sqlalchemy

pytestmark = __import__("pytest").mark.postgres


def test_postgres_fixture_serves_and_restarts(postgres_server) -> None:
    engine = sqlalchemy.create_engine(postgres_server.url, pool_pre_ping=True)
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("select 1 + 1")).scalar() == 2
    postgres_server.restart()
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("select 40 + 2")).scalar() == 42
    engine.dispose()
