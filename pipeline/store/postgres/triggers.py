"""Our triggers on ``memoria_persona``: every writer of a profile's facts moves its change counter.

They write only our tables (``persona_state``, ``persona_births``); see docs/store.md, "What persona-tier
adds to Mnemosyne's table".
"""

from __future__ import annotations

from typing import Any

from ..contract import TRIGGER_PREFIX, WATCHED_COLUMNS
from ..vanished import vanished

# The server's time as our timestamps are written: UTC text, so both backends compare and parse them alike.
NOW_TEXT = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"

_CHANGED = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in WATCHED_COLUMNS)
# Every writer of memoria_persona is seen: one function, run for each changed row, writes only our tables (see
# the SQLite schema's TRIGGERS). A fact's birth is the first generation that held it.
# A random stamp every change writes beside the counter (see the SQLite triggers' STAMP).
STAMP = "substr(md5(random()::text || clock_timestamp()::text), 1, 16)"


def _seen_function(stamps: bool, vanish: bool = False) -> str:
    """The function our trigger runs; ``stamps``: with a new stamp for each change (schema 9 on); ``vanish``: a
    deleted fact's id noted for the sweep (:mod:`pipeline.store.vanished`)."""
    columns, values, stamp = (", stamp", f", {STAMP}", ", stamp = excluded.stamp") if stamps else ("", "", "")
    return f"""CREATE OR REPLACE FUNCTION {TRIGGER_PREFIX}fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE profile TEXT;
BEGIN
    IF TG_OP = 'UPDATE' AND NOT ({_CHANGED}) THEN
        RETURN NULL;
    END IF;
    FOREACH profile IN ARRAY ARRAY[CASE WHEN TG_OP <> 'DELETE' THEN NEW.session_id END,
                                   CASE WHEN TG_OP <> 'INSERT' AND (TG_OP = 'DELETE'
                                        OR OLD.session_id IS DISTINCT FROM NEW.session_id) THEN OLD.session_id END]
    LOOP
        CONTINUE WHEN profile IS NULL;
        INSERT INTO persona_state (session_id, generation, changed_at{columns})
            VALUES (profile, 1, {NOW_TEXT}{values})
            ON CONFLICT (session_id) DO UPDATE SET generation = persona_state.generation + 1,
            changed_at = excluded.changed_at{stamp};
    END LOOP;
    IF TG_OP <> 'DELETE' AND NEW.session_id IS NOT NULL THEN
        INSERT INTO persona_births (profile, persona_id, generation)
            SELECT NEW.session_id, NEW.id, generation FROM persona_state WHERE session_id = NEW.session_id
            ON CONFLICT DO NOTHING;
    END IF;{_VANISH if vanish else ""}
    RETURN NULL;
END $$"""


_VANISH = f"""
    IF TG_OP = 'DELETE' AND OLD.session_id IS NOT NULL THEN
        INSERT INTO persona_vanished (profile, persona_id, deleted_at) VALUES (OLD.session_id, OLD.id, {NOW_TEXT})
            ON CONFLICT DO NOTHING;
    END IF;"""


TRIGGER_NAME = f"{TRIGGER_PREFIX}fact"
CREATE_TRIGGER = (f"CREATE TRIGGER {TRIGGER_NAME} AFTER INSERT OR DELETE OR UPDATE ON memoria_persona "
                  f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER_PREFIX}fact()")
TRIGGERS = (_seen_function(stamps=False), CREATE_TRIGGER)  # as schema 3's migration made them
STAMPED_FUNCTION = _seen_function(stamps=True)  # as schema 9's migration made it
SEEN_FUNCTION = _seen_function(stamps=True, vanish=True)
# Whether our trigger is on memoria_persona (a tool that rebuilt the table dropped it).
HAS_TRIGGER = (f"SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '{TRIGGER_NAME}' "
               "AND tgrelid = to_regclass('memoria_persona'))")


def stamped() -> tuple[str, ...]:
    """The migration that gives the store an identity and every change a random stamp (schema 9; see the SQLite
    triggers' :func:`stamped`)."""
    return (
        "ALTER TABLE persona_state ADD COLUMN stamp TEXT",
        f"UPDATE persona_state SET stamp = {STAMP}",
        "CREATE TABLE persona_identity (id INTEGER PRIMARY KEY CHECK (id = 1), store_id TEXT NOT NULL, "
        "erased TEXT NOT NULL)",
        f"INSERT INTO persona_identity (id, store_id, erased) VALUES (1, md5(random()::text || "
        f"clock_timestamp()::text), {STAMP})",
        STAMPED_FUNCTION,
    )


def vanishing() -> tuple[str, ...]:
    """The migration that notes each fact another tool deletes (see the SQLite triggers' :func:`vanishing`)."""
    return (*vanished("BIGINT"), SEEN_FUNCTION)


def restored(now: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Our trigger put back on memoria_persona, and every profile's counter and stamp moved (a write while it was
    missing was never counted); each statement with its parameters."""
    return (
        (SEEN_FUNCTION, ()),
        (f"DROP TRIGGER IF EXISTS {TRIGGER_NAME} ON memoria_persona", ()),
        (CREATE_TRIGGER, ()),
        (f"UPDATE persona_state SET generation = generation + 1, stamp = {STAMP}, changed_at = ?", (now,)),
        ("INSERT INTO persona_state (session_id, generation, changed_at, stamp) SELECT DISTINCT session_id, 1, ?, "
         f"{STAMP} FROM memoria_persona WHERE session_id IS NOT NULL ON CONFLICT (session_id) DO NOTHING", (now,)),
    )

# Each entry moves the schema from version N-1 to N. Append only.


SETTLED = f"SELECT (SELECT version FROM persona_schema WHERE id = 1), ({HAS_TRIGGER})"


def settled(conn: Any, schema_version: int) -> bool:
    """Whether the schema is at ``schema_version`` with our trigger, in one round trip (every new pool asks; the
    schema's full check takes over otherwise)."""
    import psycopg

    try:
        version, trigger = conn.execute(SETTLED).fetchone()
    except psycopg.errors.UndefinedTable:  # no persona_schema yet
        return False
    return bool(version == schema_version and trigger)
