"""Our triggers on ``memoria_persona``: every writer of a profile's facts moves its change counter.

They write only our tables (``persona_state``, ``persona_births``); see docs/store.md, "What persona-tier
adds to Mnemosyne's table".
"""

from __future__ import annotations

from ..contract import TRIGGER_PREFIX, WATCHED_COLUMNS

# The server's time as our timestamps are written: UTC text, so both backends compare and parse them alike.
NOW_TEXT = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"

_CHANGED = " OR ".join(f"OLD.{column} IS DISTINCT FROM NEW.{column}" for column in WATCHED_COLUMNS)
# Every writer of memoria_persona is seen: one function, run for each changed row, writes only our tables (see
# the SQLite schema's TRIGGERS). A fact's birth is the first generation that held it.
SEEN_FUNCTION = f"""CREATE OR REPLACE FUNCTION {TRIGGER_PREFIX}fact() RETURNS trigger LANGUAGE plpgsql AS $$
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
        INSERT INTO persona_state (session_id, generation, changed_at) VALUES (profile, 1, {NOW_TEXT})
            ON CONFLICT (session_id) DO UPDATE SET generation = persona_state.generation + 1,
            changed_at = excluded.changed_at;
    END LOOP;
    IF TG_OP <> 'DELETE' AND NEW.session_id IS NOT NULL THEN
        INSERT INTO persona_births (profile, persona_id, generation)
            SELECT NEW.session_id, NEW.id, generation FROM persona_state WHERE session_id = NEW.session_id
            ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$"""
TRIGGERS = (
    SEEN_FUNCTION,
    f"CREATE TRIGGER {TRIGGER_PREFIX}fact AFTER INSERT OR DELETE OR UPDATE ON memoria_persona "
    f"FOR EACH ROW EXECUTE FUNCTION {TRIGGER_PREFIX}fact()",
)

# Each entry moves the schema from version N-1 to N. Append only.
