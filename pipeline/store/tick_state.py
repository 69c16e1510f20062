"""What a tick asks of one profile before it decides anything, in one statement.

The triggers' inputs (the last run that read current data, the change counter,
which stored blocks exist, the working memories since the last run's
watermark) and whether retention or snapshot pruning has anything to do: on a
server each question was a round trip of its own. The answers are those the
separate reads (:func:`.runs.last_run`, :meth:`.database.Database.generation`,
:func:`.blocks.existing_blocks`, :func:`.memories.new_memories`) give, read at
one moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .backend import Connection, Cursor
from .database import Database
from .retention_due import retention_due, retention_params
from .runs import LastRun

if TYPE_CHECKING:  # the rules' type only: `persona status` runs without pydantic
    from ..config.schema import RetentionSettings

LAST_RUN = ("SELECT id FROM persona_runs WHERE session_id = :profile AND outcome != 'stale' "
            "ORDER BY id DESC LIMIT 1")


@dataclass(frozen=True, slots=True)
class TickState:
    """One profile's answers: ``blocks`` is which of the targets asked about have a stored block, and
    ``new_memories`` counts no further than the ``at_most`` asked for."""

    last: LastRun | None
    generation: int
    blocks: frozenset[str]
    new_memories: int
    retention_due: bool  # some fact may be evicted or promoted now (never False when one is)
    idle_snapshots: bool  # some session snapshot was last used before the cut-off asked about


def tick_state(store: Database, *, targets: list[str], at_most: int, retention: RetentionSettings | None = None,
               snapshots_before: str | None = None) -> TickState:
    """The profile's answers; ``retention`` and ``snapshots_before`` are asked only when given."""
    with store.read() as conn:
        store.note_read(conn, "memories")
        return ask_tick_state(conn, store, targets=targets, at_most=at_most, retention=retention,
                              snapshots_before=snapshots_before).answer()


@dataclass(frozen=True, slots=True)
class AskedState:
    """:func:`tick_state`'s statement, sent (or queued in a batch): :meth:`answer` reads it."""

    asked: Cursor
    targets: list[str]

    def answer(self) -> TickState:
        row = self.asked.fetchall()[0]  # read to its end: a SQLite statement left open would hold its snapshot
        last = None if row[0] is None else LastRun(row[0], row[1], row[2], row[3])
        present = row[6:6 + len(self.targets)]
        return TickState(last, int(row[4]), frozenset(t for t, there in zip(self.targets, present, strict=True)
                                                      if there), int(row[5]), bool(row[-2]), bool(row[-1]))


def ask_tick_state(conn: Connection, store: Database, *, targets: list[str], at_most: int,
                   retention: RetentionSettings | None = None, snapshots_before: str | None = None) -> AskedState:
    """:func:`tick_state`'s statement on ``conn``, unread (in a batch, sent with the batch's next round trip)."""
    columns, params = _columns(store, targets, at_most)
    if retention is not None and retention.enabled:
        columns.append(f"CASE WHEN {retention_due(retention, store, ':profile')} THEN 1 ELSE 0 END")
        params |= retention_params(retention) | {"now": store.now()}
    else:
        columns.append("0")
    columns.append("CASE WHEN EXISTS (SELECT 1 FROM persona_snapshots WHERE profile = :profile AND used_at < "
                   ":before) THEN 1 ELSE 0 END" if snapshots_before is not None else "0")
    params["before"] = snapshots_before
    return AskedState(conn.execute(f"SELECT {', '.join(columns)} FROM (SELECT 1 AS here) AS base LEFT JOIN "
                                   f"persona_runs r ON r.id = ({LAST_RUN})", params), targets)


def _columns(store: Database, targets: list[str], at_most: int) -> tuple[list[str], dict[str, Any]]:
    """The last run's four, the change counter, the bounded count of new memories, then one per target."""
    mine = "w.session_id = :profile AND " if store.memory_scope == "profile" else ""
    columns = ["r.run_at", "r.generation", "r.memory_watermark", "r.config_hash",
               "COALESCE((SELECT s.generation FROM persona_state s WHERE s.session_id = :profile), 0)",
               f"(SELECT COUNT(*) FROM (SELECT 1 FROM working_memory w WHERE {mine}"
               "w.rowid > COALESCE(r.memory_watermark, 0) LIMIT :at_most) AS new)"]
    columns += [f"CASE WHEN EXISTS (SELECT 1 FROM persona_blocks b WHERE b.profile = :profile AND b.target = "
                f":target{k}) THEN 1 ELSE 0 END" for k in range(len(targets))]
    params: dict[str, Any] = {"profile": store.profile, "at_most": at_most}
    return columns, params | {f"target{k}": name for k, name in enumerate(targets)}
