"""The store's identity and each profile's state, as a copy's key holds them: what a backup cannot fake.

A store has a random id (``persona_identity.store_id``, made with its schema) and an erasure stamp that every
forget renews (``persona_identity.erased``); each profile has its change counter and a random stamp that every
change writes beside it (``persona_state.stamp``: our triggers for every writer of ``memoria_persona``, and
:meth:`~pipeline.store.database.Database.touch`). Two histories of one file never share a state: a store
restored from a backup and changed again reaches an old counter with a new stamp.

A run that reads a SQLite store's profile while a recording is open (:mod:`pipeline.inputs`) notes that
profile's state here; the fast path compares it with :func:`sqlite_state`, the same statement, with the standard
library alone. While one of our triggers is missing the state cannot be told (a write would not be counted):
nothing is recorded then.
"""

from __future__ import annotations

import json
import os
from typing import Any

from .. import inputs
from .contract import TRIGGER_PREFIX

KIND = "sqlite"
TRIGGER_COUNT = 4  # sqlite/triggers.py TRIGGERS: a test keeps them equal
STATE_SQL = (
    "SELECT (SELECT store_id FROM persona_identity WHERE id = 1), "
    "(SELECT generation FROM persona_state WHERE session_id = ?), "
    "(SELECT stamp FROM persona_state WHERE session_id = ?), "
    "(SELECT max(id) FROM persona_runs WHERE session_id = ?), "
    f"(SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE '{TRIGGER_PREFIX}%')")
STORE_ID_SQL = "SELECT store_id, erased FROM persona_identity WHERE id = 1"


def state_of(row: Any) -> list[Any] | str:
    """A profile's state from :data:`STATE_SQL`'s row: [store id, counter, stamp, newest run]; "!..." when it
    cannot be told."""
    store_id, generation, stamp, run, triggers = row
    if store_id is None:
        return "!the store has no identity yet (an older schema)"
    if int(triggers) != TRIGGER_COUNT:
        return "!a trigger of ours is missing: a write would not be counted"
    return [str(store_id), int(generation or 0), None if stamp is None else str(stamp), int(run or 0)]


def subject(db: str, profile: str) -> str:
    """How a key names a profile of the SQLite file ``db`` (as the run spelled it, made absolute)."""
    return json.dumps([os.path.abspath(db), profile], ensure_ascii=False)


def sqlite_state(key: str) -> list[Any] | str:
    """The state now of the profile ``key`` names (:func:`subject`), read-only with sqlite3 alone."""
    import sqlite3
    from urllib.parse import quote

    db, profile = json.loads(key)
    if not os.path.isfile(db):
        return "!no database"
    try:
        conn = sqlite3.connect(f"file:{quote(db)}?mode=ro", uri=True, timeout=0.05)
    except sqlite3.Error as error:
        return f"!{error}"
    try:
        return state_of(conn.execute(STATE_SQL, (profile,) * 3).fetchone())
    except sqlite3.Error as error:
        return f"!{error}"
    finally:
        conn.close()


def note_profile(conn: Any, db: str, profile: str) -> None:
    """Note ``profile``'s state in the SQLite file ``db`` (read on ``conn``) for every open recording that lacks it."""
    key = subject(db, profile)
    if inputs.wants(KIND, key):
        whole = os.path.abspath(db)
        inputs.covered([whole, *(whole + suffix for suffix in ("-wal", "-shm", "-journal"))])
        try:
            state = state_of(conn.execute(STATE_SQL, (profile,) * 3).fetchone())
        except Exception as error:  # an older schema, a table another tool broke: cannot be told
            state = f"!{error.__class__.__name__}"
        inputs.note(KIND, key, state)


# What a replayable run reads beyond the profile's facts and runs, each a statement of the profile's that says
# whether it changed (its parameters: the profile, as often as it asks).
READS = {
    # status's interval trigger counts the working memories Mnemosyne added since the last render
    "memories": "SELECT (SELECT max(rowid) FROM working_memory), (SELECT count(*) FROM working_memory)",
    # status lists the open proposals: one made, or one decided, changes it
    "proposals": "SELECT (SELECT max(id) FROM persona_proposals WHERE session_id = ?), "
                 "(SELECT count(*) FROM persona_proposals WHERE session_id = ? AND decision IS NOT NULL)",
    # status counts the held writes: one held, accepted or dismissed changes it (ids only grow)
    "held": "SELECT (SELECT max(id) FROM persona_held WHERE profile = ?), "
            "(SELECT count(*) FROM persona_held WHERE profile = ?)",
}
READ_KIND = "sqlite-read"


def note_read(conn: Any, db: str, profile: str, name: str) -> None:
    """Note what the read ``name`` (:data:`READS`) says of ``profile`` now, for every open recording that lacks it."""
    key = json.dumps([os.path.abspath(db), profile, name], ensure_ascii=False)
    if inputs.wants(READ_KIND, key):
        try:
            state: list[Any] | str = _read_state(conn, profile, name)
        except Exception as error:  # an older schema: cannot be told
            state = f"!{error.__class__.__name__}"
        inputs.note(READ_KIND, key, state)


def _read_state(conn: Any, profile: str, name: str) -> list[Any]:
    statement = READS[name]
    return [None if value is None else int(value) if isinstance(value, int) else str(value)
            for value in conn.execute(statement, (profile,) * statement.count("?")).fetchone()]


def sqlite_read_state(key: str) -> list[Any] | str:
    """The state now of the read ``key`` names, read-only with sqlite3 alone."""
    import sqlite3
    from urllib.parse import quote

    db, profile, name = json.loads(key)
    if not os.path.isfile(db) or name not in READS:
        return "!no database"
    try:
        conn = sqlite3.connect(f"file:{quote(db)}?mode=ro", uri=True, timeout=0.05)
    except sqlite3.Error as error:
        return f"!{error}"
    try:
        return _read_state(conn, profile, name)
    except sqlite3.Error as error:
        return f"!{error}"
    finally:
        conn.close()


def store_identity(conn: Any) -> tuple[str, str] | None:
    """The store's id and erasure stamp; None before the schema that made them."""
    row = conn.execute(STORE_ID_SQL).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


inputs.register(KIND, sqlite_state)
inputs.register(READ_KIND, sqlite_read_state)


def record_folders(conn: Any) -> list[str]:
    """Every records folder that holds deliveries of this store (a forget sweeps each); none on a server."""
    try:
        return [str(row[0]) for row in conn.execute("SELECT folder FROM persona_record_homes ORDER BY folder")]
    except Exception:  # a server store (no such table: its answers are never recorded) or an older schema
        return []


def add_record_folder(db: str, folder: str, now: str) -> bool:
    """List ``folder`` among the records folders of the SQLite store ``db`` (a short write of its own, waiting at
    most 50 ms for the file); False when it could not be written (the record is then not kept)."""
    import sqlite3

    try:
        conn = sqlite3.connect(db, timeout=0.05, isolation_level=None)
    except sqlite3.Error:
        return False
    try:
        conn.execute("INSERT INTO persona_record_homes (folder, added_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                     (folder, now))
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()
