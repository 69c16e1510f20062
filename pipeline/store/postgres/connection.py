"""A psycopg connection that speaks the store's SQL: SQLite's placeholders, sqlite3-like rows, and a
client-side bound on every answer."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg.pq import TransactionStatus

from ... import caches
from .watchdog import WATCHDOG

log = logging.getLogger(__name__)
T = TypeVar("T")


class Unanswered(psycopg.OperationalError):
    """The server did not answer within the client-side bound, so the watchdog cut the connection."""


class Row(tuple[Any, ...]):
    """A result row like ``sqlite3.Row``: by position, by column name, and ``dict(row)``.

    A tuple, made by the tuple's own constructor: a render reads and checks its facts by position, and a row
    that was a Python object around its values cost a call to make and one per value read (about 9 µs a
    statement and 1 µs a row). Each set of column names has its subclass (:func:`_row_class`), which holds
    the names once."""

    __slots__ = ()
    _index: ClassVar[dict[str, int]] = {}

    def __getitem__(self, key: Any) -> Any:  # a name as well as a position or a slice
        return tuple.__getitem__(self, self._index[key] if key.__class__ is str else key)

    def keys(self) -> list[str]:
        return list(self._index)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self, strict=True))!r})"


@caches.memo("connection.row_class", owner="process", key="a result's column names", bound=512)
def _row_class(names: tuple[bytes, ...]) -> type[Row]:
    index = {name.decode(): i for i, name in enumerate(names)}
    return type("Row", (Row,), {"__slots__": (), "_index": index})


def rows(cursor: Any) -> Any:
    """psycopg's row factory for sqlite3-like rows (by position and by column name): the result's column names
    read as they are (psycopg's ``description`` makes an object of each column, for every statement)."""
    result = cursor.pgresult
    if result is None or not result.nfields:
        return Row
    return _row_class(tuple(result.fname(i) or b"" for i in range(result.nfields)))


@caches.memo("connection.translate", owner="process", key="an SQL statement", bound=512)
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
    """A pooled psycopg connection that speaks the store's SQL (SQLite placeholders, sqlite3-like rows).

    Every statement waits at most ``bound_s`` for the server's answer (None: for ever), client-side.
    ``renew`` gives the broken connection back and lends a fresh one: the first statement of a borrow that
    finds its connection ended by the server (a restart, an administrator, while it sat idle in the pool,
    sooner than the pool's checks could see) is sent once more on a fresh one. Nothing was lost with the old
    one: the first statement of a borrow is a read, a BEGIN or a lock, never a change.
    """

    def __init__(self, raw: psycopg.Connection[Any], bound_s: float | None = None,
                 renew: Callable[[psycopg.Connection[Any]], psycopg.Connection[Any]] | None = None) -> None:
        self.raw = raw
        self.bound_s = bound_s
        self.used_at = time.monotonic()
        self._renew = renew  # None once the borrow's first statement has been sent
        self._batch: psycopg.Pipeline | None = None
        self._pending = False  # the batch queued statements since its last Sync

    @property
    def in_transaction(self) -> bool:
        # A batch is a transaction's: its BEGIN may still be queued, unsent, while libpq says IDLE.
        return self._batch is not None or self.raw.info.transaction_status != TransactionStatus.IDLE

    @property
    def fresh(self) -> bool:
        """Whether nothing was sent yet in this borrow (its first statement is sent again on a lost connection)."""
        return self._renew is not None

    def execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any] = (), /) -> Any:
        if self._batch is not None:
            return self._queue(sql, parameters)
        return self._once_more(lambda: self._execute(sql, parameters), "the statement")

    def together(self, send: Callable[[], T]) -> T:
        """What ``send`` queues (its statements, whose cursors it returns unread), sent in one round trip; as a
        borrow's first statements, sent once more on a fresh connection if the server had ended this one (nothing
        was lost with it: the first statement of a borrow is never a change)."""
        return self._once_more(lambda: self._together(send), "the statements")

    def _once_more(self, attempt: Callable[[], T], what: str) -> T:
        """``attempt``, made once more on a fresh connection where it is a borrow's first and the server had ended
        this one (a pooled connection's end is found only by using it)."""
        renew, self._renew = self._renew, None
        try:
            return attempt()
        except Unanswered:
            raise
        except psycopg.OperationalError as error:
            if renew is None or not (self.raw.closed or self.raw.broken):
                raise
            log.info("the pooled connection had been ended by the server (%s); sending %s once more on a fresh one",
                     str(error).partition("\n")[0], what)
            self.raw = renew(self.raw)
            return attempt()

    def _together(self, send: Callable[[], T]) -> T:
        with self.batch():
            return send()

    def _execute(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any]) -> Any:
        if not parameters:  # without parameters psycopg reads the text as it is
            return self._bounded(lambda: self.raw.execute(sql))
        return self._bounded(lambda: self.raw.execute(translate(sql), parameters))

    def rollback(self) -> None:
        with WATCHDOG.bound(self.raw.fileno(), self.bound_s):
            self.raw.rollback()  # in a batch, psycopg first leaves the pipeline's aborted state

    @contextmanager
    def batch(self) -> Iterator[None]:
        """Statements sent in psycopg's pipeline mode: queued, and sent only when a result is asked for and when
        the block ends (a Sync: one round trip each), every wait bounded as a statement's is. An error raises at
        the latest as the block ends, and a transaction it left open is rolled back. Not for a borrow's first
        statement, which must fail at once on a lost connection to be sent again on a fresh one."""
        assert self._batch is None and self._renew is None
        pipeline = self.raw.pipeline()
        self._batch = self._bounded(pipeline.__enter__)  # no round trip: libpq only switches its mode
        try:
            yield
        except BaseException as error:
            self._batch, self._pending = None, False
            self._bounded(partial(pipeline.__exit__, type(error), error, error.__traceback__))
            self._undo()  # an error psycopg read early raises from a later statement, the COMMIT too
            raise
        self._batch, self._pending = None, False
        try:
            self._bounded(partial(pipeline.__exit__, None, None, None))
        except psycopg.Error:
            self._undo()
            raise

    def _undo(self) -> None:
        """Roll back what a failed batch left open (nothing on a lost connection: the server did)."""
        if not (self.raw.closed or self.raw.broken) and self.in_transaction:
            self.rollback()

    def _queue(self, sql: str, parameters: Sequence[Any] | Mapping[str, Any]) -> Any:
        if sql == "ROLLBACK":  # a failed batch skips what was queued after the error, a ROLLBACK too
            self.rollback()
            return None
        cursor = self._bounded(lambda: self.raw.execute(translate(sql) if parameters else sql, parameters or None))
        self._pending = True
        return Queued(self, cursor)

    def flush(self) -> None:
        """Send what the batch queued and wait for its answers (a Sync: inside BEGIN, the transaction goes on)."""
        if self._batch is not None and self._pending:
            self._pending = False
            self._bounded(self._batch.sync)

    def _bounded(self, call: Callable[[], Any]) -> Any:
        with WATCHDOG.bound(self.raw.fileno(), self.bound_s) as watch:
            try:
                return call()
            except psycopg.OperationalError as error:
                if watch.fired:
                    raise Unanswered(f"no answer within {self.bound_s} s") from error
                raise
            finally:
                self.used_at = time.monotonic()


class Queued:
    """A statement's cursor in a batch: asking for its result first sends what the batch queued so far."""

    def __init__(self, conn: PgConnection, cursor: psycopg.Cursor[Any]) -> None:
        self._conn = conn
        self._cursor = cursor

    def _ready(self) -> psycopg.Cursor[Any]:
        self._conn.flush()
        return self._cursor

    @property
    def rowcount(self) -> int:
        return self._ready().rowcount

    def fetchone(self) -> Any:
        return self._ready().fetchone()

    def fetchall(self) -> list[Any]:
        return self._ready().fetchall()

    def __iter__(self) -> Iterator[Any]:
        return iter(self._ready())
