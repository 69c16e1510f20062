"""The schema migration of issue 38, shared by both backends: merge proposals, and the tables of the proposal
check's stem index (:mod:`.stem_index`). Imports nothing, so each backend's schema can."""

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
