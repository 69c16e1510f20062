"""The embedded backend: one Mnemosyne-compatible SQLite file, the default."""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ... import inputs
from ...errors import StoreError
from ...fs.locations import profile_slug
from ...fs.lock import file_lock_or_busy
from ...fs.write import ensure_private_dir
from ..dialect import SQLITE
from ..features import Features
from .schema import ensure_schema, shadow_schema

if TYPE_CHECKING:
    from ..backend import Connection
    from ..database import Database

T = TypeVar("T")

log = logging.getLogger(__name__)
WAL_RETRY_S = 0.005  # between tries of the switch to write-ahead logging (see _enter_wal)


def _has_power() -> bool:
    with closing(sqlite3.connect(":memory:")) as probe:
        try:
            probe.execute("SELECT power(2, 1)")
        except sqlite3.OperationalError:
            return False
    return True


HAS_POWER = _has_power()


class SqliteBackend:
    """Opens the database file, creates or checks its schema, and explains its failures."""

    dialect = SQLITE
    features = Features()

    def __init__(self, path: Path, *, busy_timeout_ms: int, create_directory: bool, readonly: bool) -> None:
        self.path = inputs.expanded(Path(path))
        self.busy_timeout_ms = busy_timeout_ms
        self.create_directory = create_directory
        self.readonly = readonly

    @property
    def label(self) -> str:
        """How messages name this database."""
        return str(self.path)

    def connect(self) -> sqlite3.Connection:
        if self.readonly:
            return self._open_readonly()
        parent = self.path.parent
        if self.create_directory and not parent.exists():
            try:
                ensure_private_dir(parent)
            except OSError as error:
                raise StoreError(f"cannot create the database directory {parent}: {error.strerror}") from None
        if not parent.is_dir():
            raise StoreError(f"database directory {parent} does not exist (create it, or set store.path / --db)")
        if self.path.is_dir():
            raise StoreError(f"database path {self.path} is a directory")
        created = _create_private(self.path) or self.path.stat().st_size == 0
        with self.errors():
            conn = self._connect(str(self.path))
            try:
                if created:  # an existing database keeps the journal mode its owner chose
                    self._enter_wal(conn)
                ensure_schema(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _enter_wal(self, conn: sqlite3.Connection) -> None:
        """Switch a new file to write-ahead logging. SQLite answers "locked" at once, without its busy handler,
        while another connection holds the file (two threads opening it first at the same moment), so this waits
        here as the busy timeout would; the other opener's switch counts."""
        deadline = time.monotonic() + self.busy_timeout_ms / 1000
        while True:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as error:
                contended = "locked" in str(error) or "busy" in str(error)
                if not contended or time.monotonic() >= deadline:
                    raise
            time.sleep(WAL_RETRY_S)

    def _open_readonly(self) -> sqlite3.Connection:
        """The database opened read-only (a missing one reads as empty); nothing on disk changes."""
        if self.path.is_dir():
            raise StoreError(f"database path {self.path} is a directory")
        target = f"{self.path.absolute().as_uri()}?mode=ro" if self.path.exists() else "file::memory:"
        with self.errors():
            conn = self._connect(target, uri=True)
            try:
                shadow_schema(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _connect(self, target: str, *, uri: bool = False) -> sqlite3.Connection:
        # Hosts such as Hermes run each turn on a new thread: the store shares this one connection
        # under its lock, so it must not be tied to the thread that opened it.
        conn = sqlite3.connect(target, timeout=self.busy_timeout_ms / 1000, isolation_level=None,
                               check_same_thread=False, uri=uri)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        if not HAS_POWER:  # SQLite's math functions are a build option; retention's due check needs this one
            conn.create_function("power", 2, math.pow, deterministic=True)
        return conn

    def release(self, conn: Connection) -> None:
        cast(sqlite3.Connection, conn).close()  # one that connect() made

    def alive(self, conn: Connection) -> bool:
        return True  # a file does not hang up

    @contextmanager
    def begin_write(self, conn: Connection, *, durable: bool, batched: bool = False) -> Iterator[None]:
        """BEGIN IMMEDIATE; a commit that need not be durable skips the WAL's fsync (synchronous=NORMAL, which
        SQLite lets a connection change only between transactions, so it is put back once this one ends).
        ``batched`` changes nothing: a file has no round trips to save."""
        if durable:
            conn.execute("BEGIN IMMEDIATE")
            yield
            return
        conn.execute("PRAGMA synchronous = NORMAL")
        try:
            conn.execute("BEGIN IMMEDIATE")
            yield
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.execute("PRAGMA synchronous = FULL")

    def relax_commit(self, conn: Connection) -> None:
        """Not after BEGIN: SQLite changes synchronous only between transactions (``features.relaxes_late`` is
        False, so callers choose ``durable`` before it); the commit stays durable."""

    def claim_write(self, conn: Connection, profile: str) -> None:
        """Nothing to do: BEGIN IMMEDIATE already made this the database's only writer."""

    def notify(self, conn: Connection, channel: str, payload: str) -> None:
        """Nothing to announce: every reader of a file is on this host and checks it itself."""

    def channel_sql(self, name_sql: str) -> str:
        """A channel's name as it is: nothing listens (see :meth:`notify`)."""
        return name_sql

    def write_and_notify(self, conn: Connection, statement: str, parameters: Sequence[Any], channel: str,
                         payload: str) -> None:
        """The write alone (see :meth:`notify`)."""
        conn.execute(statement, parameters)

    @contextmanager
    def profile_lock(self, store: Database, timeout_s: float, ahead: Callable[[Connection], T]) -> Iterator[T | None]:
        """One tick at a time per profile: a lock file of the profile's beside the database (yields ``ahead``'s
        answer once held, None if it stayed busy). Per profile, so one user's render never keeps another user's
        cold start waiting."""
        directory = Path(f"{self.path}.persona-locks")
        ensure_private_dir(directory)
        with file_lock_or_busy(directory / f"{profile_slug(store.profile)}.lock", timeout_s) as held:
            if not held:
                yield None
                return
            with store.read() as conn:
                answer = ahead(conn)
            yield answer

    def tables(self, conn: Connection) -> frozenset[str]:
        return frozenset(row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))

    def columns(self, conn: Connection, table: str) -> list[str]:
        return [str(row[1]) for row in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))]

    def secure_delete(self, conn: Connection, on: bool) -> None:
        """Deleted content is overwritten with zeros (secure_delete), not left in free pages."""
        conn.execute(f"PRAGMA secure_delete = {'ON' if on else 'OFF'}")

    def scrub(self, store: Database, tables: list[str]) -> bool:
        """After a forget: rebuild the file (VACUUM copies live rows only, so no free page or freed cell keeps
        an older version of a row), then checkpoint the write-ahead log and truncate it to nothing. False when
        a reader kept the log from being emptied (its frames may still hold the old rows)."""
        with store.read() as conn:
            conn.execute("VACUUM")
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            log.warning("database %s: a reader kept the write-ahead log from being emptied after a forget, so it "
                        "may still hold the forgotten text; run `persona scrub` once it is idle", self.label)
        return not busy

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn sqlite3 failures into one clear StoreError naming the database."""
        try:
            yield
        except sqlite3.Error as error:
            raise StoreError(self._explain(error)) from error
        except (UnicodeEncodeError, OverflowError) as error:  # a value SQLite cannot hold reached a query
            raise StoreError(f"database {self.path}: a value cannot be stored ({error})") from None

    def _explain(self, error: sqlite3.Error) -> str:
        text = str(error)
        if "locked" in text or "busy" in text:
            return f"database {self.path} is locked by another writer (waited {self.busy_timeout_ms} ms)"
        if "not a database" in text:
            return f"{self.path} is not a SQLite database"
        if "unable to open" in text:
            return f"cannot open database {self.path}: check that it and its directory are readable and writable"
        if "malformed" in text:
            return f"database {self.path} is corrupt ({text})"
        return f"database {self.path}: {text}"


def _create_private(path: Path) -> bool:
    """A new database holds personal data: create it 0600 (SQLite gives its -wal and -shm files the same mode).

    Returns whether the file was created now.
    """
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    except OSError as error:
        raise StoreError(f"cannot create database {path}: {error.strerror}") from None
    return True
