"""Time, injectable so that tests never sleep."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]

# SQLite's CURRENT_TIMESTAMP format, so rows we write sort and compare with
# the rows Mnemosyne writes.
DB_FORMAT = "%Y-%m-%d %H:%M:%S"


def utc_now() -> datetime:
    """The real clock: an aware UTC datetime."""
    return datetime.now(UTC)


def to_db(moment: datetime) -> str:
    """An aware datetime as a SQLite UTC timestamp."""
    return moment.astimezone(UTC).strftime(DB_FORMAT)


def from_db(text: str) -> datetime:
    """A SQLite timestamp (UTC, with or without 'T' or fractions) as an aware datetime."""
    moment = datetime.fromisoformat(text.replace(" ", "T"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
