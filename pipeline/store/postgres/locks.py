"""The profile's tick lock on PostgreSQL: a session advisory lock, with a lease that frees it if its holder stops.

The lease is the session's ``idle_session_timeout`` (PostgreSQL 14 on): set in
the statement that takes the lock, and put back (to what it was) in the one that
releases it, so a tick pays one statement for each end of the lock. What the
holder asks first is sent in the lock's round trip (``ahead``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import psycopg

from ..contract import HELD_SETTING
from .connection import PgConnection
from .schema import scoped_lock

if TYPE_CHECKING:
    from ..backend import Connection

T = TypeVar("T")
LEASE_SINCE = 140000  # idle_session_timeout is PostgreSQL 14's
# The lock, the session's timeout before it, and (only when it was taken) the lease; a subquery with a volatile
# function is evaluated once, before the outer query's.
# And whether it was taken, for what is asked ahead with it to read (contract.HELD_SETTING).
TAKE = ("SELECT held, was, CASE WHEN held AND ? THEN set_config('idle_session_timeout', ?, false) END, "
        f"set_config('{HELD_SETTING}', CASE WHEN held THEN 'yes' ELSE 'no' END, false) FROM ("
        f"SELECT pg_try_advisory_lock({scoped_lock('?')}) AS held, current_setting('idle_session_timeout', true) "
        "AS was OFFSET 0) AS attempt")
UNLOCK = f"SELECT pg_advisory_unlock({scoped_lock('?')})"
RELEASE = f"SELECT pg_advisory_unlock({scoped_lock('?')}), set_config('idle_session_timeout', ?, false)"


class Heartbeat:
    """One thread per process that breaks the silence of every held tick lock's connection: a statement whenever
    one has been quiet for its ``every_s``, so a live holder is never taken for a stopped one. (A thread per tick
    cost its start and its join, each a wait for the scheduler on a busy machine.)"""

    def __init__(self) -> None:
        self._held: dict[int, tuple[PgConnection, float]] = {}
        self._tokens = itertools.count()
        self._cond = threading.Condition()
        self._pinging: int | None = None  # the holder whose connection is being sent a statement now
        self._thread: threading.Thread | None = None

    def hold(self, conn: PgConnection, every_s: float) -> int:
        with self._cond:
            token = next(self._tokens)
            self._held[token] = (conn, every_s)
            if self._thread is None or not self._thread.is_alive():  # none yet, or a forked child's
                self._thread = threading.Thread(target=self._run, name="persona-lease", daemon=True)
                self._thread.start()
            self._cond.notify_all()
        return token

    def release(self, token: int) -> None:
        """Once this returns, the heartbeat sends nothing more on that connection (one in flight is waited for)."""
        with self._cond:
            self._held.pop(token, None)
            while self._pinging == token:
                self._cond.wait()

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                quiet = [token for token, (conn, every_s) in self._held.items() if now - conn.used_at >= every_s]
                if quiet:
                    self._ping(quiet[0])
                    continue
                wake = min((conn.used_at + every_s for conn, every_s in self._held.values()), default=None)
                self._cond.wait(None if wake is None else max(wake - now, 0.001))

    def _ping(self, token: int) -> None:
        """Send one holder's statement outside the lock (another holder's release must not wait for it)."""
        conn = self._held[token][0]
        self._pinging = token
        self._cond.release()
        try:
            # Any failure is the holder's to meet (inside its failed transaction, a lost connection); the one
            # thread every holder shares must not end with it, nor ask again at once.
            with suppress(Exception):
                conn.execute("SELECT 1")
            conn.used_at = max(conn.used_at, time.monotonic())
        finally:
            self._cond.acquire()
            self._pinging = None
            self._cond.notify_all()


HEARTBEAT = Heartbeat()


def _try_lock(conn: PgConnection, key: str, lease_ms: int, leased: bool,
              ahead: Callable[[PgConnection], T]) -> tuple[str | None, T] | None:
    """(the session's timeout before the lease, ``ahead``'s answer) once the lock is taken; None while it is
    another's. ``ahead``'s statements follow the lock's in its round trip, so they read what the lock holds."""
    def send() -> tuple[Any, T]:
        return conn.execute(TAKE, (leased, f"{lease_ms}ms", key)), ahead(conn)

    try:
        taken, answer = conn.together(send)
        row = taken.fetchone()
    except BaseException:
        # An error after the lock was taken (in what was asked ahead) leaves it held with the session.
        with suppress(psycopg.Error):
            conn.execute(UNLOCK, (key,))
        raise
    return (row[1], answer) if row and row[0] else None


class Held(Generic[T]):
    """A taken lock: ``answer`` is what was asked with it; :meth:`hand_off` sends its release in a batch the
    holder ends with (after its last write's COMMIT, in that round trip), else :meth:`release` sends it alone."""

    def __init__(self, conn: PgConnection, key: str, was: str | None, leased: bool, answer: T) -> None:
        self.answer = answer
        self._conn, self._key, self._was, self._leased = conn, key, was, leased
        self._sent: Any = None

    def _statement(self) -> tuple[str, tuple[str, ...]]:
        return (RELEASE, (self._key, self._was or "0")) if self._leased else (UNLOCK, (self._key,))

    def hand_off(self, conn: Connection) -> None:
        """Queue the release on ``conn`` (the lock's own connection), read back by :meth:`release`."""
        self._sent = conn.execute(*self._statement())

    def release(self) -> None:
        """Release the lock, unless a handed-off release did (one that failed with its batch is sent again)."""
        if self._sent is not None:
            with suppress(psycopg.Error):
                row = self._sent.fetchone()
                if row and row[0]:
                    return
        # A lost connection has released the lock with its session: the tick's work stands.
        with suppress(psycopg.OperationalError):
            self._conn.execute(*self._statement())


@contextmanager
def tick_lock(conn: PgConnection, key: str, *, timeout_s: float, lease_ms: int, poll_s: float,
              ahead: Callable[[PgConnection], T]) -> Iterator[Held[T] | None]:
    """Hold lock ``key`` on ``conn`` (polling every ``poll_s``), leased while held; yields the lock, with
    ``ahead``'s answer asked in its round trip, or None when it stayed taken."""
    leased = conn.raw.info.server_version >= LEASE_SINCE
    deadline = time.monotonic() + timeout_s
    while (taken := _try_lock(conn, key, lease_ms, leased, ahead)) is None:
        if time.monotonic() >= deadline:
            yield None
            return
        time.sleep(poll_s)
    held = Held(conn, key, taken[0], leased, taken[1])
    beat = HEARTBEAT.hold(conn, lease_ms / 4000)
    try:
        yield held
    finally:
        HEARTBEAT.release(beat)
        held.release()
