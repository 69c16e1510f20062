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


def held_writes(id_column: str, real: str) -> tuple[str, ...]:
    """The migration that adds held writes (:mod:`.held_writes`); ``id_column``: the backend's generated key,
    ``real``: its floating-point type."""
    return (f"""CREATE TABLE IF NOT EXISTS persona_held (
            id {id_column},
            profile TEXT NOT NULL,
            action TEXT NOT NULL,
            persona_id BIGINT,
            memory_id TEXT,
            topic TEXT,
            content TEXT,
            tier TEXT,
            confidence {real},
            scope TEXT,
            reason TEXT,
            force INTEGER NOT NULL DEFAULT 0,
            writer TEXT NOT NULL,
            held_at TEXT NOT NULL
        )""",
            "CREATE INDEX IF NOT EXISTS idx_persona_held_profile ON persona_held (profile, id)")


def learned() -> tuple[str, ...]:
    """The migration that adds the record of what `persona learn` took from the hosts' memory (:mod:`.learned`):
    keyed hashes, never text."""
    return ("""CREATE TABLE IF NOT EXISTS persona_learned (
            profile TEXT NOT NULL,
            host TEXT NOT NULL,
            file TEXT NOT NULL,
            digest TEXT NOT NULL,
            learned_at TEXT NOT NULL,
            PRIMARY KEY (profile, host, file, digest)
        )""",)


def learned_births() -> tuple[str, ...]:
    """The migration that indexes the facts `persona learn` wrote (a birth's writer ``learn:HOST``): each render
    reads them, to leave a fact out of the targets of the host that saved it (:func:`.learned.learned_from`)."""
    return ("CREATE INDEX IF NOT EXISTS idx_persona_births_learned ON persona_births (profile, persona_id, writer) "
            "WHERE writer LIKE 'learn:%'",)
