"""The persona store: ``memoria_persona`` in a Mnemosyne-compatible database.

Every operation runs in one transaction and reads only its profile's rows (the
``session_id`` column). The backend is an embedded SQLite file by default, or a
PostgreSQL server named by a ``postgresql://`` URL; both run the same SQL but
for the few fragments in :mod:`.dialect`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ..clock import Clock, to_db, utc_now
from ..errors import InputError, NotFoundError, StoreError, StoreUnavailable
from ..problems import ProblemLog
from ..settings import TIERS, Settings, store_target
from ..validation import MAX_PROFILE_CHARS, MAX_TOPIC_CHARS, check_confidence, check_text, check_tier
from .backend import Backend, Connection, open_backend

log = logging.getLogger(__name__)
BROKEN_ROWS = ProblemLog(log)

__all__ = ["TOMBSTONE_MARK", "Fact", "PersonaStore", "Promotion", "tombstone_text"]

# Written to memoria_preferences.evolution so tombstones are told apart from
# real preferences by a column, not by parsing text.
TOMBSTONE_MARK = "persona_tombstone"
TIER_ORDER = "CASE tier WHEN 'permanent' THEN 0 WHEN 'long_term' THEN 1 ELSE 2 END"
MAX_ID = 2**63 - 1  # SQLite's INTEGER, PostgreSQL's bigint
PROMOTE_LOOKUP = """
SELECT (SELECT id FROM memoria_persona WHERE session_id = :session AND source_memory_id = :memory),
       (SELECT 1 FROM memoria_preferences WHERE session_id = :session AND source_memory_id = :memory
        AND evolution = :mark),
       memory.content, memory.metadata_json
FROM (SELECT 1 AS one) AS one LEFT JOIN (
    SELECT content, metadata_json FROM working_memory WHERE {mine}id = :memory
    UNION ALL SELECT content, metadata_json FROM episodic_memory WHERE {mine}id = :memory LIMIT 1
) AS memory ON TRUE
"""
# store.memory_scope: every memory in the database is the user's, or only those filed under the profile.
PROMOTE_LOOKUPS = {"all": PROMOTE_LOOKUP.format(mine=""),
                   "profile": PROMOTE_LOOKUP.format(mine="session_id = :session AND ")}
FACT_COLUMNS = (
    "id, session_id, tier, topic, content, confidence, source_memory_id, created_at, "
    "last_reinforced_at, reinforcement_count, promotion_reason"
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One row of ``memoria_persona``."""

    id: int
    session_id: str
    tier: str
    topic: str
    content: str
    confidence: float
    source_memory_id: str | None
    created_at: str
    last_reinforced_at: str
    reinforcement_count: int
    promotion_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Promotion:
    """The outcome of promote or add: the row, and whether it is new."""

    fact: Fact
    created: bool


def content_key(topic: str, content: str) -> str:
    """A fact's identity by its topic and text, kept in ``source_memory_id`` for facts that came from no memory.

    ``add`` and ``import`` share it, so the same fact is one row however it
    arrived, and a demoted one stays demoted on either path. (The ``import:``
    prefix is historical.)
    """
    return "import:" + hashlib.sha256(f"{topic}\x00{content}".encode()).hexdigest()[:16]


def tombstone_text(tier: str, content: str) -> str:
    """The tombstone's preference text, as the existing tier writes it."""
    return f"[demoted from {tier}] {content}"


class PersonaStore:
    """Store operations on one database, scoped to one profile (``session``).

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
        session: str = "default",
        busy_timeout_ms: int = 5000,
        clock: Clock = utc_now,
        reinforce_step: float = 0.0,
        max_fact_chars: int = 2000,
        create_directory: bool = False,
        readonly: bool = False,
        statement_timeout_ms: int = 0,
        memory_scope: Literal["all", "profile"] = "all",
        lock_lease_ms: int = 60_000,
    ) -> None:
        check_text("session", session, MAX_PROFILE_CHARS)
        self.backend: Backend = open_backend(target, busy_timeout_ms=busy_timeout_ms, readonly=readonly,
                                             create_directory=create_directory,
                                             statement_timeout_ms=statement_timeout_ms, lock_lease_ms=lock_lease_ms)
        self.dialect = self.backend.dialect
        self.reinforce_step = reinforce_step
        self.max_fact_chars = max_fact_chars
        self.session = session
        self.memory_scope = memory_scope
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.readonly = readonly
        self.lock = threading.RLock()
        self._conn: Connection | None = None
        self._depth = 0  # nested read()s on this store; a pooled connection goes back when it reaches 0
        self._table_names: frozenset[str] | None = None

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None for a server."""
        return getattr(self.backend, "path", None)

    @property
    def label(self) -> str:
        """How messages name this database (a URL without its password)."""
        return self.backend.label

    @classmethod
    def from_settings(cls, settings: Settings, *, session: str | None = None, clock: Clock = utc_now,
                      busy_timeout_ms: int | None = None, readonly: bool = False,
                      prompt_path: bool = False) -> PersonaStore:
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
            session=session or settings.store.session,
            busy_timeout_ms=settings.store.busy_timeout_ms if busy_timeout_ms is None else busy_timeout_ms,
            clock=clock,
            reinforce_step=settings.retention.reinforce_step if settings.retention.enabled else 0.0,
            max_fact_chars=settings.store.max_fact_chars,
            # Mnemosyne's own layout under the Hermes home is ours to create; a path the user typed is not.
            create_directory=settings.is_default("store.path") and not readonly,
            readonly=readonly,
            statement_timeout_ms=settings.injection.timeout_ms if prompt_path else settings.store.statement_timeout_ms,
            memory_scope=settings.store.memory_scope,
            lock_lease_ms=settings.store.lock_lease_ms,
        )

    def __enter__(self) -> PersonaStore:
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
                yield conn
            finally:
                self._depth -= 1
                if self._depth == 0 and getattr(self.backend, "pooled", False):
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
    def transaction(self) -> Iterator[Connection]:
        """One write transaction; taken immediately so writers queue instead of deadlocking.

        On PostgreSQL, writers of the same profile queue on a lock of that
        profile's, as SQLite's writers queue on the file: two hosts promoting
        the same memory at once make one row.
        """
        if self.readonly:
            raise StoreError(f"database {self.label} was opened read-only; this command cannot change it")
        with self.read() as conn:
            if conn.in_transaction:  # nested: the outer transaction commits or rolls back
                yield conn
                return
            conn.execute(self.dialect.begin_write)
            try:
                self.backend.claim_write(conn, self.session)
                yield conn
            except BaseException:
                if self.backend.alive(conn):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def profile_lock(self, timeout_s: float) -> Iterator[bool]:
        """Held while one worker renders this profile; yields False when another kept it for ``timeout_s``."""
        with self.backend.profile_lock(self, timeout_s) as held:
            yield held

    def now(self) -> str:
        return to_db(self.clock())

    # -- reads ---------------------------------------------------------

    def get(self, persona_id: int) -> Fact:
        """One fact of this session, or NotFoundError."""
        check_id(persona_id)
        with self.read() as conn:
            row = conn.execute(
                f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ? AND session_id = ?",
                (persona_id, self.session),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"no persona fact with id {persona_id} in session {self.session!r}")
        return Fact(**dict(row))

    def list(self, *, tier: str | None = None, topic: str | None = None) -> list[Fact]:
        """Facts in tier order (permanent first), then most reinforced, then by id; broken rows are skipped."""
        clauses, params = ["session_id = ?", f"({self.row_problem()}) IS NULL"], [self.session]
        if tier is not None:
            clauses.append("tier = ?")
            params.append(check_tier(tier))
        if topic is not None:
            if "\x00" in topic:  # no stored topic holds one; say so alike on both backends
                raise InputError("topic contains a NUL byte")
            clauses.append("topic = ?")
            params.append(topic)
        sql = (
            f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE {' AND '.join(clauses)} "
            f"ORDER BY {TIER_ORDER}, reinforcement_count DESC, id"
        )
        self.warn_broken_rows()
        with self.read() as conn:
            return [Fact(**dict(row)) for row in conn.execute(sql, params)]

    def row_problem(self) -> str:
        """SQL naming what is wrong with a ``memoria_persona`` row, NULL for a good one."""
        return self.dialect.row_problem(self.max_fact_chars)

    def warn_broken_rows(self) -> tuple[tuple[int, str], ...]:
        """Name every row of this session that breaks the contract, once each per process; return them."""
        with self.read() as conn:
            broken = tuple((int(row[0]), str(row[1])) for row in conn.execute(
                f"SELECT id, problem FROM (SELECT id, {self.row_problem()} AS problem FROM memoria_persona "
                "WHERE session_id = ?) AS checked WHERE problem IS NOT NULL ORDER BY id", (self.session,)))
        for fact_id, problem in broken:
            BROKEN_ROWS.warn(f"database {self.label}: skipping persona fact #{fact_id}: {problem}")
        return broken

    def count_by_tier(self) -> dict[str, int]:
        """How many facts this session holds in each tier."""
        with self.read() as conn:
            rows = conn.execute(
                "SELECT tier, COUNT(*) FROM memoria_persona WHERE session_id = ? GROUP BY tier", (self.session,)
            ).fetchall()
        counts = dict.fromkeys(TIERS, 0)
        counts.update({tier: count for tier, count in rows})
        return counts

    def is_tombstoned(self, source_memory_id: str) -> bool:
        """Whether a memory was demoted or evicted in this session (sticky)."""
        with self.read() as conn:
            row = conn.execute(
                "SELECT 1 FROM memoria_preferences WHERE session_id = ? AND source_memory_id = ? AND evolution = ?",
                (self.session, source_memory_id, TOMBSTONE_MARK),
            ).fetchone()
        return row is not None

    # -- writes --------------------------------------------------------

    def promote(
        self, memory_id: str, *, tier: str = "long_term", reason: str | None = None, force: bool = False
    ) -> Promotion:
        """Copy a working or episodic memory into the persona.

        Promoting an already promoted memory returns the existing row. A
        demoted memory stays demoted unless ``force`` is given.
        """
        check_tier(tier)
        with self.transaction() as conn:
            # One look-up answers everything a promote needs to know; a commit is what a promote costs.
            existing, tombstoned, content, metadata = conn.execute(PROMOTE_LOOKUPS[self.memory_scope], {
                "session": self.session, "memory": memory_id, "mark": TOMBSTONE_MARK}).fetchone()
            if existing is not None:
                return Promotion(self.get(existing), created=False)
            if tombstoned and not force:
                raise InputError(f"memory {memory_id} was demoted; pass --force to promote it again")
            if content is None:
                mine = f" filed under profile {self.session!r}" if self.memory_scope == "profile" else ""
                raise NotFoundError(f"no memory with id {memory_id}{mine} in working_memory or episodic_memory")
            if not isinstance(content, str) or not content.strip():
                raise InputError(f"memory {memory_id} has empty content; nothing to promote")
            content = check_text(f"memory {memory_id}", content, self.max_fact_chars, setting="store.max_fact_chars")
            topic = metadata_topic(metadata) or self._linked_topic(conn, memory_id)
            fact = self.insert_row(conn, tier=tier, topic=topic, content=content, confidence=0.7, source=memory_id,
                                   reason=reason)
        return Promotion(fact, created=True)

    def add(
        self,
        content: str,
        *,
        topic: str,
        tier: str = "long_term",
        confidence: float = 0.7,
        reason: str | None = None,
        force: bool = False,
    ) -> Promotion:
        """Add a fact directly. The same topic and text twice gives one row.

        A fact that was demoted stays demoted unless ``force`` is given, as
        with promote and import.
        """
        content = check_text("content", content, self.max_fact_chars, setting="store.max_fact_chars")
        topic = check_text("topic", topic, MAX_TOPIC_CHARS)
        check_tier(tier)
        check_confidence(confidence)
        key = content_key(topic, content)
        with self.transaction() as conn:
            existing = conn.execute(
                f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ({self.dialect.find_fact})",
                {"session": self.session, "key": key, "topic": topic, "content": content},
            ).fetchone()
            if existing is not None:
                return Promotion(Fact(**dict(existing)), created=False)
            if not force and self.is_tombstoned(key):
                raise InputError("that fact was demoted; pass --force to add it again")
            fact = self.insert_row(
                conn, tier=tier, topic=topic, content=content, confidence=confidence, source=key, reason=reason
            )
        return Promotion(fact, created=True)

    def demote(self, persona_id: int, *, reason: str | None = None) -> Fact:
        """Remove a fact, leaving a tombstone in ``memoria_preferences``, atomically."""
        with self.transaction() as conn:
            fact = self.get(persona_id)
            self.bury(conn, fact, reason or "demoted")
        return fact

    def reinforce(self, persona_id: int) -> Fact:
        """Count one more reinforcement, restart the fact's clock, and raise its confidence by the step (max 1)."""
        check_id(persona_id)
        with self.transaction() as conn:
            cursor = conn.execute(
                "UPDATE memoria_persona SET reinforcement_count = reinforcement_count + 1, "
                f"last_reinforced_at = ?, confidence = {self.dialect.least}(1.0, COALESCE(confidence, 0.7) + ?) "
                "WHERE id = ? AND session_id = ?",
                (self.now(), self.reinforce_step, persona_id, self.session),
            )
            if cursor.rowcount == 0:
                raise NotFoundError(f"no persona fact with id {persona_id} in session {self.session!r}")
            self.touch(conn)
        return self.get(persona_id)

    # -- helpers shared with import and retention ------------------------

    def insert_row(
        self,
        conn: Connection,
        *,
        tier: str,
        topic: str,
        content: str,
        confidence: float,
        source: str | None,
        reason: str | None,
        touch: bool = True,
    ) -> Fact:
        """Insert a fact (inside the caller's transaction) and return it as stored.

        ``touch=False`` leaves recording the change to the caller (an import records one for all its rows).
        """
        now = self.now()
        row = conn.execute(
            "INSERT INTO memoria_persona (session_id, tier, topic, content, confidence, source_memory_id, "
            "created_at, last_reinforced_at, reinforcement_count, promotion_reason) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?) RETURNING {FACT_COLUMNS}",
            (self.session, tier, topic, content, confidence, source, now, now, reason),
        ).fetchone()
        if touch:
            self.touch(conn)
        return Fact(**dict(row))

    def bury(self, conn: Connection, fact: Fact, reason: str) -> None:
        """Tombstone then delete; the caller's transaction makes the pair atomic."""
        conn.execute(
            "INSERT INTO memoria_preferences (session_id, preference, topic, evolution, context_snippet, "
            "source_memory_id) VALUES (?, ?, ?, ?, ?, ?)",
            (
                fact.session_id,
                tombstone_text(fact.tier, fact.content),
                fact.topic,
                TOMBSTONE_MARK,
                reason,
                fact.source_memory_id,
            ),
        )
        conn.execute("DELETE FROM memoria_persona WHERE id = ?", (fact.id,))
        conn.execute("DELETE FROM persona_origins WHERE persona_id = ?", (fact.id,))
        self.touch(conn)

    def touch(self, conn: Connection) -> None:
        """Record a change of this profile (inside the caller's transaction)."""
        conn.execute("INSERT INTO persona_state (session_id, generation, changed_at) VALUES (?, 1, ?) "
                     "ON CONFLICT (session_id) DO UPDATE SET generation = persona_state.generation + 1, "
                     "changed_at = excluded.changed_at", (self.session, self.now()))

    def generation(self) -> int:
        """How many changes this profile has seen; it only grows."""
        with self.read() as conn:
            return profile_generation(conn, self.session)

    def _linked_topic(self, conn: Connection, memory_id: str) -> str:
        """The topic of a preference or instruction linked to the memory, else ``general``."""
        tables = self._tables(conn)
        parts, params = [], []
        for order, (table, extra) in enumerate((("memoria_preferences", "AND COALESCE(evolution, '') != ?"),
                                                ("memoria_instructions", ""))):
            if table in tables:
                parts.append(f"SELECT topic, {order} AS source, id FROM {table} WHERE source_memory_id = ? "
                             f"AND COALESCE(TRIM(topic), '') != '' {extra}")
                params += [memory_id, TOMBSTONE_MARK] if extra else [memory_id]
        if not parts:
            return "general"
        row = conn.execute(f"SELECT topic FROM ({' UNION ALL '.join(parts)}) AS linked ORDER BY source, id LIMIT 1",
                           params).fetchone()
        return str(row[0]).strip() if row is not None else "general"

    def _tables(self, conn: Connection) -> frozenset[str]:
        if self._table_names is None:
            self._table_names = self.backend.tables(conn)
        return self._table_names


def check_id(persona_id: int) -> int:
    """A persona id SQLite can hold, or InputError."""
    if not isinstance(persona_id, int) or not 1 <= persona_id <= MAX_ID:
        raise InputError(f"invalid persona id {persona_id!r}: expected a whole number from 1 to {MAX_ID}")
    return persona_id


def metadata_topic(metadata_json: str | None) -> str | None:
    if not metadata_json:
        return None
    try:
        metadata = json.loads(metadata_json)
    except (ValueError, TypeError):
        return None
    topic = metadata.get("topic") if isinstance(metadata, dict) else None
    return topic.strip() if isinstance(topic, str) and topic.strip() else None


def profile_generation(conn: Connection, profile: str) -> int:
    """A profile's change counter (0 before its first change)."""
    row = conn.execute("SELECT generation FROM persona_state WHERE session_id = ?", (profile,)).fetchone()
    return 0 if row is None else int(row[0])
