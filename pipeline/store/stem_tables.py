"""The schema migration of issue 38, shared by both backends: merge proposals, and the tables of the proposal
check's stem index (:mod:`.stem_index`); and PostgreSQL's compact form of that index (issue 52,
:mod:`.stem_sets`). Imports nothing, so each backend's schema can."""

from __future__ import annotations


def stem_readers() -> tuple[str, ...]:
    """The schema migration that records which reader (word lists, stemmer) indexed a profile's stems, so a change
    of them re-indexes the profile's facts at its next check (issue 50), not only the facts written after it."""
    return ("""CREATE TABLE IF NOT EXISTS persona_stem_readers (
            profile TEXT PRIMARY KEY,
            reader TEXT NOT NULL
        )""",)


def merges_and_stems(id_type: str) -> tuple[str, ...]:
    """The schema migration that adds merge proposals and this index (``id_type``: the backend's fact id type)."""
    return (
        # Merge proposals (issue 38): two facts that say the same thing, one with more; accepting supersedes the
        # shorter (old_id) by the fuller (new_id), as an update proposal supersedes the old by the new.
        "ALTER TABLE persona_proposals ADD COLUMN kind TEXT NOT NULL DEFAULT 'update'",
        f"""CREATE TABLE persona_stems (
            profile TEXT NOT NULL,
            stem TEXT NOT NULL,
            persona_id {id_type} NOT NULL,
            PRIMARY KEY (profile, stem, persona_id)
        )""",
        "CREATE INDEX idx_persona_stems_fact ON persona_stems (profile, persona_id)",
        f"""CREATE TABLE persona_stemmed (
            profile TEXT PRIMARY KEY,
            upto {id_type} NOT NULL
        )""",
    )


def stem_sets() -> tuple[str, ...]:
    """PostgreSQL's migration to the compact index: one row per (topic, fact) with its stems' hashes in an array, under
    one key that serves the check (by topic), forget and erase (by profile); and an index of each profile's facts
    by id, for the check's catch-up. The old rows hold hashes, not text, so they cannot be turned into the new
    ones: every profile's facts are indexed again from their text, by the next check (``persona_stemmed``
    forgotten: it starts from the first fact)."""
    return (
        """CREATE TABLE IF NOT EXISTS persona_stem_sets (
            profile TEXT NOT NULL,
            topic BIGINT NOT NULL,
            persona_id BIGINT NOT NULL,
            stems BIGINT[] NOT NULL,
            PRIMARY KEY (profile, topic, persona_id)
        )""",
        "DROP TABLE IF EXISTS persona_stems",
        "DELETE FROM persona_stemmed",
        # The check's catch-up reads a profile's facts since the last it indexed: by profile and id, not by id
        # across every profile (stem_index.catch_up).
        "CREATE INDEX IF NOT EXISTS idx_persona_session_id ON memoria_persona (session_id, id)",
    )
