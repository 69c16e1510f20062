"""Many new facts in a few statements: an import's (issue 52: a fleet's import paid three round trips a fact).

:func:`insert_rows` does what :meth:`~.facts.FactStore.insert_row` does for each fact, in order, a chunk at a
time: every text admitted first (forgotten text is refused unless ``force``), then one ``INSERT`` per chunk (the
table's triggers give each fact its birth, row by row, as before), one ``UPDATE`` stamping the births' writers and
scopes, and one ``INSERT`` of the facts' origins. On PostgreSQL each statement takes its rows as arrays, one per
column (``unnest``): the same short text whatever the chunk, so the driver parses it once and the server plans it
once, where a statement with a placeholder per value is parsed again for every chunk. Nothing is committed here: a
failure leaves the caller's transaction to roll back, with nothing written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .backend import Connection
from .dialect import POSTGRES
from .forgotten import ForgottenTest, admit

if TYPE_CHECKING:
    from .database import Database

CHUNK = 100  # facts per statement: 900 parameters at most, under every SQLite build's limit
COLUMNS = ("session_id, tier, topic, content, confidence, source_memory_id, created_at, last_reinforced_at, "
           "reinforcement_count, promotion_reason")
# PostgreSQL's forms: each column an array. The times are plain parameters, so another tool's timestamp column
# takes them as it takes a text; the rows are made in the arrays' order, so their ids are assigned in it.
INSERT_ARRAYS = (f"INSERT INTO memoria_persona ({COLUMNS}) SELECT ?, t.tier, t.topic, t.content, t.confidence, "
                 "t.source, ?, ?, 0, t.reason FROM unnest(?::text[], ?::text[], ?::text[], ?::float8[], ?::text[], "
                 "?::text[]) WITH ORDINALITY AS t (tier, topic, content, confidence, source, reason, n) ORDER BY t.n "
                 "RETURNING id")
STAMP_ARRAYS = ("UPDATE persona_births SET writer = t.writer, scope = t.scope FROM unnest(?::bigint[], ?::text[], "
                "?::text[]) AS t (persona_id, writer, scope) WHERE profile = ? AND persona_births.persona_id = "
                "t.persona_id")
ORIGIN_COLUMNS = "persona_id, origin, file_tier, file_confidence, file_reason"
ORIGIN_UPDATE = ("ON CONFLICT (persona_id) DO UPDATE SET origin = excluded.origin, file_tier = excluded.file_tier, "
                 "file_confidence = excluded.file_confidence, file_reason = excluded.file_reason")


@dataclass(frozen=True, slots=True)
class NewRow:
    """One fact to insert: what :meth:`~.facts.FactStore.insert_row` takes, and where it came from."""

    tier: str
    topic: str
    content: str
    confidence: float
    source: str | None
    reason: str | None
    writer: str
    scope: str | None
    origin: tuple[str, tuple[str, float, str | None]] | None = None  # (origin, what it declared), for origins


def insert_rows(store: Database, conn: Connection, rows: Sequence[NewRow], *, force: bool = False,
                forgotten: ForgottenTest | None = None) -> list[int]:
    """Insert ``rows`` in the caller's transaction, each as :meth:`insert_row` would; their ids, in order."""
    for row in rows:
        admit(store, conn, row.content, row.source, force=force, test=forgotten)
    ids: list[int] = []
    for start in range(0, len(rows), CHUNK):
        chunk = rows[start:start + CHUNK]
        ids += _inserted(store, conn, chunk)
        _stamped(store, conn, chunk, ids[start:])
        _originated(store, conn, chunk, ids[start:])
    return ids


def _inserted(store: Database, conn: Connection, chunk: Sequence[NewRow]) -> list[int]:
    """The chunk's ids: one statement assigns them in its rows' order, so sorted they are the rows'."""
    now = store.now()
    if store.dialect is POSTGRES:
        columns = [[getattr(row, name) for row in chunk] for name in ("tier", "topic", "content", "confidence",
                                                                      "source", "reason")]
        found = conn.execute(INSERT_ARRAYS, [store.profile, now, now, *columns]).fetchall()
        return sorted(int(row[0]) for row in found)
    values = [(store.profile, row.tier, row.topic, row.content, row.confidence, row.source, now, now, row.reason)
              for row in chunk]
    found = conn.execute(f"INSERT INTO memoria_persona ({COLUMNS}) VALUES "
                         + ", ".join("(?, ?, ?, ?, ?, ?, ?, ?, 0, ?)" for _ in chunk) + " RETURNING id",
                         [value for row in values for value in row]).fetchall()
    return sorted(int(row[0]) for row in found)


def _stamped(store: Database, conn: Connection, chunk: Sequence[NewRow], ids: Sequence[int]) -> None:
    """Who wrote each fact, and its scope (:func:`.births.stamp`, for the chunk at once)."""
    if store.dialect is POSTGRES:
        conn.execute(STAMP_ARRAYS, [list(ids[:len(chunk)]), [row.writer for row in chunk],
                                    [row.scope for row in chunk], store.profile])
        return
    conn.execute("UPDATE persona_births SET writer = v.column2, scope = v.column3 FROM (VALUES "
                 + ", ".join("(?, ?, ?)" for _ in chunk) + ") AS v WHERE profile = ? AND persona_id = v.column1",
                 [*(value for row, fact_id in zip(chunk, ids, strict=False)
                    for value in (fact_id, row.writer, row.scope)), store.profile])


def _originated(store: Database, conn: Connection, chunk: Sequence[NewRow], ids: Sequence[int]) -> None:
    """The origins of the chunk's facts that came from a source (:func:`.origins.record`, at once)."""
    found = [(fact_id, row.origin[0], *row.origin[1]) for row, fact_id in zip(chunk, ids, strict=False)
             if row.origin is not None]
    if not found:
        return
    if store.dialect is POSTGRES:
        columns = [list(column) for column in zip(*found, strict=True)]
        conn.execute(f"INSERT INTO persona_origins ({ORIGIN_COLUMNS}) SELECT * FROM unnest(?::bigint[], ?::text[], "
                     f"?::text[], ?::float8[], ?::text[]) {ORIGIN_UPDATE}", columns)
        return
    conn.execute(f"INSERT INTO persona_origins ({ORIGIN_COLUMNS}) VALUES "
                 + ", ".join("(?, ?, ?, ?, ?)" for _ in found) + f" {ORIGIN_UPDATE}",
                 [value for row in found for value in row])
