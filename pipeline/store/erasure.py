"""Forget for real: one fact, or everything a profile holds, and every copy of its text in our tables.

One transaction removes the fact, its lineage (every version it replaced, with
their slots and proposals), the tombstones we wrote for it, the session snapshots and stored
blocks that hold its text, and records its keyed hash (:mod:`.forgotten`).
Afterwards the database's pages are scrubbed (:meth:`Backend.scrub`), so the
text is not left in free pages or a write-ahead log. Re-rendering the files
is the caller's job (:mod:`pipeline.schedule.forget`): the store renders
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backend import Connection
from .blocks import delete_blocks_holding
from .facts import Fact, PersonaStore
from .forgotten import count_erasure, digests, record, secret
from .memories import delete_tombstones
from .proposals import forget_profile
from .runs import delete_profile_runs
from .snapshots import delete_holding, delete_profile_snapshots
from .supersede import forget_lineage

LINEAGE_TABLES = ("persona_superseded", "persona_keys", "persona_proposals")
Forms = Callable[[str], set[str]]


@dataclass
class Erasure:
    """What one forget or profile erase removed (counts only: never the text)."""

    profile: str
    facts: list[int] = field(default_factory=list)
    tombstones: int = 0
    snapshots: int = 0
    blocks: int = 0
    lineage: int = 0
    runs: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "facts": self.facts, "tombstones": self.tombstones,
                "snapshots": self.snapshots, "blocks": self.blocks, "lineage": self.lineage, "runs": self.runs}


def forget_fact(store: PersonaStore, persona_id: int, forms: Forms) -> tuple[Fact, Erasure]:
    """Forget one fact of the profile; ``forms(text)`` names every way its text may appear in a render."""
    done = Erasure(store.profile)
    with _secure(store), store.transaction() as conn:
        fact = store.get(persona_id)
        needles = forms(fact.content)
        versions = forget_lineage(store, conn, [fact.id])  # every earlier text of this fact goes with it
        needles |= set().union(*(forms(text) for text, _ in versions)) if versions else set()
        buried = delete_tombstones(conn, store.profile, needles, {fact.source_memory_id or ""} - {""})
        _remember(store, conn, [(fact.content, fact.source_memory_id), *versions, *buried])
        done.tombstones, done.facts, done.lineage = len(buried), [fact.id], len(versions)
        store.erase_rows(conn, [fact.id])
        done.snapshots = delete_holding(store, conn, needles)
        done.blocks = delete_blocks_holding(store, conn, needles)
        count_erasure(store, conn)
    store.backend.scrub(store, _touched(store))
    return fact, done


def erase_profile(store: PersonaStore) -> Erasure:
    """Everything the profile holds: facts, tombstones, snapshots, blocks, lineage and run records.

    The hashes of its facts stay, so nothing it held is proposed to it again.
    """
    done = Erasure(store.profile)
    with _secure(store), store.transaction() as conn:
        facts = store.list()  # the rows that keep the contract; broken ones go unhashed, but go
        buried = delete_tombstones(conn, store.profile, None, set())
        _remember(store, conn, [*((fact.content, fact.source_memory_id) for fact in facts), *buried])
        done.facts, done.tombstones = [fact.id for fact in facts], len(buried)
        versions = forget_lineage(store, conn, done.facts)
        forget_profile(store, conn)  # proposals about facts that left before, too
        _remember(store, conn, versions)
        done.lineage = len(versions)
        store.erase_rows(conn, store.all_ids(conn))
        done.snapshots = delete_profile_snapshots(store, conn)
        done.blocks = delete_blocks_holding(store, conn, None)
        done.runs = delete_profile_runs(store, conn)
        count_erasure(store, conn)
    store.backend.scrub(store, _touched(store))
    return done


def _remember(store: PersonaStore, conn: Connection, items: list[tuple[str, str | None]]) -> None:
    key = secret(store, conn)
    record(store, conn, digests(key, texts=[text for text, _ in items], memory_ids=[memory for _, memory in items]))


def _touched(store: PersonaStore) -> list[str]:
    with store.read() as conn:
        tables = store.backend.tables(conn)
    return [name for name in ("memoria_persona", "memoria_preferences", "persona_origins", "persona_snapshots",
                              "persona_blocks", "persona_runs", *LINEAGE_TABLES) if name in tables]


class _secure:
    """Deleted rows' bytes are overwritten, not just unlinked, for the length of the operation."""

    def __init__(self, store: PersonaStore) -> None:
        self.store = store

    def __enter__(self) -> None:
        with self.store.read() as conn:
            self.store.backend.secure_delete(conn, True)

    def __exit__(self, *exc: object) -> None:
        with self.store.read() as conn:
            self.store.backend.secure_delete(conn, False)
