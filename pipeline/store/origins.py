"""The ``persona_origins`` table (which source each imported fact came from, and what that source said of it last),
and the statements an import or a ``persona edit`` runs on the facts it matches.

The import engine and the edit (:mod:`pipeline.interchange`) decide what to
write; the SQL they need lives here, with the tables, so that no SQL runs
outside the store. Every function runs inside the caller's transaction.
"""

from __future__ import annotations

from typing import Any

from .backend import Connection
from .births import BIRTH_JOIN
from .fact_row import FACT_COLUMNS, Fact
from .facts import TOMBSTONE_MARK

Declared = tuple[str, float, str | None]  # what a source says of a fact: its tier, confidence and reason


def import_rows(conn: Connection, profile: str, asked: Any = None) -> list[Any]:
    """The profile's facts as an import matches them, newest first: each with its origin's last word and scope
    (``asked``: :func:`ask_import_rows`' cursor, sent before with other statements)."""
    return list((ask_import_rows(conn, profile) if asked is None else asked).fetchall())


def ask_import_rows(conn: Connection, profile: str) -> Any:
    """:func:`import_rows`' statement, its answer unread (in a batched transaction, sent with the next one read)."""
    return conn.execute(
        "SELECT p.id, p.tier, p.confidence, p.promotion_reason, p.source_memory_id, p.topic, p.content, "
        "p.reinforcement_count, o.persona_id AS origin_id, o.file_tier, o.file_confidence, o.file_reason, "
        f"b.scope FROM memoria_persona p LEFT JOIN persona_origins o ON o.persona_id = p.id {BIRTH_JOIN} "
        "WHERE p.session_id = ? ORDER BY p.id DESC", (profile,))


def tombstones(conn: Connection, profile: str, asked: Any = None) -> list[Any]:
    """The profile's tombstones: each one's source memory id (a fact's identity) and its text (``asked``: as
    :func:`import_rows`')."""
    return list((ask_tombstones(conn, profile) if asked is None else asked).fetchall())


def ask_tombstones(conn: Connection, profile: str) -> Any:
    """:func:`tombstones`' statement, its answer unread."""
    return conn.execute("SELECT source_memory_id, preference FROM memoria_preferences WHERE session_id = ? AND "
                        "evolution = ?", (profile, TOMBSTONE_MARK))


def bare_fact(conn: Connection, profile: str, fact_id: int) -> Fact | None:
    """One fact of the profile as its row holds it (no writer or scope looked up), or None."""
    row = conn.execute(f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ? AND session_id = ?",
                       (fact_id, profile)).fetchone()
    return None if row is None else Fact(**dict(row))


def from_origin(conn: Connection, profile: str, origin: str) -> list[int]:
    """The ids of the profile's facts that ``origin`` brought in, oldest first."""
    rows = conn.execute(
        "SELECT p.id FROM memoria_persona p JOIN persona_origins o ON o.persona_id = p.id "
        "WHERE o.origin = ? AND p.session_id = ? ORDER BY p.id",
        (origin, profile),
    ).fetchall()
    return [row["id"] for row in rows]


def record(conn: Connection, fact_id: int, origin: str, declared: Declared) -> None:
    """The fact came from ``origin``, which said ``declared`` of it."""
    conn.execute("INSERT INTO persona_origins (persona_id, origin, file_tier, file_confidence, file_reason) "
                 "VALUES (?, ?, ?, ?, ?) ON CONFLICT (persona_id) DO UPDATE SET origin = excluded.origin, "
                 "file_tier = excluded.file_tier, file_confidence = excluded.file_confidence, "
                 "file_reason = excluded.file_reason", (fact_id, origin, *declared))


def set_count(conn: Connection, fact_id: int, count: int) -> None:
    """The reinforcement count a source carried over (an export's)."""
    conn.execute("UPDATE memoria_persona SET reinforcement_count = ? WHERE id = ?", (count, fact_id))


def rewrite(conn: Connection, profile: str, fact_id: int, values: tuple[Any, ...]) -> None:
    """The whole fact as an export says it: ``values`` are its topic, content, tier, confidence, reason,
    reinforcement count and source memory id."""
    conn.execute("UPDATE memoria_persona SET topic = ?, content = ?, tier = ?, confidence = ?, promotion_reason = ?, "
                 "reinforcement_count = ?, source_memory_id = ? WHERE id = ? AND session_id = ?",
                 (*values, fact_id, profile))


def redeclare(conn: Connection, fact_id: int, declared: Declared, *, has_origin: bool) -> None:
    """The fact's tier, confidence and reason as its source now says them (and its origin's record of that)."""
    conn.execute("UPDATE memoria_persona SET tier = ?, confidence = ?, promotion_reason = ? WHERE id = ?",
                 (*declared, fact_id))
    if has_origin:
        conn.execute("UPDATE persona_origins SET file_tier = ?, file_confidence = ?, file_reason = ? "
                     "WHERE persona_id = ?", (*declared, fact_id))


def set_attributes(conn: Connection, profile: str, fact_id: int, declared: Declared, count: int) -> None:
    """The tier, confidence, reason and reinforcement count an edited file gives the fact."""
    conn.execute("UPDATE memoria_persona SET tier = ?, confidence = ?, promotion_reason = ?, reinforcement_count = ? "
                 "WHERE id = ? AND session_id = ?", (*declared, count, fact_id, profile))
