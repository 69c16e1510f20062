"""Each fact's exact token count, kept so a fact is counted once in its life (not once per process).

A count is a pure function of the encoding and the text, so a row says which fact (``persona_id``), under which
encoding, and the sha256 of the text it was made from: a fact whose text another tool changed has another digest
and is counted again. A forget deletes the counts of every version it erases, and every count no current fact owns
any more (replaced, demoted, deleted by another tool), so no digest of a forgotten text stays. Imports nothing of
the backends, so each backend's schema can take the migration.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .backend import Connection
    from .database import Database

TABLE = "persona_token_counts"
SEGMENTS = "persona_segment_counts"  # a render's segments' counts (see :func:`known_segments`)
CHUNK = 500  # ids per lookup: well inside SQLite's 999 parameters

PRUNE = (f"DELETE FROM {TABLE} WHERE NOT EXISTS (SELECT 1 FROM memoria_persona WHERE memoria_persona.id = "
         f"{TABLE}.persona_id)")


UPSERT = (f"INSERT INTO {TABLE} (persona_id, encoding, digest, tokens) VALUES (?, ?, ?, ?) ON CONFLICT "
          "(persona_id, encoding) DO UPDATE SET digest = excluded.digest, tokens = excluded.tokens")


def token_counts(id_type: str) -> tuple[str, ...]:
    """The schema migration that adds the table (``id_type``: the backend's fact id type)."""
    return (f"""CREATE TABLE IF NOT EXISTS {TABLE} (
            persona_id {id_type} NOT NULL,
            encoding TEXT NOT NULL,
            digest TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            PRIMARY KEY (persona_id, encoding)
        )""",)


def segment_counts() -> tuple[str, ...]:
    """The schema migration that adds the segments' counts: by encoding and keyed hash, never text."""
    return (f"""CREATE TABLE IF NOT EXISTS {SEGMENTS} (
            encoding TEXT NOT NULL,
            digest TEXT NOT NULL,
            tokens INTEGER NOT NULL,
            PRIMARY KEY (encoding, digest)
        )""",)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def known(store: Database, encoding: str, facts: Mapping[int, str]) -> dict[int, int]:
    """The kept counts of ``facts`` (id -> text) under ``encoding``, for those whose text is the one counted."""
    found: dict[int, int] = {}
    ids = sorted(facts)
    with store.read() as conn:  # (a read-only view of an older database has the table as an empty TEMP one)
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start:start + CHUNK]
            marks = ", ".join("?" for _ in chunk)
            for persona_id, kept_digest, tokens in conn.execute(
                    f"SELECT persona_id, digest, tokens FROM {TABLE} WHERE encoding = ? AND persona_id IN ({marks})",
                    (encoding, *chunk)):
                if kept_digest == digest(facts[int(persona_id)]):
                    found[int(persona_id)] = int(tokens)
    return found


def keep(store: Database, encoding: str, counted: Iterable[tuple[int, str, int]]) -> None:
    """Keep (id, text, tokens) counts, in a transaction that need not wait for the disk: a count lost to a power
    cut is only counted again."""
    rows = [(persona_id, encoding, digest(text), tokens) for persona_id, text, tokens in counted]
    if not rows:
        return
    with store.transaction(durable=False, batched=True) as conn:
        for row in rows:
            conn.execute(UPSERT, row)


def forget(conn: Connection, ids: Sequence[int]) -> None:
    """Inside a forget's transaction: the counts of the erased versions, of every fact no longer current, and every
    segment's (a segment's hash cannot say which fact's text it holds; they are counted again when needed)."""
    for persona_id in ids:
        conn.execute(f"DELETE FROM {TABLE} WHERE persona_id = ?", (persona_id,))
    prune(conn)
    conn.execute(f"DELETE FROM {SEGMENTS}")


def prune(conn: Connection) -> None:
    conn.execute(PRUNE)
