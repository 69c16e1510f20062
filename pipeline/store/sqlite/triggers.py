"""Our triggers on ``memoria_persona``: every writer of a profile's facts moves its change counter.

They write only our tables (``persona_state``, ``persona_births``); see docs/store.md, "What persona-tier
adds to Mnemosyne's table".
"""

from __future__ import annotations

from ..contract import TRIGGER_PREFIX, WATCHED_COLUMNS

_NOW = "strftime('%Y-%m-%d %H:%M:%S', 'now')"


def _bump(profile: str) -> str:
    """One more change of ``profile``'s facts (an upsert; a profile's first change creates its row)."""
    return (f"INSERT INTO persona_state (session_id, generation, changed_at) SELECT {profile}, 1, {_NOW} "
            f"WHERE {profile} IS NOT NULL ON CONFLICT (session_id) DO UPDATE SET "
            "generation = persona_state.generation + 1, changed_at = excluded.changed_at")


_BIRTH = ("INSERT INTO persona_births (profile, persona_id, generation) SELECT NEW.session_id, NEW.id, generation "
          "FROM persona_state WHERE session_id = NEW.session_id ON CONFLICT DO NOTHING")
_CHANGED = " OR ".join(f"OLD.{column} IS NOT NEW.{column}" for column in WATCHED_COLUMNS)

# Every writer of memoria_persona is seen (Mnemosyne's own tools write it directly): each trigger writes only
# our tables. A fact's birth is the first generation that held it; a forget drops what was rendered since.
TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}insert AFTER INSERT ON memoria_persona BEGIN "
    f"{_bump('NEW.session_id')}; {_BIRTH}; END",
    f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}delete AFTER DELETE ON memoria_persona BEGIN "
    f"{_bump('OLD.session_id')}; END",
    f"CREATE TRIGGER IF NOT EXISTS {TRIGGER_PREFIX}update AFTER UPDATE ON memoria_persona WHEN {_CHANGED} BEGIN "
    f"{_bump('NEW.session_id')}; {_BIRTH}; "
    f"{_bump('CASE WHEN OLD.session_id IS NOT NEW.session_id THEN OLD.session_id END')}; END",
)
