"""The schema migrations of issue 53 (the user in control of what agents write), shared by both backends. Imports
nothing, so each backend's schema can."""

from __future__ import annotations


def fact_locks() -> tuple[str, ...]:
    """The migration that adds locked facts (:mod:`.fact_locks`): ids, never text."""
    return ("""CREATE TABLE IF NOT EXISTS persona_locked (
            profile TEXT NOT NULL,
            persona_id BIGINT NOT NULL,
            locked_at TEXT NOT NULL,
            PRIMARY KEY (profile, persona_id)
        )""",)

