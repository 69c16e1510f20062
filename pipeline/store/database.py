"""One database connection, scoped to one profile: reads, snapshots, write transactions and the profile's lock.

The backend is an embedded SQLite file by default, or a PostgreSQL server
named by a ``postgresql://`` URL; both run the same SQL but for the few
fragments in :mod:`.dialect`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, cast

from .. import caches, inputs
from ..clock import Clock, to_db, utc_now
from ..config.urls import store_target
from ..errors import StoreError, StoreUnavailable
from ..warn_once import ProblemLog
from . import identity
from .backend import Backend, Connection, open_backend
from .render_rows import TriggersWhole
from .validation import MAX_PROFILE_CHARS, check_text

log = logging.getLogger(__name__)
DEPRECATED = ProblemLog(log)

if TYPE_CHECKING:  # made only for a store opened without settings: `persona status` runs without pydantic
    from ..config.schema import Settings, StoreSettings

T = TypeVar("T")


@caches.memo("database.store_defaults", owner="process", key="none: the store settings' defaults", bound=1)
def store_defaults() -> StoreSettings:
    """The settings' own defaults, for a Database opened without settings (the Python API): each written once."""
    from ..config.schema import StoreSettings

    return StoreSettings()


class Database:
    """One database, scoped to one profile: connections, transactions and the profile's lock.

    The profile is whose persona it is; Mnemosyne's tables call it
    ``session_id``, and that column is the only place the old word remains.

    Safe to call from any thread: hosts such as Hermes run each turn on a new
    thread, so the one connection is shared and every use of it holds
    :attr:`lock`. Reach the connection only through :meth:`read`,
    :meth:`snapshot` or :meth:`transaction`.

    ``target`` is a SQLite file path, or a ``postgresql://`` URL.
    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        target: Path | str,
        *,
        profile: str | None = None,
        busy_timeout_ms: int | None = None,
        clock: Clock = utc_now,
        reinforce_step: float = 0.0,
        max_fact_chars: int | None = None,
        max_import_facts: int | None = None,
        create_directory: bool = False,
        readonly: bool = False,
        statement_timeout_ms: int = 0,
        memory_scope: Literal["all", "profile"] | None = None,
        lock_lease_ms: int | None = None,
        supersede_detect: Literal["propose", "off", "auto", "flag"] | None = None,
        supersede_related: int | None = None,
        supersede_embeddings: Literal["auto", "off"] | None = None,
        session: str | None = None,
        writer: str = "api",
        validated: bool = False,
    ) -> None:
        """Each option left out (None) is the setting's default; ``validated``: the supersede options come from
        settings already validated (:meth:`from_settings`), so they are taken as they are."""
        profile = deprecated_session(profile, session) or store_defaults().profile
        busy_timeout_ms = _default("busy_timeout_ms", busy_timeout_ms)
        lock_lease_ms = _default("lock_lease_ms", lock_lease_ms)
        max_fact_chars = _default("max_fact_chars", max_fact_chars)
        max_import_facts = _default("max_import_facts", max_import_facts)
        memory_scope = memory_scope or store_defaults().memory_scope
        check_text("profile", profile, MAX_PROFILE_CHARS)
        self.backend: Backend = open_backend(target, busy_timeout_ms=busy_timeout_ms, readonly=readonly,
                                             create_directory=create_directory,
                                             statement_timeout_ms=statement_timeout_ms, lock_lease_ms=lock_lease_ms)
        self.dialect = self.backend.dialect
        self.reinforce_step = reinforce_step
        self.max_fact_chars = max_fact_chars
        self.max_import_facts = max_import_facts
        self.profile = profile
        self.memory_scope: Literal["all", "profile"] = memory_scope
        self.writer = writer  # who this store's writes are stamped with: cli, api, tool:HOST (see store/births.py)
        self.supersede_detect, self.supersede_related = (
            (supersede_detect, supersede_related) if validated and supersede_detect in ("propose", "off")
            and supersede_related is not None else _supersede(supersede_detect, supersede_related))
        self.supersede_embeddings: Literal["auto", "off"] = supersede_embeddings or _embeddings()
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.readonly = readonly
        self.lock = threading.RLock()
        self._conn: Connection | None = None
        self._depth = 0  # nested read()s on this store; a pooled connection goes back when it reaches 0
        self._table_names: frozenset[str] | None = None
        self.transactions = 0  # write transactions begun on this store
        # A read sent ahead on the borrowed connection, for a later step of the same borrow; dropped by any write
        # of this store's and with the connection (see PersonaStore.read_ahead).
        self.ahead: Any = None
        # While a server's tick lock is held: what sends its release, after a last write's COMMIT (transaction).
        self.held_release: Callable[[Connection], None] | None = None
        # This database's key (store/forgotten.py), once read outside the transaction that made it: it never changes.
        self.known_secret = b""
        self.secret_made_in = -1  # the transaction that made the key, if this store made it
        self.triggers_whole = TriggersWhole()  # SQLite: a render's key counts our triggers once per schema version
        self._store_id: str | None = None

    @property
    def session(self) -> str:
        """Deprecated name of :attr:`profile`."""
        return self.profile

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for a server."""
        return self.backend.path

    @property
    def label(self) -> str:
        """How messages name this database (a URL without its password)."""
        return self.backend.label

    @classmethod
    def from_settings(cls, settings: Settings, *, profile: str | None = None, clock: Clock = utc_now,
                      busy_timeout_ms: int | None = None, readonly: bool = False,
                      prompt_path: bool = False, session: str | None = None, writer: str = "api") -> Self:
        """A store on the configured database and profile (``busy_timeout_ms`` overrides the setting).

        A ``readonly`` store never changes the database, not even its schema
        or journal mode; read-only commands use one. A ``prompt_path`` store
        (an injector's) waits ``injection.busy_timeout_ms`` for a lock and
        ``injection.timeout_ms`` for a server's answer, so a prompt build is
        never held up for long.
        """
        if prompt_path and busy_timeout_ms is None:
            busy_timeout_ms = settings.injection.busy_timeout_ms
        return cls(
            store_target(settings),
            profile=deprecated_session(profile, session) or settings.store.profile,
            busy_timeout_ms=settings.store.busy_timeout_ms if busy_timeout_ms is None else busy_timeout_ms,
            clock=clock,
            reinforce_step=settings.retention.reinforce_step if settings.retention.enabled else 0.0,
            max_fact_chars=settings.store.max_fact_chars,
            max_import_facts=settings.store.max_import_facts,
            # Mnemosyne's own layout under the Hermes home is ours to create; a path the user typed is not.
            create_directory=settings.is_default("store.path") and not readonly,
            readonly=readonly,
            statement_timeout_ms=settings.injection.timeout_ms if prompt_path else settings.store.statement_timeout_ms,
            memory_scope=settings.store.memory_scope,
            lock_lease_ms=settings.store.lock_lease_ms,
            supersede_detect=settings.supersede.detect,
            supersede_related=settings.supersede.related,
            supersede_embeddings=settings.supersede.embeddings,
            writer=writer,
            validated=True,
        )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self.lock:
            if self._conn is not None:
                self.backend.release(self._conn)
                self._conn = None

    def open(self) -> None:
        """Open the database now (and ensure the schema), so a bad path fails early."""
        with self.read():
            pass

    def _connection(self) -> Connection:
        # Callers hold the lock. A server connection that was lost is replaced here, so the next
        # operation after a restart works without the caller doing anything; but not inside an
        # operation, whose transaction and locks went with the connection.
        if self._conn is not None and not self.backend.alive(self._conn):
            if self._depth:
                raise StoreUnavailable(f"lost the connection to {self.label} in the middle of an operation; "
                                       "nothing of it after its last commit was kept")
            self.backend.release(self._conn)
            self._conn = None
        if self._conn is None:
            self._conn = self.backend.connect()
        return self._conn

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn driver failures into one clear StoreError naming the database."""
        with self.backend.errors():
            yield

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """The connection, held for this thread; driver failures become StoreError.

        A server connection is borrowed from the pool for the outermost read
        (or transaction) and given back when it ends; a SQLite file stays open.
        """
        with self.lock, self.errors():
            conn = self._connection()
            self._depth += 1
            try:
                if inputs.recording_now():  # a replayable run: what the store says of the profile is an input
                    self._note_state(conn)
                yield conn
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.ahead = None
                if self._depth == 0 and self.backend.features.pooled:
                    self._conn = None
                    self.backend.release(conn)

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read-only transaction: every query inside it sees the same state of the database."""
        with self.read() as conn:
            if conn.in_transaction:
                yield conn
                return
            conn.execute(self.dialect.begin_snapshot)
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    @contextmanager
    def transaction(self, *, durable: bool = True, batched: bool = False,
                    then: Callable[[Connection], None] | None = None) -> Iterator[Connection]:
        """One write transaction; taken immediately so writers queue instead of deadlocking.

        On PostgreSQL, writers of the same profile queue on a lock of that
        profile's, as SQLite's writers queue on the file: two hosts promoting
        the same memory at once make one row.

        ``durable=False`` is for records that change nothing a user gave us (a
        render that found its output unchanged): the commit does not wait for
        the disk, so a power cut can lose it, and the next tick does that work
        again. Every fact, and every run that changed a file, commits durably.

        ``batched`` is for a transaction that does nothing but talk to the database between its statements (no
        file written in the middle): on a server, its statements are sent together, a round trip only where a
        result is read, and a failed one raises at the latest at the commit. ``then`` sends what follows the
        COMMIT (in a batch, in its round trip): the tick lock's release after a tick's last write.
        """
        if self.readonly:
            raise StoreError(f"database {self.label} was opened read-only; this command cannot change it")
        with self.read() as conn:
            if conn.in_transaction:  # nested: the outer transaction commits or rolls back
                yield conn
                return
            self.ahead = None
            with self.backend.begin_write(conn, durable=durable, batched=batched):
                self.transactions += 1
                try:
                    self.backend.claim_write(conn, self.profile)
                    yield conn
                except BaseException:
                    if self.backend.alive(conn):
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
                if then is not None:
                    then(conn)

    @contextmanager
    def profile_lock(self, timeout_s: float) -> Iterator[bool]:
        """Held while one worker renders this profile; yields False when another kept it for ``timeout_s``."""
        with self.profile_lock_asking(timeout_s, lambda conn: True) as held:
            yield bool(held)

    @contextmanager
    def profile_lock_asking(self, timeout_s: float, ahead: Callable[[Connection], T]) -> Iterator[T | None]:
        """:meth:`profile_lock`, yielding ``ahead``'s answer once held (None when not): on a server, what it
        asks (its statements' cursors, read later) is sent in the lock's round trip."""
        with self.backend.profile_lock(self, timeout_s, ahead) as answer:
            yield answer

    def now(self) -> str:
        return to_db(self.clock())

    def row_problem(self) -> str:
        """SQL naming what is wrong with a ``memoria_persona`` row, NULL for a good one (the table modules and
        the due survey skip such rows alike)."""
        return self.dialect.row_problem(self.max_fact_chars)

    def touch(self, conn: Connection) -> None:
        """Record a change of this profile that no row of memoria_persona shows (its triggers count those), such
        as facts moved to another scope (inside the caller's transaction)."""
        conn.execute(f"INSERT INTO persona_state (session_id, generation, changed_at, stamp) VALUES (?, 1, ?, "
                     f"{self.dialect.random_stamp}) ON CONFLICT (session_id) DO UPDATE SET "
                     "generation = persona_state.generation + 1, changed_at = excluded.changed_at, "
                     "stamp = excluded.stamp", (self.profile, self.now()))

    def store_id(self) -> str | None:
        """This store's random identity (:mod:`.identity`; None before the schema that made it), read once."""
        if self._store_id is None:
            with self.read() as conn:
                found = identity.store_identity(conn)
            self._store_id = None if found is None else found[0]
        return self._store_id

    def note_read(self, conn: Connection, name: str) -> None:
        """A replayable run read ``name`` (:data:`.identity.READS`) of this profile: its state is an input."""
        if inputs.recording_now() and self.backend.path is not None:
            identity.note_read(conn, str(self.backend.path), self.profile, name)

    def _note_state(self, conn: Connection) -> None:
        if self.backend.path is None:
            inputs.note("server", self.label, "!a server store: its answers are never recorded")
        else:
            identity.note_profile(conn, str(self.backend.path), self.profile)

    def generation(self) -> int:
        """How many changes this profile has seen; it only grows."""
        with self.read() as conn:
            return profile_generation(conn, self.profile)

    def _tables(self, conn: Connection) -> frozenset[str]:
        if self._table_names is None:
            self._table_names = self.backend.tables(conn)
        return self._table_names


def profile_generation(conn: Connection, profile: str) -> int:
    """A profile's change counter (0 before its first change)."""
    row = conn.execute("SELECT generation FROM persona_state WHERE session_id = ?", (profile,)).fetchone()
    return 0 if row is None else int(row[0])


def deprecated_session(profile: str | None, session: str | None) -> str | None:
    """``profile``, or the value given under its old keyword ``session`` (with one warning)."""
    if session is not None:
        DEPRECATED.warn("PersonaStore(session=...) is deprecated; pass profile=...")
        return profile or session
    return profile


def _default(name: str, value: T | None) -> T:
    """``value``, or the store setting ``name``'s default when it was left out."""
    return cast("T", getattr(store_defaults(), name)) if value is None else value


def _supersede(detect: str | None, related: int | None) -> tuple[Literal["propose", "off"], int]:
    """The supersede options as the settings validate them: the one default, and the old names' warning, are
    the settings' own."""
    from ..config.schema import SupersedeSettings

    return (SupersedeSettings.model_validate({"detect": detect} if detect else {}).detect,
            SupersedeSettings.model_validate({} if related is None else {"related": related}).related)


def _embeddings() -> Literal["auto", "off"]:
    """supersede.embeddings' one default, the settings'."""
    from ..config.schema import SupersedeSettings

    return SupersedeSettings().embeddings
