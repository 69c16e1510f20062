"""SQLite schema: Mnemosyne's tables when missing, and our own versioned tables.

Mnemosyne's tables are created with ``IF NOT EXISTS`` and exactly Mnemosyne's columns; an existing table is never
altered. Our tables carry the prefix ``persona_`` and evolve only through :data:`MIGRATIONS`.
"""

from __future__ import annotations

import re
import sqlite3

from ...errors import StoreError
from ...tiers import sql_list
from ..agent_tables import fact_locks, held_writes, learned, learned_births
from ..contract import REQUIRED_COLUMNS
from ..history_scrubs import history_scrubs
from ..rekey import rekey
from ..stem_tables import merges_and_stems, stem_readers
from ..token_counts import segment_counts, token_counts
from .triggers import FIRST_TRIGGERS, restore_triggers, row_changes, settled, stamped, vanishing

MNEMOSYNE_TABLES = (
    f"""CREATE TABLE IF NOT EXISTS memoria_persona (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT DEFAULT 'default',
        tier TEXT NOT NULL CHECK(tier IN ({sql_list(',')})),
        topic TEXT NOT NULL,
        content TEXT NOT NULL,
        confidence REAL DEFAULT 0.7,
        source_memory_id TEXT,
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        last_reinforced_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
        reinforcement_count INTEGER DEFAULT 0,
        promotion_reason TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS idx_persona_session_tier ON memoria_persona(session_id, tier)",
    "CREATE INDEX IF NOT EXISTS idx_persona_tier_topic ON memoria_persona(tier, topic)",
    """CREATE TABLE IF NOT EXISTS memoria_preferences (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT DEFAULT 'default',
        message_idx INTEGER,
        preference TEXT,
        topic TEXT,
        evolution TEXT,
        context_snippet TEXT,
        source_memory_id TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS idx_pref_session ON memoria_preferences(session_id)",
    """CREATE TABLE IF NOT EXISTS working_memory (
        id TEXT PRIMARY KEY,
        content TEXT NOT NULL,
        source TEXT,
        timestamp TEXT,
        session_id TEXT DEFAULT 'default',
        importance REAL DEFAULT 0.5,
        metadata_json TEXT,
        veracity TEXT DEFAULT 'unknown',
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
    )""",
    "CREATE INDEX IF NOT EXISTS idx_wm_session ON working_memory(session_id)",
    """CREATE TABLE IF NOT EXISTS episodic_memory (
        rowid INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT UNIQUE NOT NULL,
        content TEXT NOT NULL,
        source TEXT,
        timestamp TEXT,
        session_id TEXT DEFAULT 'default',
        importance REAL DEFAULT 0.5,
        metadata_json TEXT,
        summary_of TEXT DEFAULT '',
        veracity TEXT DEFAULT 'unknown',
        created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
    )""",
    "CREATE INDEX IF NOT EXISTS idx_em_session ON episodic_memory(session_id)",
)


# Each entry moves the schema from version N-1 to N. Append only.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        # Which declarative facts file a persona row came from, for import --prune.
        """CREATE TABLE persona_origins (
            persona_id INTEGER PRIMARY KEY,
            origin TEXT NOT NULL
        )""",
        "CREATE INDEX idx_persona_origins_origin ON persona_origins(origin)",
    ),
    (
        # A counter bumped by every store change: renders carry it, so an older render never overwrites a newer
        # one, and triggers see "store changed".
        """CREATE TABLE persona_state (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            generation INTEGER NOT NULL DEFAULT 0,
            changed_at TEXT
        )""",
        "INSERT INTO persona_state (id, generation) VALUES (1, 0)",
        """CREATE TABLE persona_runs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_at TEXT NOT NULL,
            session_id TEXT NOT NULL,
            target TEXT NOT NULL,
            path TEXT NOT NULL,
            reason TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            budget INTEGER NOT NULL,
            sections_kept INTEGER NOT NULL,
            sections_dropped INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            memory_watermark INTEGER NOT NULL,
            outcome TEXT NOT NULL CHECK (outcome IN ('written', 'unchanged', 'stale')),
            config_hash TEXT
        )""",
        "CREATE INDEX idx_persona_runs_target ON persona_runs(path, generation)",
        # Lookups by source memory: promote's "already promoted", extract's candidates.
        "CREATE INDEX IF NOT EXISTS idx_persona_source ON memoria_persona(session_id, source_memory_id)",
        "CREATE INDEX IF NOT EXISTS idx_persona_tombstones ON memoria_preferences(source_memory_id) "
        "WHERE evolution = 'persona_tombstone'",
    ),
    (
        # The persona a running session was given, exactly as injected (after the cap).
        """CREATE TABLE persona_snapshots (
            session_id TEXT NOT NULL,
            target TEXT NOT NULL,
            text TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            generation INTEGER NOT NULL,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (session_id, target)
        )""",
    ),
    (
        # Snapshots belong to a profile as well as a host session, and remember the compaction (the host's
        # summary) they were taken at, so a restarted host does not refresh twice.
        """CREATE TABLE persona_snapshots_v4 (
            profile TEXT NOT NULL,
            session_id TEXT NOT NULL,
            target TEXT NOT NULL,
            text TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            generation INTEGER NOT NULL,
            recorded_at TEXT NOT NULL,
            boundary TEXT,
            PRIMARY KEY (profile, session_id, target)
        )""",
        "INSERT INTO persona_snapshots_v4 (profile, session_id, target, text, sha256, generation, recorded_at) "
        "SELECT 'default', session_id, target, text, sha256, generation, recorded_at FROM persona_snapshots",
        "DROP TABLE persona_snapshots",
        "ALTER TABLE persona_snapshots_v4 RENAME TO persona_snapshots",
    ),
    (
        # What the facts file said at the last import: a re-import changes a row only when the file changed, so
        # confidence earned by reinforcement survives importing the same file again.
        "ALTER TABLE persona_origins ADD COLUMN file_tier TEXT",
        "ALTER TABLE persona_origins ADD COLUMN file_confidence REAL",
        "ALTER TABLE persona_origins ADD COLUMN file_reason TEXT",
    ),
    (
        # "Is this topic and text already a fact?" (add, import) without reading the whole table: an OR across two
        # columns defeated the source index and made a 10k import quadratic.
        "CREATE INDEX IF NOT EXISTS idx_persona_topic_content ON memoria_persona(session_id, topic, content)",
    ),
    (
        # The counter a run's token count is exact under: `persona inject` trusts a recorded count for the same
        # bytes and counter instead of loading the tokenizer.
        "ALTER TABLE persona_runs ADD COLUMN counter TEXT",
    ),
    (
        # Each profile has its own generation: in a database shared by many profiles, one profile's change must not
        # make every other profile look changed. Profiles that exist start at the old shared generation, so every
        # run already recorded stays comparable.
        "CREATE TABLE persona_state_v8 (session_id TEXT PRIMARY KEY, generation INTEGER NOT NULL DEFAULT 0, "
        "changed_at TEXT)",
        "INSERT INTO persona_state_v8 (session_id, generation, changed_at) "
        "SELECT profiles.session_id, state.generation, state.changed_at FROM (SELECT session_id FROM memoria_persona "
        "WHERE session_id IS NOT NULL UNION SELECT session_id FROM persona_runs UNION SELECT profile FROM "
        "persona_snapshots) AS profiles, persona_state AS state WHERE state.id = 1",
        "DROP TABLE persona_state",
        "ALTER TABLE persona_state_v8 RENAME TO persona_state",
        "CREATE INDEX idx_persona_runs_profile ON persona_runs(session_id, id)",
    ),
    (
        # Rendered, capped blocks for `output: store` targets, read by `injection.source: store`.
        """CREATE TABLE persona_blocks (
            profile TEXT NOT NULL,
            target TEXT NOT NULL,
            generation INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            text TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            counter TEXT NOT NULL,
            rendered_at TEXT NOT NULL,
            PRIMARY KEY (profile, target)
        )""",
    ),
    (
        # Supersession (replace, a facts file's key, detection): the old fact's whole row moves out of
        # memoria_persona into persona_superseded with its lineage (superseded_by, superseded_at, how), so every
        # reader of Mnemosyne's table sees only current facts, and undo can move it back under its own id.
        """CREATE TABLE persona_superseded (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL,
            tier TEXT NOT NULL,
            topic TEXT NOT NULL,
            content TEXT NOT NULL,
            confidence REAL,
            source_memory_id TEXT,
            created_at TEXT,
            last_reinforced_at TEXT,
            reinforcement_count INTEGER,
            promotion_reason TEXT,
            superseded_by INTEGER NOT NULL,
            superseded_at TEXT NOT NULL,
            how TEXT NOT NULL
        )""",
        "CREATE INDEX idx_persona_superseded_by ON persona_superseded (session_id, superseded_by)",
        # A facts file's slot (key: package_manager) and the profile's current fact in it.
        """CREATE TABLE persona_keys (
            session_id TEXT NOT NULL,
            key TEXT NOT NULL,
            persona_id INTEGER NOT NULL,
            PRIMARY KEY (session_id, key)
        )""",
        "CREATE INDEX idx_persona_keys_fact ON persona_keys (persona_id)",
        # supersede.detect: flag: pairs the detector would have superseded, for status and explain.
        """CREATE TABLE persona_flags (
            session_id TEXT NOT NULL,
            old_id INTEGER NOT NULL,
            new_id INTEGER NOT NULL,
            flagged_at TEXT NOT NULL,
            PRIMARY KEY (session_id, old_id, new_id)
        )""",
    ),
    (
        # Forget for real (store/forgotten.py): what remains of a forgotten fact is a keyed hash of its text and
        # source, under a secret of this database's own, so the same memory is never proposed again while the text
        # itself is gone. Each profile counts its erasures, the cheap check hosts make.
        "CREATE TABLE persona_secret (id INTEGER PRIMARY KEY CHECK (id = 1), secret TEXT NOT NULL)",
        """CREATE TABLE persona_forgotten (
            profile TEXT NOT NULL,
            digest TEXT NOT NULL,
            forgotten_at TEXT NOT NULL,
            PRIMARY KEY (profile, digest)
        )""",
        "CREATE TABLE persona_erasures (profile TEXT PRIMARY KEY, erased INTEGER NOT NULL DEFAULT 0)",
    ),
    (
        # When a session last used its snapshot (recorded, refreshed at a compaction, inherited), so store.
        # keep_snapshot_days can prune the rows of sessions long gone and never a live one's.
        "ALTER TABLE persona_snapshots ADD COLUMN used_at TEXT",
        "UPDATE persona_snapshots SET used_at = recorded_at",
        "CREATE INDEX idx_persona_snapshots_used ON persona_snapshots (profile, used_at)",
    ),
    (
        # Every writer is seen (TRIGGERS), and a forget knows what was rendered from a fact by generation, not by
        # searching for its text: a fact's birth (who wrote it: NULL for another tool; its scope: NULL for global,
        # project:ID or host:NAME, never in Mnemosyne's table), and the profile's generation at a snapshot.
        """CREATE TABLE persona_births (
            profile TEXT NOT NULL,
            persona_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            tombstone INTEGER,
            writer TEXT,
            scope TEXT,
            PRIMARY KEY (profile, persona_id)
        )""",
        *FIRST_TRIGGERS,
        "ALTER TABLE persona_snapshots ADD COLUMN store_generation INTEGER",
        # Scoped facts: a session's reader (its agent and project) is fixed when its snapshot is first taken, so a
        # later refresh renders the same view; a key names a slot within one scope ('' for global), so a project's
        # package_manager never supersedes the global one.
        "ALTER TABLE persona_snapshots ADD COLUMN host TEXT",
        "ALTER TABLE persona_snapshots ADD COLUMN project TEXT",
        """CREATE TABLE persona_keys_v2 (
            session_id TEXT NOT NULL,
            scope TEXT NOT NULL DEFAULT '',
            key TEXT NOT NULL,
            persona_id INTEGER NOT NULL,
            PRIMARY KEY (session_id, scope, key)
        )""",
        "INSERT INTO persona_keys_v2 (session_id, scope, key, persona_id) SELECT session_id, '', key, persona_id "
        "FROM persona_keys",
        "DROP TABLE persona_keys",
        "ALTER TABLE persona_keys_v2 RENAME TO persona_keys",
        "CREATE INDEX idx_persona_keys_fact ON persona_keys (persona_id)",
    ),
    (
        # Proposals (supersede.detect: propose) replace supersede.detect: flag's pairs: a write that may update an
        # older fact stores the pair for `persona review`, where it is accepted (a replace) or dismissed. A
        # dismissed pair keeps keyed hashes of its two texts (store/forgotten.py's key), so the same pair is never
        # proposed again, even when its facts are added anew; open flags carry over as open proposals.
        """CREATE TABLE persona_proposals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL,
            old_id INTEGER NOT NULL,
            new_id INTEGER NOT NULL,
            rule TEXT NOT NULL,
            proposed_at TEXT NOT NULL,
            decision TEXT,
            decided_at TEXT,
            old_digest TEXT,
            new_digest TEXT,
            UNIQUE (session_id, old_id, new_id)
        )""",
        "CREATE INDEX idx_persona_proposals_digests ON persona_proposals (session_id, old_digest, new_digest)",
        "INSERT INTO persona_proposals (session_id, old_id, new_id, rule, proposed_at) "
        "SELECT session_id, old_id, new_id, 'flag', flagged_at FROM persona_flags ORDER BY flagged_at, old_id, new_id",
        "DROP TABLE persona_flags",
    ),
    merges_and_stems("INTEGER"),  # merge proposals and the proposal check's stem index (store/stem_tables.py)
    (),  # Text keys hash the normal form of topic and text: store/rekey.py re-keys every row, in Python.
    row_changes(),  # each fact's last change, for a kept render's read of what changed (sqlite/triggers.py)
    stamped(),  # the store's identity, and a random stamp with every change (sqlite/triggers.py)
    history_scrubs(),  # a forget's pending scrub of the hosts' histories, by keyed hash (store/history_scrubs.py)
    fact_locks(), held_writes("INTEGER PRIMARY KEY AUTOINCREMENT", "REAL"),  # locked facts, agents' held writes
    learned(),  # what persona learn took from the hosts' memory, by keyed hash (store/learned.py)
    token_counts("INTEGER"), segment_counts(),  # exact counts: a fact's, a render segment's (store/*_counts.py)
    learned_births(), vanishing(), stem_readers())  # learned.py; deleted elsewhere (vanished.py); stem_tables.py

SCHEMA_VERSION = len(MIGRATIONS)
REKEYED_AT = 16  # the version whose migration re-keys (in Python: SQL cannot make the normal form)

_CREATE_TABLE = re.compile(r"^\s*CREATE TABLE (IF NOT EXISTS )?(\w+)", re.IGNORECASE)


def ensure_schema(conn: sqlite3.Connection) -> None:
    """Create missing tables and apply pending migrations, in one transaction; compatibility is checked first,
    so a database that cannot work is refused with nothing changed."""
    if settled(conn, SCHEMA_VERSION):
        return
    version = _version(conn)
    if version == SCHEMA_VERSION:
        restore_triggers(conn)
        return
    check_compatible(conn, version)
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS persona_schema (id INTEGER PRIMARY KEY CHECK (id = 1), "
                     "version INTEGER NOT NULL)")
        for statement in MNEMOSYNE_TABLES:
            conn.execute(statement)
        version = _version(conn)  # another process may have migrated meanwhile
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                conn.execute(statement)
        if version < REKEYED_AT:
            rekey(conn)
        conn.execute("INSERT OR REPLACE INTO persona_schema (id, version) VALUES (1, ?)", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def shadow_schema(conn: sqlite3.Connection) -> None:
    """For a read-only connection: stand in empty TEMP tables for whatever the database lacks.

    A read never changes the user's database, yet every query works: a
    Mnemosyne database persona-tier has not written to yet reads as "no runs,
    no snapshots". (TEMP tables shadow nothing that exists: only missing
    tables, or all of ours when they are not at this version.)
    """
    version = _version(conn)
    check_compatible(conn, version)
    existing = _tables(conn)
    statements = [s for s in MNEMOSYNE_TABLES if (m := _CREATE_TABLE.match(s)) and m.group(2) not in existing]
    if version != SCHEMA_VERSION:
        statements.append("CREATE TABLE persona_schema (id INTEGER PRIMARY KEY, version INTEGER NOT NULL)")
        statements += [s for group in MIGRATIONS for s in group
                       if not s.lstrip().upper().startswith(("CREATE INDEX", "CREATE TRIGGER", "DROP TRIGGER"))]
    for statement in statements:
        conn.execute(_CREATE_TABLE.sub(lambda m: f"CREATE TEMP TABLE {m.group(1) or ''}{m.group(2)}", statement))


def check_compatible(conn: sqlite3.Connection, version: int) -> None:
    """Raise StoreError naming the first table and column the database lacks, or a newer schema."""
    if version > SCHEMA_VERSION:
        raise StoreError(f"database schema version {version} is newer than this persona-tier supports "
                         f"({SCHEMA_VERSION}); upgrade persona-tier")
    existing = _tables(conn)
    for table, needed in REQUIRED_COLUMNS.items():
        if table not in existing:
            continue
        have = {row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")}
        missing = [column for column in needed if column not in have]
        if missing:
            raise StoreError(f"table {table} has no column {missing[0]!r}, which persona-tier needs; it is not a "
                             f"Mnemosyne-compatible table, and nothing was changed")


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM main.sqlite_master WHERE type = 'table'")}


def _version(conn: sqlite3.Connection) -> int:
    if "persona_schema" not in _tables(conn):
        return 0
    row = conn.execute("SELECT version FROM main.persona_schema WHERE id = 1").fetchone()
    return int(row[0]) if row else 0
