"""What a render reads of the store: the state it renders under, then each fact as a row ready to become one."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from typing import Any, NamedTuple

from .. import caches
from .backend import Connection, Cursor
from .births import BIRTH_JOIN
from .contract import HELD_SETTING, TRIGGER_PREFIX
from .dialect import SQLITE, Dialect
from .sqlite.triggers import TRIGGERS

# SQLite: the same rows, but for the age column, which holds the moment the age is counted from (the julianday of
# the last reinforcement): kept rows age in Python, exactly as SQLite subtracts (both subtract doubles).
AGE_BASE = "julianday(COALESCE(p.last_reinforced_at, p.created_at))"
# SQLite: what says a profile's rows are still those read before (see :func:`rows_unchanged_key`).
ROWS_KEY_SQL = (
    "SELECT julianday(?), (SELECT schema_version FROM pragma_schema_version), "
    "(SELECT count(*) FROM main.sqlite_master WHERE type = 'trigger' AND name LIKE ?), "
    "(SELECT generation FROM persona_state WHERE session_id = ?), "
    "(SELECT stamp FROM persona_state WHERE session_id = ?)")


@caches.memo("render_rows.persona_sql", owner="process", key="a dialect, and whether scoped and aging", bound=16)
def persona_sql(dialect: Dialect, scoped: bool = False, aging: bool = False) -> str:
    """Each fact built by the database, ready to become a PersonaFact; ``scoped`` (a profile that has facts of a
    project or a host) also reads each fact's scope. A confidence another tool left NULL stays NULL: the reader
    gives it the default (:data:`pipeline.defaults.DEFAULT_CONFIDENCE`), so the statement keeps its two
    parameters (the time, the profile). With ``aging`` (SQLite only), the age column holds each row's age base
    instead (:data:`AGE_BASE`, NULL for no timestamp) and the profile is the one parameter: the reader ages the
    rows, so rows it keeps can age again later without a read.

    Python then checks the contract (checking in SQL cost more than the read
    itself). On SQLite, "+session_id" reads the table in order instead of
    through an index: a persona table is mostly one profile's rows, and an
    index walk (random page order) took 1.4-2.4x as long as the scan.
    """
    assert dialect is SQLITE or not aging
    age = dialect.age_days("?", "COALESCE(p.last_reinforced_at, p.created_at)")
    age = AGE_BASE if aging else f"COALESCE({dialect.greatest}(0.0, {age}), 0.0)"
    profile = "+p.session_id" if dialect is SQLITE else "p.session_id"
    scope, join = ("b.scope", BIRTH_JOIN) if scoped else ("NULL", "")  # no join where every fact is global
    # A scoped profile's slots: where a target shows a global and a project fact of one key, the project's wins.
    slot = ("(SELECT MIN(k.key) FROM persona_keys k WHERE k.session_id = p.session_id AND k.persona_id = p.id)"
            if scoped else "NULL")
    return f"""
SELECT {_columns(dialect, age, scope, slot)}
FROM memoria_persona p {join} WHERE {profile} = ?
"""


def _columns(dialect: Dialect, age: str, scope: str, slot: str) -> str:
    return (f"'p:' || {dialect.padded_id('p.id')}, p.tier, p.topic, p.content, p.confidence,\n"
            f"       COALESCE(p.reinforcement_count, 0), {age}, 'persona', {scope},\n       {slot}")


# SQLite: each fact of the profile changed since a generation (persona_changes, our triggers' record), by id, as
# its key and, where it is still the profile's, its row as persona_sql(aging=True) reads it (else NULLs).
CHANGED_SQL = (f"SELECT c.persona_id, 'p:' || {SQLITE.padded_id('c.persona_id')}, "
               f"{_columns(SQLITE, AGE_BASE, 'NULL', 'NULL')} FROM persona_changes c "
               "LEFT JOIN memoria_persona p ON p.id = c.persona_id AND p.session_id = c.profile "
               "WHERE c.profile = ? AND c.generation > ? ORDER BY c.persona_id")


def changed_rows(conn: Connection, profile: str, since: int) -> list[Any]:
    """SQLite: ``(id, key, row)`` of each of the profile's facts that changed after generation ``since`` (row: a
    tuple of :func:`persona_sql`'s aging columns, or None for a fact the profile no longer has), by id."""
    return [(persona_id, key, None if row[0] is None else row)
            for persona_id, key, *row in conn.execute(CHANGED_SQL, (profile, since))]


# The same key but for the trigger count, which a schema version already counted whole answers.
KEY_SQL = ("SELECT julianday(?), (SELECT schema_version FROM pragma_schema_version), "
           "(SELECT generation FROM persona_state WHERE session_id = ?), "
           "(SELECT stamp FROM persona_state WHERE session_id = ?)")


class TriggersWhole:
    """The connection, and the schema version of its database, at which every trigger of ours was last counted
    present: while the version is the same, so is every trigger (each CREATE or DROP moves it)."""

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.version: object = None


def rows_unchanged_key(conn: Connection, profile: str, now: str, whole: TriggersWhole | None = None
                       ) -> tuple[float, tuple[object, ...] | None]:
    """SQLite: julianday(``now``), and a key that is the same only while the profile's rows are: its change counter
    and the random stamp its last change wrote (a database made again, or restored, counts the same numbers by
    another history), and the schema's version; None
    while any of our triggers (which move the counter for every writer) is missing. ``whole`` learns the
    connection and version they were counted whole at (:func:`state_and_key` then needs no count)."""
    row = conn.execute(ROWS_KEY_SQL, (now, TRIGGER_PREFIX + "%", profile, profile)).fetchone()
    key = None if int(row[2]) != len(TRIGGERS) else (row[1], row[3], row[4])
    if whole is not None:  # counted in the statement that read the version: both of one moment
        whole.conn, whole.version = (conn, row[1]) if key is not None else (None, None)
    return float(row[0]), key


class RenderState(NamedTuple):
    """What a render reads before the facts: the change counter it renders under, the newest working memory's
    rowid, how many rows the profile has (broken ones included), whether it ever forgot a fact, and whether any
    of its facts is scoped."""

    generation: int
    watermark: int
    rows: int
    forgot: bool
    scoped: bool  # it has facts of a project or a host


STATE = ("SELECT COALESCE((SELECT generation FROM persona_state WHERE session_id = ?), 0), "
         "COALESCE((SELECT MAX(rowid) FROM working_memory), 0), "
         "(SELECT COUNT(*) FROM memoria_persona WHERE session_id = ?), "
         "EXISTS (SELECT 1 FROM persona_forgotten WHERE profile = ?), "
         "EXISTS (SELECT 1 FROM persona_births WHERE profile = ? AND scope IS NOT NULL)")


def render_state(conn: Connection, profile: str) -> RenderState:
    """What a render reads before the facts, in one statement (see :class:`RenderState`)."""
    return _state(conn.execute(STATE, (profile,) * 4).fetchone())


STATE_AND_KEY = f"{STATE}, {KEY_SQL.removeprefix('SELECT ')}"


def state_and_key(conn: Connection, profile: str, now: str, whole: TriggersWhole
                  ) -> tuple[RenderState, float, tuple[object, ...] | None]:
    """SQLite: the state (:func:`render_state`), julianday(``now``) and :func:`rows_unchanged_key`'s key, in one
    statement; the key is None where the triggers must be counted (the connection, or the schema version, is not
    the one ``whole`` counted them whole at)."""
    row = conn.execute(STATE_AND_KEY, (profile,) * 4 + (now, profile, profile)).fetchone()
    whole_now = whole.conn is conn and row[6] == whole.version
    return _state(row), float(row[5]), (row[6], row[7], row[8]) if whole_now else None


def _state(row: Any) -> RenderState:
    return RenderState(int(row[0]), int(row[1]), int(row[2]), bool(row[3]), bool(row[4]))


@caches.memo("render_rows.state_and_facts", owner="process", key="a dialect", bound=4)
def state_and_facts(dialect: Dialect) -> str:
    """The state and a profile's global facts in one statement: the state's five values lead every fact's row
    (one row of them, with no fact, for a profile without facts)."""
    return f"SELECT s.*, f.* FROM ({STATE}) AS s LEFT JOIN ({persona_sql(dialect)}) AS f ON TRUE"


def render_read(conn: Connection, dialect: Dialect, profile: str, now: str) -> tuple[RenderState, Iterable[Any]]:
    """The state and the facts' rows (:func:`persona_sql`) in one round trip, for a server: both read at one
    moment, where two statements read the state first. A profile with scoped facts, which the state names, has
    its facts read again with their scopes (a second statement, as two would have been)."""
    answer = render_answer(conn, dialect, profile, now, ask_render_read(conn, dialect, profile, now))
    assert answer is not None  # the state's row is always there
    return answer


def ask_render_read(conn: Connection, dialect: Dialect, profile: str, now: str, *, if_changed: bool = False) -> Cursor:
    """:func:`render_read`'s statement, unread (in a batch, sent with its next round trip); ``if_changed``: no row
    at all when the profile's newest run that read current data is of its current change counter (a sweep's visit
    to a profile another worker just rendered reads no facts), or when the tick lock sent before it in the same
    round trip was another's (``contract.HELD_SETTING``; a server's)."""
    if if_changed:
        return conn.execute(state_and_facts_if_changed(dialect), (profile,) * 4 + (now, profile) + (profile,) * 2)
    return conn.execute(state_and_facts(dialect), (profile,) * 4 + (now, profile))


@caches.memo("render_rows.state_and_facts_if_changed", owner="process", key="a dialect", bound=4)
def state_and_facts_if_changed(dialect: Dialect) -> str:
    return (f"{state_and_facts(dialect)} WHERE current_setting('{HELD_SETTING}', true) = 'yes' AND COALESCE(("
            "SELECT generation FROM persona_state WHERE session_id = ?), 0) <> COALESCE((SELECT generation FROM "
            "persona_runs WHERE session_id = ? AND outcome != 'stale' "
            "ORDER BY id DESC LIMIT 1), -1)")


def render_answer(conn: Connection, dialect: Dialect, profile: str, now: str,
                  cursor: Cursor) -> tuple[RenderState, Iterable[Any]] | None:
    """:func:`render_read`'s answer from its statement's ``cursor``; None for no row (``if_changed``'s)."""
    first = cursor.fetchone()
    if first is None:
        return None
    state = _state(first)
    if state.scoped:
        return state, conn.execute(persona_sql(dialect, True), (now, profile))
    if first[5] is None:  # a fact's key is never NULL: the row of a profile without facts
        return state, ()
    return state, (row[5:] for row in chain((first,), cursor))
