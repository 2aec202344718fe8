"""with_db_retry waits out an unreachable database and passes other errors through."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy.exc import OperationalError

from advisor.sweep.run.database import with_db_retry


class _Flaky:
    """Fails ``failures`` times with a lost connection, then answers 42."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0

    def __call__(self) -> int:
        self.calls += 1
        if self.calls <= self.failures:
            raise OperationalError("SELECT 1", {}, ConnectionError("server closed the connection"))
        return 42


def test_lost_connection_is_retried_with_doubling_waits(caplog: pytest.LogCaptureFixture) -> None:
    sleeps: list[float] = []
    with caplog.at_level(logging.WARNING, logger="advisor.sweep"):
        assert with_db_retry("reading totals", _Flaky(3), sleep=sleeps.append) == 42
    assert sleeps == pytest.approx([0.2, 0.4, 0.8])
    # one warning per wait, not one per try
    assert [r.getMessage() for r in caplog.records] == [
        "storage: reading totals failed (server closed the connection); retrying for up to 120 s"]


def test_waits_stop_growing_at_five_seconds() -> None:
    sleeps: list[float] = []
    with_db_retry("reading totals", _Flaky(8), sleep=sleeps.append)
    assert sleeps[-3:] == [5.0, 5.0, 5.0]


def test_error_without_a_database_error_behind_it_is_not_retried() -> None:
    sleeps: list[float] = []

    def broken() -> None:
        raise KeyError("trial")

    with pytest.raises(KeyError):
        with_db_retry("reading totals", broken, sleep=sleeps.append)
    assert sleeps == []
