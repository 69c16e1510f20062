"""Our triggers on ``memoria_persona``: every writer of a profile's facts moves its change counter.

They write only our tables (``persona_state``, ``persona_births``, ``persona_changes``); see docs/store.md,
"What persona-tier adds to Mnemosyne's table".
"""

from __future__ import annotations

from ..contract import TRIGGER_PREFIX, WATCHED_COLUMNS

_NOW = "strftime('%Y-%m-%d %H:%M:%S', 'now')"
NAMES = tuple(f"{TRIGGER_PREFIX}{event}" for event in ("insert", "delete", "update"))


def _bump(profile: str) -> str:
    """One more change of ``profile``'s facts (an upsert; a profile's first change creates its row)."""
    return (f"INSERT INTO persona_state (session_id, generation, changed_at) SELECT {profile}, 1, {_NOW} "
            f"WHERE {profile} IS NOT NULL ON CONFLICT (session_id) DO UPDATE SET "
            "generation = persona_state.generation + 1, changed_at = excluded.changed_at")


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


def _triggers(changes: bool) -> tuple[str, ...]:
    """The three triggers; ``changes``: also each fact's last change (schema 17 on; before, the counter alone)."""
    new, old, moved = (f"; {_changed('NEW')}", f"; {_changed('OLD')}", f"; {_changed('OLD', _MOVED)}") if changes \
        else ("", "", "")
    insert, delete, update = NAMES
    return (
        f"CREATE TRIGGER IF NOT EXISTS {insert} AFTER INSERT ON memoria_persona BEGIN "
        f"{_bump('NEW.session_id')}; {_BIRTH}{new}; END",
        f"CREATE TRIGGER IF NOT EXISTS {delete} AFTER DELETE ON memoria_persona BEGIN "
        f"{_bump('OLD.session_id')}{old}; END",
        f"CREATE TRIGGER IF NOT EXISTS {update} AFTER UPDATE ON memoria_persona WHEN {_WATCHED} BEGIN "
        f"{_bump('NEW.session_id')}; {_BIRTH}{new}; "
        f"{_bump('CASE WHEN OLD.session_id IS NOT NEW.session_id THEN OLD.session_id END')}{moved}; END",
    )


# Every writer of memoria_persona is seen (Mnemosyne's own tools write it directly): each trigger writes only
# our tables. A fact's birth is the first generation that held it; a forget drops what was rendered since.
TRIGGERS = _triggers(changes=True)
FIRST_TRIGGERS = _triggers(changes=False)  # as the migration that added them made them (it runs before 17's)


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
        *TRIGGERS,
    )
