"""The server backend: PostgreSQL through psycopg 3, for many profiles on many hosts.

Connections come from one ``psycopg_pool`` pool per URL and process, and are
held only for one read or one transaction, so a gateway serving hundreds of
profiles needs a handful of connections, not one per profile. A lost
connection (a server restart) is dropped and replaced on the next operation.
"""

from __future__ import annotations

import logging
import math
import select
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, TypeVar, cast

import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ...config.urls import redact_url, scrub, server_of, user_of
from ...errors import StoreError, StoreUnavailable
from ..dialect import POSTGRES
from ..features import Features
from .connection import PgConnection, Unanswered, rows
from .locks import tick_lock
from .pools import POOL_MAX, Pool, pool_of, shared_pool
from .schema import ensure_schema, scoped_channel, scoped_lock

if TYPE_CHECKING:
    from ..backend import Connection
    from ..database import Database

T = TypeVar("T")
CONNECT_TIMEOUT_S = 10
WRITE_LOCK = "persona-write:"  # advisory lock names (scoped to the schema): one profile's writers queue
TICK_LOCK = "persona-tick:"
RELAX = "SET LOCAL synchronous_commit TO OFF"  # read at COMMIT: it may come anywhere in the transaction
LOCK_POLL_S = 0.05
IDLE_CHECK_S = 5.0  # a pooled connection idle this long is checked before it is lent out
# The server answers every statement within statement_timeout (with an error if need be); silence for this
# much longer means the server or the network is frozen, and the client gives up on the connection.
ANSWER_GRACE_MS = 1000
RECOVER_S = 5.0  # after a silence, operations on that URL fail at once for this long instead of each waiting again
# A dead network under an idle pooled connection or a long wait is noticed by the kernel, not only by a statement.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
              "tcp_user_timeout": 30_000}

# The pool warns of each dead connection it discards; the operation's own one-line error says enough.
if logging.getLogger("psycopg.pool").level == logging.NOTSET:
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)

# Per pooled connection: the (lock, statement, idle-in-transaction) timeouts it carries, and when it was last lent.
_STATE: weakref.WeakKeyDictionary[Any, tuple[tuple[int, int, int], float]] = weakref.WeakKeyDictionary()
# Per URL: until when operations fail at once, because the server stopped answering (see RECOVER_S).
_SILENT: dict[str, float] = {}


def _has_input(raw: psycopg.Connection[Any]) -> bool:
    """Whether the server sent anything to an idle connection: for a pooled one, only a farewell."""
    if raw.closed or raw.broken:
        return True
    return bool(select.select([raw.fileno()], [], [], 0)[0])


def channel_name(raw: psycopg.Connection[Any], channel: str) -> str:
    """This connection's deployment's name for ``channel``, to LISTEN on (hex digits: no quoting needed)."""
    row = raw.execute(f"SELECT {scoped_channel('%s')}", (channel,)).fetchone()
    assert row is not None
    return str(row[0])


class PostgresBackend:
    """One PostgreSQL database, shared by every profile and every host that names it."""

    dialect = POSTGRES
    features = Features(pooled=True, announces=True, round_trips=True, relaxes_late=True)
    path = None  # a server, not a file

    def __init__(self, url: str, *, busy_timeout_ms: int, readonly: bool, statement_timeout_ms: int,
                 lock_lease_ms: int) -> None:
        self.url = url
        self.busy_timeout_ms = busy_timeout_ms
        self.statement_timeout_ms = statement_timeout_ms
        self.lock_lease_ms = lock_lease_ms
        self.readonly = readonly

    @property
    def bound_s(self) -> float | None:
        """How long the client waits for any one answer: statement_timeout and a grace (None without one)."""
        if not self.statement_timeout_ms:
            return None
        return (self.statement_timeout_ms + ANSWER_GRACE_MS) / 1000

    def _wait_s(self) -> float:
        """How long to wait for a connection: CONNECT_TIMEOUT_S, or less on a path with a shorter bound."""
        return min(CONNECT_TIMEOUT_S, self.bound_s or CONNECT_TIMEOUT_S)

    @property
    def label(self) -> str:
        return redact_url(self.url)

    # -- connections ----------------------------------------------------

    def connect(self) -> PgConnection:
        return PgConnection(self._checkout(), self.bound_s, renew=self._renew)

    def _renew(self, broken: psycopg.Connection[Any]) -> psycopg.Connection[Any]:
        """A fresh connection in place of one the server ended; the pool discards the broken one."""
        pool = pool_of(self.url)
        if pool is not None:
            pool.putconn(broken)
        return self._checkout()

    def _checkout(self) -> psycopg.Connection[Any]:
        """A live pooled connection carrying this store's timeouts.

        After a server restart the pool still holds connections the server
        closed; each is found dead here, before any statement of ours ran on
        it, dropped, and the next one tried (the pool opens new ones as needed).
        """
        self._refuse_while_silent()
        pool = self._pool()
        with self.errors():
            for _ in range(POOL_MAX + 1):
                raw = pool.getconn(timeout=self._wait_s())
                try:
                    self._prepare(raw)
                    return raw
                except BaseException as error:
                    pool.putconn(raw)  # a broken connection is discarded by the pool
                    if isinstance(error, Unanswered) or not (
                            isinstance(error, psycopg.OperationalError) and (raw.closed or raw.broken)):
                        raise
            raise psycopg.OperationalError("no live connection after the pool was refilled")

    def release(self, conn: Connection) -> None:
        pg = cast(PgConnection, conn)  # one that connect() made
        pool = pool_of(self.url)
        if pool is None:
            pg.raw.close()
            return
        if self.alive(pg) and pg.in_transaction:
            with suppress(psycopg.OperationalError):  # a silent server: the pool discards the cut connection
                pg.rollback()
        pool.putconn(pg.raw)  # a broken connection is discarded by the pool

    def alive(self, conn: Connection) -> bool:
        raw = cast(PgConnection, conn).raw  # one that connect() made
        return not (raw.closed or raw.broken)

    def _prepare(self, raw: psycopg.Connection[Any]) -> None:
        """This store's waits on the borrowed connection, and a check of one that may be dead.

        Both cost a round trip, so each is made only when needed: a connection
        keeps the timeouts its last borrower set, and an idle connection the
        server closed (a restart, an administrator) has something to read,
        which a zero-timeout poll sees without a round trip. One idle for
        longer than IDLE_CHECK_S is checked anyway, for a peer that vanished
        without a word.
        """
        wanted = (int(self.busy_timeout_ms), int(self.statement_timeout_ms), int(self.lock_lease_ms))
        state = _STATE.get(raw)
        now = time.monotonic()
        conn = PgConnection(raw, self.bound_s)
        if state is None or state[0] != wanted:
            # A client stopped inside a transaction (SIGSTOP, a cut network) must not hold its locks for ever.
            conn.execute("SELECT set_config('lock_timeout', ?, false), set_config('statement_timeout', ?, false), "
                         "set_config('idle_in_transaction_session_timeout', ?, false)",
                         tuple(f"{value}ms" for value in wanted))
        elif now - state[1] > IDLE_CHECK_S or _has_input(raw):
            conn.execute("SELECT 1")
        _STATE[raw] = (wanted, now)

    def _pool(self) -> Pool:
        return shared_pool(self.url, self._open_pool)

    def _open_pool(self) -> Pool:
        # One direct connection first: a wrong URL, a refused connection or bad
        # credentials are reported as themselves, not as a pool timeout.
        with self.errors(connecting=True):
            probe = psycopg.connect(self.url, connect_timeout=math.ceil(self._wait_s()), autocommit=True,
                                    **self._keepalives())
        with self.errors(), probe:
            self._prepare(probe)  # a locked table must not hang the first command (or a prompt)
            try:
                ensure_schema(PgConnection(probe, self.bound_s))
            except psycopg.errors.LockNotAvailable as error:
                raise StoreError(
                    f"database {self.label}: its tables stayed locked for {self.busy_timeout_ms} ms "
                    "(another process migrating them, or an open transaction on them) while persona-tier "
                    "checked its schema; nothing was changed, try again") from error
        return ConnectionPool(self.url, min_size=1, max_size=POOL_MAX, open=True, timeout=CONNECT_TIMEOUT_S,
                              kwargs={"autocommit": True, "row_factory": rows,
                                      "connect_timeout": CONNECT_TIMEOUT_S, **self._keepalives()},
                              name=f"persona {self.label}")

    # -- locks ------------------------------------------------------------

    @contextmanager
    def begin_write(self, conn: Connection, *, durable: bool, batched: bool = False) -> Iterator[None]:
        """BEGIN; a commit that need not be durable does not wait for the server's WAL flush. ``batched``: in
        psycopg's pipeline mode, a round trip only where a result is read and one for the rest with the COMMIT
        (but for a borrow's first statement, sent alone: on a lost connection it is sent again on a fresh one)."""
        pg = cast(PgConnection, conn)  # one that connect() made
        begin = ["BEGIN"] if durable else ["BEGIN", RELAX]
        if not batched or pg.fresh:
            conn.execute("; ".join(begin))
            begin = []
        if not batched:
            yield
            return
        with pg.batch():
            for statement in begin:
                conn.execute(statement)
            yield

    def relax_commit(self, conn: Connection) -> None:
        """This transaction's COMMIT does not wait for the server's WAL flush (as ``durable=False`` at BEGIN)."""
        conn.execute(RELAX)

    def claim_write(self, conn: Connection, profile: str) -> None:
        """Queue behind the profile's other writers until this transaction ends (at most lock_timeout)."""
        conn.execute(f"SELECT pg_advisory_xact_lock({scoped_lock('?')})", (WRITE_LOCK + profile,))

    def notify(self, conn: Connection, channel: str, payload: str) -> None:
        """Announce to every host listening to this deployment; delivered when the caller's transaction commits."""
        conn.execute(f"SELECT pg_notify({scoped_channel('?')}, ?)", (channel, payload))

    def channel_sql(self, name_sql: str) -> str:
        """The SQL of this deployment's channel named ``name_sql`` (what :meth:`notify` announces on)."""
        return scoped_channel(name_sql)

    def write_and_notify(self, conn: Connection, statement: str, parameters: Sequence[Any], channel: str,
                         payload: str) -> None:
        """A write of one row (an INSERT or an upsert) and its announcement (:meth:`notify`) in one statement."""
        conn.execute(f"WITH done AS ({statement} RETURNING 1) SELECT pg_notify({scoped_channel('?')}, ?) FROM done",
                     (*parameters, channel, payload))

    @contextmanager
    def profile_lock(self, store: Database, timeout_s: float, ahead: Callable[[Connection], T]) -> Iterator[T | None]:
        """The profile's tick lock, on the store's own connection for as long as the tick runs; yields ``ahead``'s
        answer, asked in the lock's round trip, or None when the lock stayed another's.

        A session lock: if the worker dies, its connection closes and the
        server releases the lock, so nothing is left blocked. A worker that
        stops without dying (SIGSTOP, a frozen network) is disconnected by the
        server once its session has been silent for ``store.lock_lease_ms``,
        which frees the lock; a live worker's heartbeat keeps it from being
        silent that long. The tick's queries share that connection: holding
        one pooled connection while waiting for another would deadlock a
        process whose threads all tick.
        """
        with store.read() as shared:
            conn = cast(PgConnection, shared)  # one that connect() made
            with tick_lock(conn, TICK_LOCK + store.profile, timeout_s=timeout_s, lease_ms=int(self.lock_lease_ms),
                           poll_s=LOCK_POLL_S, ahead=ahead) as held:
                if held is None:
                    yield None
                    return
                store.held_release = held.hand_off
                try:
                    yield held.answer
                finally:
                    store.held_release = None

    def tables(self, conn: Connection) -> frozenset[str]:
        return frozenset(row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"))

    def columns(self, conn: Connection, table: str) -> list[str]:
        return [str(row[0]) for row in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ?", (table,))]

    def secure_delete(self, conn: Connection, on: bool) -> None:
        """Nothing to switch: the server's dead row versions are removed by :meth:`scrub`."""

    def scrub(self, store: Database, tables: list[str]) -> bool:
        """After a forget: VACUUM the tables it touched (outside any transaction, as VACUUM must run), so
        the dead row versions holding the text are removed from the tables' pages and no snapshot can read
        them. (The server's WAL and base backups are its operator's to expire.)"""
        with store.read() as conn:
            for table in tables:
                conn.execute(f"VACUUM {table}")
        return True

    # -- errors -----------------------------------------------------------

    @contextmanager
    def errors(self, *, connecting: bool = False) -> Iterator[None]:
        """Turn psycopg failures into one clear StoreError naming the server (never its password).

        ``connecting``: the first connection, so a failure is a wrong URL or an unreachable server, never a
        lost connection.
        """
        try:
            yield
        except Unanswered as error:
            raise self._explain_silence() from error
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

    def _fell_silent(self) -> None:
        _SILENT[self.url] = time.monotonic() + RECOVER_S

    def _explain_silence(self) -> StoreUnavailable:
        self._fell_silent()
        return StoreUnavailable(f"PostgreSQL at {server_of(self.url)} did not answer within "
                                f"{(self.bound_s or 0) * 1000:.0f} ms (a frozen server or network); the connection "
                                "was dropped and nothing after the last commit was kept")

    def _refuse_while_silent(self) -> None:
        """Fail at once while a silence is recent, so callers do not each wait out the bound again."""
        until = _SILENT.get(self.url)
        if until is not None and time.monotonic() < until:
            raise StoreUnavailable(f"PostgreSQL at {server_of(self.url)} stopped answering less than "
                                   f"{RECOVER_S:g} s ago; not asking it again yet, nothing was changed")

    def _keepalives(self) -> dict[str, Any]:
        """TCP keepalives and tcp_user_timeout, unless store.url sets them itself."""
        with suppress(psycopg.ProgrammingError):
            given = conninfo_to_dict(self.url)
            return {key: value for key, value in KEEPALIVES.items() if key not in given}
        return {}

    def _explain_pool_timeout(self) -> StoreUnavailable:
        pool = pool_of(self.url)
        if pool is not None and pool.get_stats().get("pool_size", 0) >= POOL_MAX:
            return StoreUnavailable(f"all {POOL_MAX} connections this process keeps to PostgreSQL at {self.label} "
                                    f"stayed busy for {self._wait_s():g} s; nothing was changed")
        self._fell_silent()
        return StoreUnavailable(f"cannot reach PostgreSQL at {self.label} (no connection within "
                                f"{self._wait_s():g} s); nothing was changed")

    def _explain_operational(self, error: psycopg.OperationalError, connecting: bool) -> StoreError:
        text = self._said(error)
        server = server_of(self.url)
        if "timeout expired" in text:
            self._fell_silent()
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
