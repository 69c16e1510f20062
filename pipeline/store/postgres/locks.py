"""The profile's tick lock on PostgreSQL: a session advisory lock, with a lease that frees it if its holder stops.

The lease is the session's ``idle_session_timeout`` (PostgreSQL 14 on): set in
the statement that takes the lock, and put back in the one that releases it,
so a tick pays one round trip for each end of the lock, not two.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import psycopg

from .connection import PgConnection
from .schema import scoped_lock

LEASE_SINCE = 140000  # idle_session_timeout is PostgreSQL 14's
# The lock, and (only when it was taken) the lease; a subquery with a volatile function is evaluated once.
TAKE = (f"SELECT held, CASE WHEN held AND ? THEN set_config('idle_session_timeout', ?, false) END "
        f"FROM (SELECT pg_try_advisory_lock({scoped_lock('?')}) AS held OFFSET 0) AS attempt")
# What RESET would do: the session's own value back (the server's, the role's or the database's).
RESET_LEASE = ("set_config('idle_session_timeout', (SELECT reset_val FROM pg_settings "
               "WHERE name = 'idle_session_timeout'), false)")


def _heartbeat(conn: PgConnection, every_s: float, stop: threading.Event) -> None:
    """A statement whenever the holder's connection has been quiet for ``every_s``: it is alive, only busy."""
    while not stop.wait(every_s):
        if time.monotonic() - conn.used_at >= every_s:
            with suppress(psycopg.Error):  # e.g. inside the holder's failed transaction; its own error says it
                conn.execute("SELECT 1")


def _try_lock(conn: PgConnection, key: str, lease_ms: int, leased: bool) -> bool:
    row = conn.execute(TAKE, (leased, f"{lease_ms}ms", key)).fetchone()
    return bool(row and row[0])


@contextmanager
def tick_lock(conn: PgConnection, key: str, *, timeout_s: float, lease_ms: int, poll_s: float) -> Iterator[bool]:
    """Hold lock ``key`` on ``conn`` (polling every ``poll_s``), leased while held; False when it stayed taken."""
    leased = conn.raw.info.server_version >= LEASE_SINCE
    deadline = time.monotonic() + timeout_s
    while not _try_lock(conn, key, lease_ms, leased):
        if time.monotonic() >= deadline:
            yield False
            return
        time.sleep(poll_s)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(conn, lease_ms / 4000, stop), name="persona-lease",
                            daemon=True)
    beat.start()
    try:
        yield True
    finally:
        stop.set()
        beat.join()
        # A lost connection has released the lock with its session: the tick's work stands.
        with suppress(psycopg.OperationalError):
            conn.execute(f"SELECT pg_advisory_unlock({scoped_lock('?')})" + (f", {RESET_LEASE}" if leased else ""),
                         (key,))
