"""Our triggers on ``memoria_persona``: every writer of a profile's facts moves its change counter.

They write only our tables (``persona_state``, ``persona_births``, ``persona_changes``); see docs/store.md,
"What persona-tier adds to Mnemosyne's table".
"""

from __future__ import annotations

import sqlite3

from ...clock import to_db, utc_now
from ..contract import TRIGGER_PREFIX, WATCHED_COLUMNS
from ..vanished import vanished

_NOW = "strftime('%Y-%m-%d %H:%M:%S', 'now')"
NAMES = tuple(f"{TRIGGER_PREFIX}{event}" for event in ("insert", "delete", "update"))
VANISH_NAME = f"{TRIGGER_PREFIX}vanish"  # notes a deleted fact's id for the sweep (store/vanished.py)


# A random stamp every change writes beside the counter: a store restored from a backup and changed again reaches
# the same counter by another history, and its stamp then differs from any the newer history wrote.
STAMP = "lower(hex(randomblob(8)))"


def _bump(profile: str, stamps: bool = True) -> str:
    """One more change of ``profile``'s facts (an upsert; a profile's first change creates its row), with a new
    stamp (``stamps``: schema 18 on; before, the counter alone)."""
    columns, values, stamp = (", stamp", f", {STAMP}", ", stamp = excluded.stamp") if stamps else ("", "", "")
    return (f"INSERT INTO persona_state (session_id, generation, changed_at{columns}) SELECT {profile}, 1, "
            f"{_NOW}{values} WHERE {profile} IS NOT NULL ON CONFLICT (session_id) DO UPDATE SET "
            f"generation = persona_state.generation + 1, changed_at = excluded.changed_at{stamp}")


def _changed(row: str, when: str = "") -> str:
    """The generation the fact ``row`` (NEW or OLD) of its profile last changed in: a kept render reads again only
    the rows changed since the generation it read (:mod:`pipeline.store.row_changes`)."""
    return (f"INSERT INTO persona_changes (profile, persona_id, generation) SELECT {row}.session_id, {row}.id, "
            f"generation FROM persona_state WHERE session_id = {row}.session_id{when} "
            "ON CONFLICT (profile, persona_id) DO UPDATE SET generation = excluded.generation")


_BIRTH = ("INSERT INTO persona_births (profile, persona_id, generation) SELECT NEW.session_id, NEW.id, generation "
          "FROM persona_state WHERE session_id = NEW.session_id ON CONFLICT DO NOTHING")
_WATCHED = " OR ".join(f"OLD.{column} IS NOT NEW.{column}" for column in WATCHED_COLUMNS)
_MOVED = " AND OLD.session_id IS NOT NEW.session_id"


def _triggers(changes: bool, stamps: bool = True) -> tuple[str, ...]:
    """The three triggers; ``changes``: also each fact's last change (schema 17 on; before, the counter alone);
    ``stamps``: a new stamp with each change (schema 18 on)."""
    new, old, moved = (f"; {_changed('NEW')}", f"; {_changed('OLD')}", f"; {_changed('OLD', _MOVED)}") if changes \
        else ("", "", "")
    insert, delete, update = NAMES
    return (
        f"CREATE TRIGGER IF NOT EXISTS {insert} AFTER INSERT ON memoria_persona BEGIN "
        f"{_bump('NEW.session_id', stamps)}; {_BIRTH}{new}; END",
        f"CREATE TRIGGER IF NOT EXISTS {delete} AFTER DELETE ON memoria_persona BEGIN "
        f"{_bump('OLD.session_id', stamps)}{old}; END",
        f"CREATE TRIGGER IF NOT EXISTS {update} AFTER UPDATE ON memoria_persona WHEN {_WATCHED} BEGIN "
        f"{_bump('NEW.session_id', stamps)}; {_BIRTH}{new}; "
        f"{_bump('CASE WHEN OLD.session_id IS NOT NEW.session_id THEN OLD.session_id END', stamps)}{moved}; END",
    )


# Every writer of memoria_persona is seen (Mnemosyne's own tools write it directly): each trigger writes only
# our tables. A fact's birth is the first generation that held it; a forget drops what was rendered since.
STAMPED_TRIGGERS = _triggers(changes=True)  # as schema 18's migration made them
VANISH = (f"CREATE TRIGGER IF NOT EXISTS {VANISH_NAME} AFTER DELETE ON memoria_persona WHEN OLD.session_id IS NOT "
          f"NULL BEGIN INSERT INTO persona_vanished (profile, persona_id, deleted_at) VALUES (OLD.session_id, OLD.id, "
          f"{_NOW}) ON CONFLICT DO NOTHING; END")
TRIGGERS = (*STAMPED_TRIGGERS, VANISH)
FIRST_TRIGGERS = _triggers(changes=False, stamps=False)  # as the migration that added them made them
CHANGES_TRIGGERS = _triggers(changes=True, stamps=False)  # as schema 17's migration made them


def row_changes() -> tuple[str, ...]:
    """The migration that records each fact's last change, and puts the triggers that record it in place."""
    return (
        """CREATE TABLE IF NOT EXISTS persona_changes (
            profile TEXT NOT NULL,
            persona_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            PRIMARY KEY (profile, persona_id)
        )""",
        "CREATE INDEX IF NOT EXISTS idx_persona_changes_generation ON persona_changes (profile, generation)",
        *(f"DROP TRIGGER IF EXISTS {name}" for name in NAMES),
        *CHANGES_TRIGGERS,
    )


def stamped() -> tuple[str, ...]:
    """The migration that gives the store an identity and every change a random stamp (schema 18): the store's id
    and erasure stamp (``persona_identity``), each profile's stamp, the folders of records kept of this store
    (``persona_record_homes``, so a forget finds them all), and the triggers that stamp each change."""
    return (
        "ALTER TABLE persona_state ADD COLUMN stamp TEXT",
        f"UPDATE persona_state SET stamp = {STAMP}",
        "CREATE TABLE persona_identity (id INTEGER PRIMARY KEY CHECK (id = 1), store_id TEXT NOT NULL, "
        "erased TEXT NOT NULL)",
        f"INSERT INTO persona_identity (id, store_id, erased) VALUES (1, lower(hex(randomblob(16))), {STAMP})",
        "CREATE TABLE persona_record_homes (folder TEXT PRIMARY KEY, added_at TEXT NOT NULL)",
        *(f"DROP TRIGGER IF EXISTS {name}" for name in NAMES),
        *STAMPED_TRIGGERS,
    )


def vanishing() -> tuple[str, ...]:
    """The migration that notes each fact another tool deletes, for the sweep of our rows keyed by it
    (:mod:`pipeline.store.vanished`)."""
    return (*vanished("INTEGER"), VANISH)


def restamp_all(now: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Statements that move every profile's counter and stamp (our triggers were put back: a write while they were
    missing was never counted), a profile with facts but no state row included; each with its parameters."""
    return (
        (f"UPDATE persona_state SET generation = generation + 1, stamp = {STAMP}, changed_at = ?", (now,)),
        ("INSERT INTO persona_state (session_id, generation, changed_at, stamp) SELECT DISTINCT session_id, 1, ?, "
         f"{STAMP} FROM memoria_persona WHERE session_id IS NOT NULL ON CONFLICT (session_id) DO NOTHING", (now,)),
    )


def restore_triggers(conn: sqlite3.Connection) -> None:
    """Put our triggers back if a tool rebuilt memoria_persona without them (one read when they are there), and
    move every profile's counter and stamp: a write while they were missing was never counted, so nothing kept
    of the rows before it may stand."""
    if _our_triggers(conn) == len(TRIGGERS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if _our_triggers(conn) < len(TRIGGERS):  # another connection may have put them back meanwhile
            for statement in TRIGGERS:
                conn.execute(statement)
            for statement, parameters in restamp_all(to_db(utc_now())):
                conn.execute(statement, parameters)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _our_triggers(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ?",
                            (TRIGGER_PREFIX + "%",)).fetchone()[0])


SETTLED = ("SELECT (SELECT version FROM main.persona_schema WHERE id = 1), (SELECT count(*) FROM main.sqlite_master "
           "WHERE type = 'trigger' AND name LIKE ?)")


def settled(conn: sqlite3.Connection, schema_version: int) -> bool:
    """Whether the schema is at ``schema_version`` with every trigger of ours, in one statement (every connection
    asks; the schema's full check and :func:`restore_triggers` take over otherwise)."""
    try:
        version, triggers = conn.execute(SETTLED, (TRIGGER_PREFIX + "%",)).fetchone()
    except sqlite3.OperationalError:  # no persona_schema yet
        return False
    return bool(version == schema_version and triggers == len(TRIGGERS))
