"""Facts another tool deleted: no row of ours stays behind, and ``persona status`` says how many went.

Mnemosyne 4.0 deletes a ``memoria_persona`` row whose source memory is forgotten, with a plain DELETE; any tool
may. Our tables keep rows keyed by a fact's id (its origin, token counts, stems, lock, slot, held writes, pending
proposals, birth), which would then point at nothing, some holding words of the fact. A trigger on the delete
(each backend's ``triggers``) notes the id in ``persona_vanished``, one insert on a statement that is rare; our
own deletes (a forget, a demotion, a replace) take their note back in the same transaction, since they clean
up after themselves (:func:`pipeline.store.births.deleted_by_us`). A sweep then takes every row of ours for
those ids, at the cost of one indexed lookup when nothing vanished: every full render on SQLite (about 40 us);
on a server, where that lookup would be a round trip of every tick, ``persona render`` and ``persona status``.
``persona status`` counts the ids noted since it last looked, and forgets them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imports nothing of the backends at run time, so each backend's triggers can take the table
    from .backend import Connection
    from .database import Database

TABLE = "persona_vanished"
# Each table of ours keyed by a fact's id: its key columns (the profile's column, or None: ids are the store's).
KEYED: tuple[tuple[str, str | None, str], ...] = (
    ("persona_origins", None, "persona_id"),
    ("persona_token_counts", None, "persona_id"),
    ("persona_locked", "profile", "persona_id"),
    ("persona_keys", "session_id", "persona_id"),
    ("persona_held", "profile", "persona_id"),
    ("persona_births", "profile", "persona_id"),
)
# The proposal check's stem index: one row per stem on SQLite, one per (topic, fact) on PostgreSQL (stem_sets.py).
STEMS = {False: ("persona_stems", "profile", "persona_id"), True: ("persona_stem_sets", "profile", "persona_id")}
CHUNK = 500  # ids per statement: well inside SQLite's 999 parameters


def vanished(id_type: str) -> tuple[str, ...]:
    """The migration's table (``id_type``: the backend's fact id type); each backend adds its trigger."""
    return (f"""CREATE TABLE IF NOT EXISTS {TABLE} (
            profile TEXT NOT NULL,
            persona_id {id_type} NOT NULL,
            deleted_at TEXT NOT NULL,
            swept INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (profile, persona_id)
        )""",)


def sweep(store: Database) -> int:
    """Delete every row of ours keyed by a fact of the profile another tool deleted since the last sweep; how
    many facts that was. One read when there are none."""
    with store.read() as conn:
        found = conn.execute(f"SELECT 1 FROM {TABLE} WHERE profile = ? AND swept = 0 LIMIT 1",
                             (store.profile,)).fetchone()
    if found is None or store.readonly:
        return 0
    with store.transaction() as conn:
        ids = [int(row[0]) for row in conn.execute(
            f"SELECT persona_id FROM {TABLE} WHERE profile = ? AND swept = 0", (store.profile,)).fetchall()]
        for start in range(0, len(ids), CHUNK):
            _delete_keyed(conn, store.profile, ids[start:start + CHUNK], keyed(store.dialect.name != "sqlite"))
    return len(ids)


def keyed(server: bool) -> tuple[tuple[str, str | None, str], ...]:
    """Each table of ours keyed by a fact's id on this backend (``server``: PostgreSQL)."""
    return (*KEYED, STEMS[server])


def _delete_keyed(conn: Connection, profile: str, ids: Sequence[int],
                  tables: tuple[tuple[str, str | None, str], ...]) -> None:
    marks = ", ".join("?" for _ in ids)
    for table, profile_column, id_column in tables:
        where = f"{profile_column} = ? AND " if profile_column else ""
        conn.execute(f"DELETE FROM {table} WHERE {where}{id_column} IN ({marks})",
                     (*([profile] if profile_column else []), *ids))
    conn.execute(f"DELETE FROM persona_proposals WHERE session_id = ? AND decision IS NULL AND (old_id IN ({marks}) "
                 f"OR new_id IN ({marks}))", (profile, *ids, *ids))
    conn.execute(f"UPDATE {TABLE} SET swept = 1 WHERE profile = ? AND persona_id IN ({marks})", (profile, *ids))


def noted(store: Database) -> int:
    """How many of the profile's facts another tool deleted since the last look (a read: the store may be
    read-only)."""
    with store.read() as conn:
        return int(conn.execute(f"SELECT count(*) FROM {TABLE} WHERE profile = ?", (store.profile,)).fetchone()[0])


def looked(store: Database) -> int:
    """:func:`noted`, and this is the look: the count starts again from nothing. Swept first, so no row of ours
    outlives what it counts."""
    sweep(store)
    count = noted(store)
    if count:
        with store.transaction() as conn:
            conn.execute(f"DELETE FROM {TABLE} WHERE profile = ? AND swept = 1", (store.profile,))
    return count
