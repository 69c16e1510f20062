"""The persona store: ``memoria_persona`` in a Mnemosyne-compatible SQLite file.

Every operation runs in one transaction and reads only its session's rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .atomic import ensure_private_dir
from .clock import Clock, to_db, utc_now
from .errors import InputError, NotFoundError, StoreError
from .problems import ProblemLog
from .schema import FIND_FACT, ensure_schema, shadow_schema
from .settings import TIERS, Settings, db_path
from .validation import MAX_TOPIC_CHARS, check_confidence, check_text, check_tier

log = logging.getLogger(__name__)
BROKEN_ROWS = ProblemLog(log)

__all__ = ["TOMBSTONE_MARK", "Fact", "PersonaStore", "Promotion", "tombstone_text"]

# Written to memoria_preferences.evolution so tombstones are told apart from
# real preferences by a column, not by parsing text.
TOMBSTONE_MARK = "persona_tombstone"
TIER_ORDER = "CASE tier WHEN 'permanent' THEN 0 WHEN 'long_term' THEN 1 ELSE 2 END"
# Rows are written by other tools too, and the schema allows values that break our contract. Such a row is
# skipped (and named in one warning) by every read that renders or ranks, never rendered and never fatal.
# Every character Python's str.isspace() accepts: "empty" means the same to SQL and to Python.
SQL_WHITESPACE = ("char(9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, "
                  "8198, 8199, 8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288)")
ROW_PROBLEM = """CASE
    WHEN typeof(content) != 'text' THEN 'content is ' || typeof(content)
    WHEN length(trim(content, {whitespace})) = 0 THEN 'content is empty'
    WHEN length(content) > {max_chars} THEN 'content is ' || length(content) || ' characters (the limit is {max_chars})'
    WHEN typeof(topic) != 'text' THEN 'topic is ' || typeof(topic)
    WHEN tier NOT IN ('permanent', 'long_term', 'working') THEN 'tier is not a tier'
    WHEN confidence IS NOT NULL AND (typeof(confidence) NOT IN ('integer', 'real') OR confidence < 0 OR confidence > 1)
        THEN 'confidence is not a number from 0 to 1'
    WHEN reinforcement_count IS NOT NULL AND (typeof(reinforcement_count) != 'integer' OR reinforcement_count < 0)
        THEN 'reinforcement_count is not a count'
END"""
MAX_ID = 2**63 - 1  # SQLite's INTEGER
PROMOTE_LOOKUP = """
SELECT (SELECT id FROM memoria_persona WHERE session_id = :session AND source_memory_id = :memory),
       (SELECT 1 FROM memoria_preferences WHERE session_id = :session AND source_memory_id = :memory
        AND evolution = :mark),
       memory.content, memory.metadata_json
FROM (SELECT 1) LEFT JOIN (
    SELECT content, metadata_json FROM working_memory WHERE id = :memory
    UNION ALL SELECT content, metadata_json FROM episodic_memory WHERE id = :memory LIMIT 1
) AS memory
"""
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
    """Store operations on one database, scoped to one session.

    Safe to call from any thread: hosts such as Hermes run each turn on a new
    thread, so the one connection is shared (``check_same_thread=False``) and
    every use of it holds :attr:`lock`. Reach the connection only through
    :meth:`read` or :meth:`transaction`.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        path: Path,
        *,
        session: str = "default",
        busy_timeout_ms: int = 5000,
        clock: Clock = utc_now,
        reinforce_step: float = 0.0,
        max_fact_chars: int = 2000,
        create_directory: bool = False,
        readonly: bool = False,
    ) -> None:
        self.path = Path(path).expanduser()
        check_text("session", session, 1000)
        self.reinforce_step = reinforce_step
        self.max_fact_chars = max_fact_chars
        self.session = session
        self.busy_timeout_ms = busy_timeout_ms
        self.clock = clock
        self.create_directory = create_directory
        self.readonly = readonly
        self.lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._table_names: frozenset[str] | None = None

    @classmethod
    def from_settings(cls, settings: Settings, *, session: str | None = None, clock: Clock = utc_now,
                      busy_timeout_ms: int | None = None, readonly: bool = False) -> PersonaStore:
        """A store on the configured database and session (``busy_timeout_ms`` overrides the setting).

        A ``readonly`` store never changes the database, not even its schema
        or journal mode; read-only commands use one.
        """
        return cls(
            db_path(settings),
            session=session or settings.store.session,
            busy_timeout_ms=settings.store.busy_timeout_ms if busy_timeout_ms is None else busy_timeout_ms,
            clock=clock,
            reinforce_step=settings.retention.reinforce_step if settings.retention.enabled else 0.0,
            max_fact_chars=settings.store.max_fact_chars,
            # Mnemosyne's own layout under the Hermes home is ours to create; a path the user typed is not.
            create_directory=settings.is_default("store.path") and not readonly,
            readonly=readonly,
        )

    def __enter__(self) -> PersonaStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self.lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def open(self) -> None:
        """Open the database now (and ensure the schema), so a bad path fails early."""
        with self.read():
            pass

    def _connection(self) -> sqlite3.Connection:
        # Callers hold the lock.
        if self._conn is None:
            self._conn = self._open()
        return self._conn

    def _open(self) -> sqlite3.Connection:
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
                    conn.execute("PRAGMA journal_mode = WAL")
                ensure_schema(conn)
            except BaseException:
                conn.close()
                raise
        return conn

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
        conn = sqlite3.connect(target, timeout=self.busy_timeout_ms / 1000, isolation_level=None,
                               check_same_thread=False, uri=uri)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
        return conn

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

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection, held for this thread; sqlite3 failures become StoreError."""
        with self.lock, self.errors():
            yield self._connection()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; taken immediately so writers queue instead of deadlocking."""
        if self.readonly:
            raise StoreError(f"database {self.path} was opened read-only; this command cannot change it")
        with self.read() as conn:
            if conn.in_transaction:  # nested: the outer transaction commits or rolls back
                yield conn
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

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
        return ROW_PROBLEM.format(max_chars=int(self.max_fact_chars), whitespace=SQL_WHITESPACE)

    def warn_broken_rows(self) -> tuple[tuple[int, str], ...]:
        """Name every row of this session that breaks the contract, once each per process; return them."""
        with self.read() as conn:
            broken = tuple((int(row[0]), str(row[1])) for row in conn.execute(
                f"SELECT id, problem FROM (SELECT id, {self.row_problem()} AS problem FROM memoria_persona "
                "WHERE session_id = ?) WHERE problem IS NOT NULL ORDER BY id", (self.session,)))
        for fact_id, problem in broken:
            BROKEN_ROWS.warn(f"database {self.path}: skipping persona fact #{fact_id}: {problem}")
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
            existing, tombstoned, content, metadata = conn.execute(PROMOTE_LOOKUP, {
                "session": self.session, "memory": memory_id, "mark": TOMBSTONE_MARK}).fetchone()
            if existing is not None:
                return Promotion(self.get(existing), created=False)
            if tombstoned and not force:
                raise InputError(f"memory {memory_id} was demoted; pass --force to promote it again")
            if content is None:
                raise NotFoundError(f"no memory with id {memory_id} in working_memory or episodic_memory")
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
                f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ({FIND_FACT})",
                (self.session, key, self.session, topic, content),
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
                "last_reinforced_at = ?, confidence = MIN(1.0, COALESCE(confidence, 0.7) + ?) "
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
        conn: sqlite3.Connection,
        *,
        tier: str,
        topic: str,
        content: str,
        confidence: float,
        source: str | None,
        reason: str | None,
    ) -> Fact:
        """Insert a fact (inside the caller's transaction) and return it as stored."""
        now = self.now()
        row = conn.execute(
            "INSERT INTO memoria_persona (session_id, tier, topic, content, confidence, source_memory_id, "
            "created_at, last_reinforced_at, reinforcement_count, promotion_reason) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?) RETURNING {FACT_COLUMNS}",
            (self.session, tier, topic, content, confidence, source, now, now, reason),
        ).fetchone()
        self.touch(conn)
        return Fact(**dict(row))

    def bury(self, conn: sqlite3.Connection, fact: Fact, reason: str) -> None:
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

    def touch(self, conn: sqlite3.Connection) -> None:
        """Record a store change (inside the caller's transaction)."""
        conn.execute("UPDATE persona_state SET generation = generation + 1, changed_at = ? WHERE id = 1", (self.now(),))

    def generation(self) -> int:
        """How many changes the store has seen; it only grows."""
        with self.read() as conn:
            return int(conn.execute("SELECT generation FROM persona_state WHERE id = 1").fetchone()[0])

    def _linked_topic(self, conn: sqlite3.Connection, memory_id: str) -> str:
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
        row = conn.execute(f"SELECT topic FROM ({' UNION ALL '.join(parts)}) ORDER BY source, id LIMIT 1",
                           params).fetchone()
        return str(row[0]).strip() if row is not None else "general"

    def _tables(self, conn: sqlite3.Connection) -> frozenset[str]:
        if self._table_names is None:
            self._table_names = frozenset(row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"))
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
