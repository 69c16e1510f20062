"""The ``persona_snapshots`` table: the persona each host session was given, per profile and target."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from ..clock import to_db
from .backend import Connection
from .database import Database

USED_AT_STEP = timedelta(days=1)  # how stale used_at may get before an unchanged refresh rewrites it
COLUMNS = "profile, session_id, target, text, sha256, generation, recorded_at, boundary, host, project"
# The profile's change counter when a snapshot is recorded: its text was rendered at or before it, so a forget
# drops every snapshot recorded at or after the forgotten fact's birth (store/erasure.py), whatever its spelling.
STORE_GENERATION = "(SELECT generation FROM persona_state WHERE session_id = ?)"


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The persona a session sees, exactly as injected. Generation 0 means "not recorded yet"."""

    profile: str
    session_id: str
    target: str
    text: str
    sha256: str
    generation: int
    recorded_at: str
    boundary: str | None = None  # the compaction the snapshot was taken at, where the host names one
    host: str | None = None  # who reads it (pipeline.inject.views.Reader): the agent, by its host's name,
    project: str | None = None  # and the project, by its identity; None when not known

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def get_snapshot(store: Database, session_id: str, target: str) -> Snapshot | None:
    """The store profile's snapshot of ``session_id`` for ``target``, or None."""
    with store.read() as conn:
        row = conn.execute(
            f"SELECT {COLUMNS} FROM persona_snapshots WHERE profile = ? AND session_id = ? AND target = ?",
            (store.profile, session_id, target),
        ).fetchone()
    return None if row is None else Snapshot(**dict(row))


ReaderKey = tuple[str | None, str | None]  # (host, project) of a session's reader
NO_READER: ReaderKey = (None, None)


def record_first(store: Database, session_id: str, target: str, text: str, *,
                 boundary: str | None = None, reader: ReaderKey = NO_READER) -> None:
    """Record ``text`` as generation 1, unless the session already has a snapshot (first write wins)."""
    now = store.now()
    with store.transaction() as conn:
        conn.execute(
            f"INSERT INTO persona_snapshots ({COLUMNS}, used_at, store_generation) "
            f"VALUES (?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, {STORE_GENERATION}) ON CONFLICT DO NOTHING",
            (store.profile, session_id, target, text, digest(text), now, boundary, *reader, now, store.profile),
        )


def session_reader(store: Database, session_id: str) -> ReaderKey | None:
    """The (host, project) a session's persona was first taken for; None for a session with no snapshot."""
    with store.read() as conn:
        row = conn.execute("SELECT host, project FROM persona_snapshots WHERE profile = ? AND session_id = ? "
                           "ORDER BY recorded_at DESC LIMIT 1", (store.profile, session_id)).fetchone()
    return None if row is None else (row[0], row[1])


def record_at_boundary(store: Database, session_id: str, target: str, text: str, *,
                       parent: str | None = None, boundary: str | None = None,
                       reader: ReaderKey = NO_READER) -> tuple[bool, int]:
    """Record ``text`` at a compaction boundary: (whether the persona changed, its generation).

    The generation advances only if the text differs from the session's
    snapshot (or, for a new session id, its parent's); an unchanged text
    leaves the row byte-identical, timestamps included (bar ``used_at``, moved
    on at most once a day, see :func:`prune_snapshots`). The check runs inside
    the write transaction, so two concurrent refreshes agree.
    """
    with store.transaction() as conn:
        row = _row(conn, store.profile, session_id, target)
        base = row or (_row(conn, store.profile, parent, target) if parent else None)
        if base is not None and base["text"] == text:
            if row is None:
                _put(store, conn, session_id, target, text, base["generation"], boundary, reader)
            else:
                _mark_used(store, conn, row, session_id, target, boundary)
            return False, int(base["generation"])
        generation = 1 if base is None else base["generation"] + 1
        _put(store, conn, session_id, target, text, generation, boundary, reader)
    return True, generation


def list_snapshots(store: Database, target: str) -> list[Snapshot]:
    """Every session's snapshot of ``target``, or of a reader's view (named '@' and a digest), for the store's
    profile."""
    with store.read() as conn:
        rows = conn.execute(
            f"SELECT {COLUMNS} FROM persona_snapshots WHERE profile = ? AND (target = ? OR target LIKE '@%') "
            "ORDER BY session_id", (store.profile, target),
        ).fetchall()
    return [Snapshot(**dict(row)) for row in rows]


def delete_snapshots(store: Database, session_id: str) -> int:
    """Delete a session's snapshots (every target) for the store's profile; how many rows went."""
    with store.transaction() as conn:
        return int(conn.execute("DELETE FROM persona_snapshots WHERE profile = ? AND session_id = ?",
                                (store.profile, session_id)).rowcount)


def _mark_used(store: Database, conn: Connection, row: Any, session_id: str, target: str,
               boundary: str | None) -> None:
    """An unchanged refresh: take a new boundary, and move ``used_at`` on if it is a day old (a write a day at
    most, so an unchanged compaction normally writes nothing and the pruning still sees the session live)."""
    stale = row["used_at"] is None or row["used_at"] < to_db(store.clock() - USED_AT_STEP)
    new_boundary = boundary is not None and row["boundary"] != boundary
    if not (stale or new_boundary):
        return
    conn.execute("UPDATE persona_snapshots SET boundary = ?, used_at = ? WHERE profile = ? AND session_id = ? "
                 "AND target = ?", (boundary if new_boundary else row["boundary"],
                                    store.now() if stale else row["used_at"], store.profile, session_id, target))


def _row(conn: Connection, profile: str, session_id: str, target: str) -> Any:
    return conn.execute(
        "SELECT text, generation, boundary, used_at FROM persona_snapshots WHERE profile = ? AND session_id = ? "
        "AND target = ?", (profile, session_id, target),
    ).fetchone()


def _put(store: Database, conn: Connection, session_id: str, target: str, text: str, generation: int,
         boundary: str | None, reader: ReaderKey) -> None:
    now = store.now()
    conn.execute(
        f"INSERT INTO persona_snapshots ({COLUMNS}, used_at, store_generation) "
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {STORE_GENERATION}) "
        "ON CONFLICT (profile, session_id, target) DO UPDATE SET text = excluded.text, sha256 = excluded.sha256, "
        "generation = excluded.generation, recorded_at = excluded.recorded_at, boundary = excluded.boundary, "
        "used_at = excluded.used_at, store_generation = excluded.store_generation",
        (store.profile, session_id, target, text, digest(text), generation, now, boundary, *reader, now,
         store.profile),
    )


def prune_snapshots(store: Database, *, before: str) -> int:
    """Delete the profile's snapshots no session has used since ``before`` (an ISO time); how many went.

    ``used_at`` moves whenever a session's snapshot is recorded, refreshed at
    a compaction (changed or not) or inherited by the session's next id, so a
    session still in use is never pruned; one idle past the cut-off records
    the current persona afresh when it comes back.
    """
    with store.read() as conn:  # most ticks have nothing to prune: one indexed read, no write transaction
        if conn.execute("SELECT 1 FROM persona_snapshots WHERE profile = ? AND used_at < ? LIMIT 1",
                        (store.profile, before)).fetchone() is None:
            return 0
    with store.transaction() as conn:
        return int(conn.execute("DELETE FROM persona_snapshots WHERE profile = ? AND used_at < ?",
                                (store.profile, before)).rowcount)


def delete_snapshots_since(store: Database, conn: Connection, generation: int) -> int:
    """Delete the profile's snapshots recorded at or after store generation ``generation`` (inside the caller's
    transaction); one from before store generations were recorded counts as recorded now. Its session takes the
    persona as it is at its next request."""
    return int(conn.execute("DELETE FROM persona_snapshots WHERE profile = ? AND (store_generation IS NULL OR "
                            "store_generation >= ?)", (store.profile, generation)).rowcount)
