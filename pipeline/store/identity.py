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
TRIGGER_COUNT = 3  # sqlite/triggers.py NAMES: a test keeps them equal
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
        try:
            state = state_of(conn.execute(STATE_SQL, (profile,) * 3).fetchone())
        except Exception as error:  # an older schema, a table another tool broke: cannot be told
            state = f"!{error.__class__.__name__}"
        inputs.note(KIND, key, state)


def store_identity(conn: Any) -> tuple[str, str] | None:
    """The store's id and erasure stamp; None before the schema that made them."""
    row = conn.execute(STORE_ID_SQL).fetchone()
    return None if row is None else (str(row[0]), str(row[1]))


inputs.register(KIND, sqlite_state)
