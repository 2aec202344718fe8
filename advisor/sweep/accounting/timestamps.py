"""Trial times in one zone: every moment the sweep compares is an aware UTC ``datetime``.

Optuna's RDB storage keeps a trial's start and end in naive ``DateTime`` columns, and what
zone they mean changed with Optuna 5 (the ``TrialClock`` of the installed Optuna):

- Optuna 4.x writes ``datetime.now()``, naive *local* time of the writing process, and its
  ``FrozenTrial`` hands the same naive value back;
- Optuna 5.x writes naive *UTC* and turns it into naive local time when it builds a
  ``FrozenTrial``.

So a ``FrozenTrial``'s ``datetime_start`` / ``datetime_complete`` are naive local time under
both (``frozen_moment``), while the columns themselves, which the ledger's aggregate queries
read (``advisor.sweep.accounting.ledger``), are local under 4 and UTC under 5 (``column_moment``).
Heartbeats are written by the database clock (``now()``): UTC on SQLite
(``CURRENT_TIMESTAMP``) and on PostgreSQL, whose session time zone ``open_rdb_storage`` sets
to UTC (``heartbeat_moment``).

Workers of both versions sharing a study would store its trials' times in two zones with
nothing to tell them apart, so ``open_study`` records the zone on the study
(``CLOCK_ATTR``) and ``check_study_clock`` refuses a study whose trials another major
version wrote, in one line. A study recorded before that attribute existed is judged by the
Optuna version that created its database (its ``version_info`` table).
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    import optuna

__all__ = ["CLOCK_ATTR", "SUPPORTED_OPTUNA", "TrialClock", "check_study_clock",
           "column_moment", "column_value", "epoch_s", "frozen_moment", "frozen_value",
           "heartbeat_moment", "installed_clock"]

CLOCK_ATTR = "advisor:trial_clock"  # the zone the study's trial times are stored in
SUPPORTED_OPTUNA = ">=4.0,<6"  # as pyproject.toml pins it


class TrialClock(StrEnum):
    """The zone Optuna's RDB storage writes trial times in: local (4.x) or UTC (5.x)."""

    LOCAL = "local"
    UTC = "utc"

    @property
    def optuna_major(self) -> int:
        """The Optuna major version that writes this zone."""
        return 4 if self is TrialClock.LOCAL else 5

    def described(self) -> str:
        """How a message names it: 'Optuna 4 (trial times in local time)'."""
        zone = "local time" if self is TrialClock.LOCAL else "UTC"
        return f"Optuna {self.optuna_major} (trial times in {zone})"


def clock_of_version(version: str) -> TrialClock | None:
    """The zone an Optuna version writes trial times in; None for an unsupported version."""
    major = version.split(".", 1)[0]
    return {"4": TrialClock.LOCAL, "5": TrialClock.UTC}.get(major)


def installed_clock() -> TrialClock:
    """The installed Optuna's zone; AdvisorError for a version outside ``SUPPORTED_OPTUNA``."""
    import optuna

    clock = clock_of_version(optuna.__version__)
    if clock is None:
        raise AdvisorError(f"optuna {optuna.__version__} is not supported (advisor needs "
                           f"optuna{SUPPORTED_OPTUNA}); pip install 'optuna{SUPPORTED_OPTUNA}'")
    return clock


def frozen_moment(value: datetime) -> datetime:
    """A ``FrozenTrial`` time (naive local under every supported Optuna), as aware UTC."""
    return value.astimezone(UTC)  # a naive value is taken as local time


def frozen_value(moment: datetime) -> datetime:
    """An aware moment as a ``FrozenTrial`` holds it: naive local time."""
    return moment.astimezone().replace(tzinfo=None)


def column_moment(value: datetime, clock: TrialClock) -> datetime:
    """A raw trial-time column (naive, in ``clock``'s zone) as aware UTC."""
    if value.tzinfo is not None:
        return value.astimezone(UTC)
    return value.replace(tzinfo=UTC) if clock is TrialClock.UTC else value.astimezone(UTC)


def column_value(moment: datetime, clock: TrialClock) -> datetime:
    """An aware moment as Optuna with ``clock`` stores it in a trial-time column (naive)."""
    if clock is TrialClock.UTC:
        return moment.astimezone(UTC).replace(tzinfo=None)
    return frozen_value(moment)


def heartbeat_moment(value: datetime) -> datetime:
    """A heartbeat or ``now()`` read from the database (UTC, aware or naive), as aware UTC."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def epoch_s(moment: datetime) -> float:
    """Seconds since the epoch of an aware moment (a naive one is refused, not guessed)."""
    if moment.tzinfo is None:
        raise ValueError(f"naive datetime {moment!r}: convert it with frozen_moment or "
                         "column_moment first")
    return moment.timestamp()


def _database_clock(rdb: Any) -> TrialClock | None:
    """The zone of the Optuna version that created the study's database (version_info)."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    table = models.VersionInfoModel.__table__
    with rdb.engine.connect() as conn:
        version = conn.execute(sa.select(table.c.library_version)).scalar()
    return clock_of_version(version) if isinstance(version, str) else None


def check_study_clock(study: optuna.Study, *, record: bool) -> None:
    """Refuse (AdvisorError, one line) a study whose trial times another Optuna major
    version wrote; with ``record``, note the installed zone on a study that has none yet.

    A study without the record: with no trial yet it is this version's; with trials, it is
    the version that created its database, when that is known.
    """
    from advisor.sweep.accounting.records import rdb_of

    mine = installed_clock()
    rdb = rdb_of(study)
    if rdb is None:  # in-memory and journal storages keep aware times: nothing to mix
        return
    recorded = study.user_attrs.get(CLOCK_ATTR)
    theirs: TrialClock | None
    if isinstance(recorded, str) and recorded in {c.value for c in TrialClock}:
        theirs = TrialClock(recorded)
    elif not study.get_trials(deepcopy=False):
        theirs = None
    else:
        theirs = _database_clock(rdb)
    if theirs is not None and theirs is not mine:
        import optuna

        raise AdvisorError(
            f"study {study.study_name!r} was written by {theirs.described()}, and this is "
            f"optuna {optuna.__version__} ({mine.described()}): its times would mix; run every "
            f"worker of a study with the same Optuna major version (pip install "
            f"'optuna>={theirs.optuna_major}.0,<{theirs.optuna_major + 1}') or start a new study")
    if record and recorded != str(mine):
        study.set_user_attr(CLOCK_ATTR, str(mine))
