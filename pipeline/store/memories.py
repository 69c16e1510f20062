"""Mnemosyne's memory tables (``working_memory``, ``episodic_memory``, ``memoria_preferences``), as persona-tier
reads them: candidates to propose, new memories to count, and the tombstones that keep a memory demoted."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .. import caches
from .backend import Connection
from .database import Database
from .dialect import Dialect
from .facts import TOMBSTONE_MARK

MEMORY_TABLES = ("working_memory", "episodic_memory")


def new_memories(store: Database, *, since: int, at_most: int) -> int:
    """Working memories the profile gained after rowid ``since``, counting no further than ``at_most``.

    Bounded: it never counts more rows than it needs, however many arrived.
    """
    mine, params = ("session_id = ? AND ", (store.profile,)) if store.memory_scope == "profile" else ("", ())
    with store.read() as conn:
        return int(conn.execute(
            f"SELECT COUNT(*) FROM (SELECT 1 FROM working_memory WHERE {mine}rowid > ? LIMIT ?) AS new",
            (*params, since, at_most)
        ).fetchone()[0])


def memory_watermark(conn: Connection) -> int:
    """The newest working memory's rowid (0 for none): what the interval trigger counts from."""
    return int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM working_memory").fetchone()[0])


def tombstones(conn: Connection, profile: str) -> list[Any]:
    """(id, text, topic) of the profile's tombstones, oldest first."""
    return list(conn.execute("SELECT id, preference, topic FROM memoria_preferences WHERE session_id = ? "
                             "AND evolution = ? ORDER BY id", (profile, TOMBSTONE_MARK)))


def candidates(store: Database, conn: Connection, now: str, sources: Sequence[str], min_importance: float
               ) -> Iterator[tuple[str, Any, Any, Any, Any]]:
    """(memory id, content, metadata_json, importance, age in days) of each memory that may be proposed."""
    for table in MEMORY_TABLES:
        sql = candidate_sql(store.dialect, table, len(sources), int(store.max_fact_chars))
        yield from conn.execute(sql, (now, store.profile, *sources, min_importance))


@caches.memo("memories.candidate_sql", owner="process",
             key="a dialect, a memory table, how many sources, the longest text", bound=64)
def candidate_sql(dialect: Dialect, table: str, sources: int, max_chars: int) -> str:
    """Unpromoted, untombstoned memories of the profile from ``table``, with their age in days."""
    age = dialect.age_days("?", "COALESCE(m.timestamp, m.created_at)")
    marks = ", ".join("?" for _ in range(sources))
    return f"""
SELECT m.id, m.content, m.metadata_json, COALESCE(m.importance, 0.0), {dialect.greatest}(0.0, {age})
FROM {table} m
WHERE m.session_id = ? AND m.source IN ({marks}) AND m.importance >= ? AND TRIM(m.content) != ''
  AND {dialect.is_text('m.content')} AND length(m.content) <= {int(max_chars)}
  AND {dialect.is_number('m.importance')}
  AND NOT EXISTS (SELECT 1 FROM memoria_persona p WHERE p.session_id = m.session_id AND p.source_memory_id = m.id)
  AND NOT EXISTS (SELECT 1 FROM memoria_preferences t WHERE t.source_memory_id = m.id
                  AND t.evolution = '{TOMBSTONE_MARK}' AND t.session_id = m.session_id)
"""


# A tombstone: ours (persona_tombstone), or one Mnemosyne's own demote wrote ("demoted" or "demoted: REASON").
IS_TOMBSTONE = f"(evolution = '{TOMBSTONE_MARK}' OR evolution = 'demoted' OR evolution LIKE 'demoted: %')"


def every_tombstone(conn: Connection, profile: str) -> list[tuple[int, str, Any]]:
    """(id, text, source) of every tombstone of the profile, whoever demoted it; the text is the fact's own."""
    rows = conn.execute(f"SELECT id, preference, source_memory_id FROM memoria_preferences WHERE session_id = ? "
                        f"AND {IS_TOMBSTONE} ORDER BY id", (profile,)).fetchall()
    return [(int(row[0]), tombstoned_text(row[1]), row[2]) for row in rows]


def tombstoned_text(preference: Any) -> str:
    """The fact's text in a tombstone's ``[demoted from TIER] TEXT``."""
    text = str(preference)
    return text.partition("] ")[2] if text.startswith("[demoted from ") else text


def delete_tombstones(conn: Connection, ids: Sequence[int]) -> None:
    """Delete these tombstones (inside the caller's transaction)."""
    for tombstone_id in ids:
        conn.execute("DELETE FROM memoria_preferences WHERE id = ?", (tombstone_id,))
