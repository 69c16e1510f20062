"""Time, injectable so that tests never sleep."""

from __future__ import annotations

import time
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


class Throttle:
    """Yes at most once per interval (monotonic time): how often a warm path may look again.

    The injector's sources stat their file, the live injector checks the
    store's change counter, and the Hermes plugin checks for erasures, each at
    most once per ``injection.check_interval_ms``; between two looks they
    answer from memory. Races between threads cost at most one extra look.
    """

    __slots__ = ("_at", "interval_ns")

    def __init__(self, interval_ms: float) -> None:
        self.interval_ns = int(interval_ms * 1_000_000)
        self._at: int | None = None

    def due(self, interval_ns: int | None = None) -> bool:
        """Whether ``interval_ns`` (default: the throttle's own) has passed since the last look; always before one."""
        wait = self.interval_ns if interval_ns is None else interval_ns
        return self._at is None or time.monotonic_ns() - self._at >= wait

    def looked(self) -> None:
        """A look happened now: the next one is due an interval from now."""
        self._at = time.monotonic_ns()

    def reset(self) -> None:
        """Make the next look due at once (what was kept between looks was dropped)."""
        self._at = None

    def take(self) -> bool:
        """Whether a look is due; if so, it counts as taken now."""
        if not self.due():
            return False
        self.looked()
        return True
