"""What the store needs from a database engine, and how a target picks one."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..config.urls import is_server_url
from ..errors import StoreError, extra_needed
from .dialect import Dialect
from .features import Features
from .sqlite.backend import SqliteBackend

if TYPE_CHECKING:
    from .database import Database

T = TypeVar("T")

Params = Sequence[Any] | Mapping[str, Any]


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The part of ``sqlite3.Connection`` the store uses; rows index by position and by name."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Params = ..., /) -> Cursor: ...


class Backend(Protocol):
    """One database engine. Every connection a method is given is one this backend's :meth:`connect` made."""

    dialect: Dialect
    features: Features

    @property
    def path(self) -> Path | None: ...  # the database file, or None for a server

    @property
    def label(self) -> str: ...

    def connect(self) -> Connection: ...

    def release(self, conn: Connection) -> None: ...

    def alive(self, conn: Connection) -> bool: ...

    def relax_commit(self, conn: Connection) -> None: ...

    def begin_write(self, conn: Connection, *, durable: bool, batched: bool = False
                    ) -> AbstractContextManager[None]: ...

    def claim_write(self, conn: Connection, profile: str) -> None: ...

    def notify(self, conn: Connection, channel: str, payload: str) -> None: ...

    def channel_sql(self, name_sql: str) -> str: ...

    def write_and_notify(self, conn: Connection, statement: str, parameters: Sequence[Any], channel: str,
                         payload: str) -> None: ...

    def profile_lock(self, store: Database, timeout_s: float,
                     ahead: Callable[[Connection], T]) -> AbstractContextManager[T | None]: ...

    def tables(self, conn: Connection) -> frozenset[str]: ...

    def columns(self, conn: Connection, table: str) -> list[str]: ...

    def secure_delete(self, conn: Connection, on: bool) -> None: ...

    def scrub(self, store: Database, tables: list[str]) -> bool: ...

    def errors(self) -> AbstractContextManager[None]: ...


def open_backend(target: Path | str, *, busy_timeout_ms: int, readonly: bool, create_directory: bool,
                 statement_timeout_ms: int, lock_lease_ms: int) -> Backend:
    """The backend for a SQLite path (or ``sqlite:///path``) or a ``postgresql://`` URL."""
    if is_server_url(target):
        try:
            from .postgres.backend import PostgresBackend  # psycopg is needed only for a server
        except ModuleNotFoundError as missing:
            raise StoreError(extra_needed(f"a PostgreSQL store ({missing.name} is not installed)", "postgres")
                             ) from None

        return PostgresBackend(str(target), busy_timeout_ms=busy_timeout_ms, readonly=readonly,
                               statement_timeout_ms=statement_timeout_ms, lock_lease_ms=lock_lease_ms)
    path = Path(str(target).removeprefix("sqlite://")) if str(target).startswith("sqlite://") else Path(target)
    return SqliteBackend(path, busy_timeout_ms=busy_timeout_ms, create_directory=create_directory,
                         readonly=readonly)
