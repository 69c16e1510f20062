"""The server backend: PostgreSQL through psycopg 3, for many profiles on many hosts.

Connections come from one ``psycopg_pool`` pool per URL and process, and are
held only for one read or one transaction, so a gateway serving hundreds of
profiles needs a handful of connections, not one per profile. A lost
connection (a server restart) is dropped and replaced on the next operation.
"""

from __future__ import annotations

import atexit
import logging
import re
import select
import threading
import time
import weakref
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from typing import Any

import psycopg
import psycopg.errors
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from ..errors import StoreError, StoreUnavailable
from ..urls import redact_url, scrub, server_of, user_of
from .dialect import POSTGRES
from .postgres_schema import ensure_schema, scoped_channel, scoped_lock

CONNECT_TIMEOUT_S = 10
POOL_MAX = 8  # per URL and process: workers and gateways hold a connection only for one operation
WRITE_LOCK = "persona-write:"  # advisory lock names (scoped to the schema): one profile's writers queue
TICK_LOCK = "persona-tick:"
LOCK_POLL_S = 0.05
IDLE_CHECK_S = 5.0  # a pooled connection idle this long is checked before it is lent out

# The pool warns of each dead connection it discards; the operation's own one-line error says enough.
if logging.getLogger("psycopg.pool").level == logging.NOTSET:
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

# Per pooled connection: the (lock, statement) timeouts it carries, and when it was last lent out.
_STATE: weakref.WeakKeyDictionary[Any, tuple[tuple[int, int], float]] = weakref.WeakKeyDictionary()


class Row:
    """A result row like ``sqlite3.Row``: by position, by column name, and ``dict(row)``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: Mapping[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: int | str) -> Any:
        return self._values[self._index[key]] if isinstance(key, str) else self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


def _rows(cursor: Any) -> Any:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(values, index)


@lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """SQLite placeholders to psycopg's: ``?`` to ``%s``, ``:name`` to ``%(name)s``, ``%`` to ``%%``.

    Quoted strings and identifiers are copied as they are (but for ``%``).
    """
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in "'\"":
            end = i + 1
            while end < n and not (sql[end] == char and sql[end + 1:end + 2] != char):
                end += 2 if sql[end] == char else 1
            out.append(sql[i:end + 1].replace("%", "%%"))
            i = end + 1
        elif char == "?":
            out.append("%s")
            i += 1
        elif char == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_") and sql[i - 1:i] != ":":
            name = re.match(r"\w+", sql[i + 1:])
            assert name is not None
            out.append(f"%({name.group()})s")
            i += 1 + len(name.group())
        elif char == "%":
            out.append("%%")
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


class PgConnection:
    """A pooled psycopg connection that speaks the store's SQL (SQLite placeholders, sqlite3-like rows)."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = (), /) -> Any:
        if not parameters:  # without parameters psycopg reads the text as it is
            return self.raw.execute(sql)
        return self.raw.execute(translate(sql), parameters)


_POOLS: dict[str, ConnectionPool[Any]] = {}
_POOLS_LOCK = threading.Lock()


def close_pool(url: str) -> None:
    """Close this process's connections to ``url`` (a worker done with a database, or a test)."""
    with _POOLS_LOCK:
        pool = _POOLS.pop(url, None)
    if pool is not None:
        pool.close(timeout=1)


def _close_pools() -> None:
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close(timeout=1)
        _POOLS.clear()


atexit.register(_close_pools)


def _has_input(raw: psycopg.Connection[Any]) -> bool:
    """Whether the server sent anything to an idle connection: for a pooled one, only a farewell."""
    if raw.closed or raw.broken:
        return True
    return bool(select.select([raw.fileno()], [], [], 0)[0])


def _try_lock(raw: psycopg.Connection[Any], key: str) -> bool:
    row = raw.execute(f"SELECT pg_try_advisory_lock({scoped_lock('%s')})", (key,)).fetchone()
    return bool(row and row[0])


def channel_name(raw: psycopg.Connection[Any], channel: str) -> str:
    """This connection's deployment's name for ``channel``, to LISTEN on (hex digits: no quoting needed)."""
    row = raw.execute(f"SELECT {scoped_channel('%s')}", (channel,)).fetchone()
    assert row is not None
    return str(row[0])


class PostgresBackend:
    """One PostgreSQL database, shared by every profile and every host that names it."""

    dialect = POSTGRES
    pooled = True

    def __init__(self, url: str, *, busy_timeout_ms: int, readonly: bool, statement_timeout_ms: int) -> None:
        self.url = url
        self.busy_timeout_ms = busy_timeout_ms
        self.statement_timeout_ms = statement_timeout_ms
        self.readonly = readonly

    @property
    def label(self) -> str:
        return redact_url(self.url)

    # -- connections ----------------------------------------------------

    def connect(self) -> PgConnection:
        return PgConnection(self._checkout())

    def _checkout(self) -> psycopg.Connection[Any]:
        """A live pooled connection carrying this store's timeouts.

        After a server restart the pool still holds connections the server
        closed; each is found dead here, before any statement of ours ran on
        it, dropped, and the next one tried (the pool opens new ones as needed).
        """
        pool = self._pool()
        with self.errors():
            for _ in range(POOL_MAX + 1):
                raw = pool.getconn()
                try:
                    self._prepare(raw)
                    return raw
                except BaseException as error:
                    pool.putconn(raw)  # a broken connection is discarded by the pool
                    if not (isinstance(error, psycopg.OperationalError) and (raw.closed or raw.broken)):
                        raise
            raise psycopg.OperationalError("no live connection after the pool was refilled")

    def release(self, conn: PgConnection) -> None:
        pool = _POOLS.get(self.url)
        if pool is None:
            conn.raw.close()
            return
        if self.alive(conn) and conn.in_transaction:
            conn.raw.rollback()
        pool.putconn(conn.raw)  # a broken connection is discarded by the pool

    def alive(self, conn: PgConnection) -> bool:
        return not (conn.raw.closed or conn.raw.broken)

    def _prepare(self, raw: psycopg.Connection[Any]) -> None:
        """This store's waits on the borrowed connection, and a check of one that may be dead.

        Both cost a round trip, so each is made only when needed: a connection
        keeps the timeouts its last borrower set, and an idle connection the
        server closed (a restart, an administrator) has something to read,
        which a zero-timeout poll sees without a round trip. One idle for
        longer than IDLE_CHECK_S is checked anyway, for a peer that vanished
        without a word.
        """
        wanted = (int(self.busy_timeout_ms), int(self.statement_timeout_ms))
        state = _STATE.get(raw)
        now = time.monotonic()
        if state is None or state[0] != wanted:
            raw.execute("SELECT set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
                        (f"{wanted[0]}ms", f"{wanted[1]}ms"))
        elif now - state[1] > IDLE_CHECK_S or _has_input(raw):
            raw.execute("SELECT 1")
        _STATE[raw] = (wanted, now)

    def _pool(self) -> ConnectionPool[Any]:
        with _POOLS_LOCK:
            pool = _POOLS.get(self.url)
            if pool is None:
                # One direct connection first: a wrong URL, a refused connection or bad
                # credentials are reported as themselves, not as a pool timeout.
                with self.errors(connecting=True):
                    probe = psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT_S, autocommit=True)
                with self.errors(), probe:
                    self._prepare(probe)  # a locked table must not hang the first command (or a prompt)
                    try:
                        ensure_schema(PgConnection(probe))
                    except psycopg.errors.LockNotAvailable as error:
                        raise StoreError(
                            f"database {self.label}: its tables stayed locked for {self.busy_timeout_ms} ms "
                            "(another process migrating them, or an open transaction on them) while persona-tier "
                            "checked its schema; nothing was changed, try again") from error
                pool = ConnectionPool(self.url, min_size=1, max_size=POOL_MAX, open=True,
                                      timeout=CONNECT_TIMEOUT_S,
                                      kwargs={"autocommit": True, "row_factory": _rows,
                                              "connect_timeout": CONNECT_TIMEOUT_S},
                                      name=f"persona {self.label}")
                _POOLS[self.url] = pool
            return pool

    # -- locks ------------------------------------------------------------

    def claim_write(self, conn: PgConnection, profile: str) -> None:
        """Queue behind the profile's other writers until this transaction ends (at most lock_timeout)."""
        conn.execute(f"SELECT pg_advisory_xact_lock({scoped_lock('?')})", (WRITE_LOCK + profile,))

    def notify(self, conn: PgConnection, channel: str, payload: str) -> None:
        """Announce to every host listening to this deployment; delivered when the caller's transaction commits."""
        conn.execute(f"SELECT pg_notify({scoped_channel('?')}, ?)", (channel, payload))

    @contextmanager
    def profile_lock(self, store: Any, timeout_s: float) -> Iterator[bool]:
        """The profile's tick lock, on the store's own connection for as long as the tick runs.

        A session lock: if the worker dies, its connection closes and the
        server releases the lock, so nothing is left blocked. The tick's
        queries share that connection: holding one pooled connection while
        waiting for another would deadlock a process whose threads all tick.
        """
        key = TICK_LOCK + store.session
        with store.read() as conn:
            deadline = time.monotonic() + timeout_s
            while not _try_lock(conn.raw, key):
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(LOCK_POLL_S)
            try:
                yield True
            finally:
                # A lost connection has released the lock with its session: the tick's work stands.
                with suppress(psycopg.OperationalError):
                    conn.raw.execute(f"SELECT pg_advisory_unlock({scoped_lock('%s')})", (key,))

    def tables(self, conn: PgConnection) -> frozenset[str]:
        return frozenset(row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"))

    # -- errors -----------------------------------------------------------

    @contextmanager
    def errors(self, *, connecting: bool = False) -> Iterator[None]:
        """Turn psycopg failures into one clear StoreError naming the server (never its password).

        ``connecting``: the first connection, so a failure is a wrong URL or an unreachable server, never a
        lost connection.
        """
        try:
            yield
        except psycopg.errors.QueryCanceled as error:
            raise StoreError(f"database {self.label}: a statement ran past store.statement_timeout_ms "
                             f"({self.statement_timeout_ms} ms) and was cancelled; nothing was changed") from error
        except psycopg.errors.LockNotAvailable as error:
            raise StoreError(f"database {self.label}: another writer held this profile for longer than "
                             f"{self.busy_timeout_ms} ms; nothing was changed") from error
        except PoolTimeout as error:
            raise self._explain_pool_timeout() from error
        except psycopg.OperationalError as error:
            raise self._explain_operational(error, connecting) from error
        except psycopg.DataError as error:
            # Either way round: a value we sent (NUL in text) or one another tool stored (a 30th of February).
            raise StoreError(f"database {self.label}: a value is out of range or malformed "
                             f"({self._said(error)})") from None
        except psycopg.Error as error:
            raise StoreError(f"database {self.label}: {self._said(error)}") from error
        except (UnicodeEncodeError, OverflowError) as error:
            raise StoreError(f"database {self.label}: a value cannot be stored ({error})") from None

    def _said(self, error: BaseException) -> str:
        """The driver's first line, without any piece of the password it may have repeated from the URL."""
        return scrub(_first_line(error), self.url)

    def _explain_pool_timeout(self) -> StoreUnavailable:
        pool = _POOLS.get(self.url)
        if pool is not None and pool.get_stats().get("pool_size", 0) >= POOL_MAX:
            return StoreUnavailable(f"all {POOL_MAX} connections this process keeps to PostgreSQL at {self.label} "
                                    f"stayed busy for {CONNECT_TIMEOUT_S} s; nothing was changed")
        return StoreUnavailable(f"cannot reach PostgreSQL at {self.label} (no connection within "
                                f"{CONNECT_TIMEOUT_S} s); nothing was changed")

    def _explain_operational(self, error: psycopg.OperationalError, connecting: bool) -> StoreError:
        text = self._said(error)
        server = server_of(self.url)
        if "Connection refused" in text or "could not connect" in text or "timeout expired" in text:
            return StoreUnavailable(f"cannot connect to PostgreSQL at {server} ({text}); is the server running, "
                                    "and is store.url right?")
        if "password authentication failed" in text or ("role" in text and "does not exist" in text):
            return StoreError(f"PostgreSQL at {server} refused user {user_of(self.url) or '(default)'!r}: {text}")
        if "database" in text and "does not exist" in text:
            return StoreError(f"PostgreSQL at {server}: {text}; create it, or fix the database name in store.url")
        if "invalid" in text and ("dsn" in text or "connection option" in text or "URI" in text or "value" in text):
            return StoreError(f"store.url {self.label} is not a valid PostgreSQL URL: {text}")
        if connecting:
            return StoreUnavailable(f"cannot connect to PostgreSQL at {server} ({text}); check store.url")
        return StoreUnavailable(f"lost the connection to PostgreSQL at {server} ({text}); nothing was changed")


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
