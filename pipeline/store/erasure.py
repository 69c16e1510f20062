"""Forget for real: every version of a fact, or everything a profile holds, and everything rendered from it.

A forget names one version of a fact (current, superseded, or demoted to a
tombstone) and takes every version that states the same fact (its text in
other case and spacing, or in another dress: :func:`.forgotten.same_fact`),
with the supersession chains through them. One transaction removes
those rows and their lineage, and records their keyed hashes
(:mod:`.forgotten`). What was rendered from them is found by *generation*, not
by searching for the text's spellings: each fact's birth (the first profile
generation that held it, kept by the table's triggers) bounds every snapshot
and block that may hold it, and those are dropped, whatever template, escape
or filter shaped them. Afterwards the database's pages are scrubbed
(:meth:`Backend.scrub`); re-rendering files and regions is the caller's job
(:mod:`pipeline.schedule.forget`).

:data:`FACT_TEXT` lists every column of ours that holds a fact's text, so an
erasure cannot miss a table (a test checks it against the schema).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..errors import NotFoundError
from .backend import Connection
from .births import delete_births, earliest_birth, source_files, tombstone_of
from .blocks import delete_blocks_since
from .database import Database
from .fact_locks import forget_locks
from .fact_row import check_id
from .forgotten import count_erasure, forgotten_digests, record, same_fact, secret
from .held_writes import forget_held
from .learned import forget_learned
from .memories import delete_tombstones, every_tombstone
from .proposals import forget_profile
from .runs import delete_profile_runs
from .snapshots import delete_snapshots_since
from .supersede import forget_lineage, lineage_ids
from .token_counts import forget as forget_counts

if TYPE_CHECKING:
    from .facts import PersonaStore

# (table, column) of every place persona-tier keeps a fact's text (Mnemosyne's memoria_persona and the tombstones
# in memoria_preferences included); rendered files and regions are rendered again instead.
FACT_TEXT = (
    ("memoria_persona", "content"),
    ("persona_superseded", "content"),
    ("memoria_preferences", "preference"),
    ("persona_snapshots", "text"),
    ("persona_blocks", "text"),
    ("persona_held", "content"),
)
# Tables a forget deletes from, for the scrub that overwrites what the deleted rows left behind.
ERASED_TABLES = ("memoria_persona", "memoria_preferences", "persona_origins", "persona_snapshots", "persona_blocks",
                 "persona_runs", "persona_superseded", "persona_keys", "persona_proposals", "persona_births",
                 "persona_held", "persona_token_counts", "persona_segment_counts")
Kind = Literal["current", "superseded", "tombstone"]
Journal = Callable[[Connection, list[str]], None]  # told the erased texts inside the erasure's transaction


@dataclass(frozen=True, slots=True)
class Version:
    """One version a forget erased: its id and what it was (a tombstone's id is its memoria_preferences row)."""

    id: int
    kind: Kind

    @property
    def label(self) -> str:
        return f"tombstone {self.id}" if self.kind == "tombstone" else f"#{self.id} ({self.kind})"


@dataclass
class Erasure:
    """What one forget or profile erase removed (ids and counts only: never the text)."""

    profile: str
    facts: list[int] = field(default_factory=list)  # current facts
    versions: list[Version] = field(default_factory=list)  # every version, current ones included
    tombstones: int = 0
    snapshots: int = 0
    blocks: int = 0
    lineage: int = 0  # superseded versions
    runs: int = 0
    since: int = 0  # the earliest birth among them: everything rendered from this generation on may hold one
    sources: list[str] = field(default_factory=list)  # files they were imported or adopted from (paths only)
    scrubbed: bool = True  # False: a reader kept the write-ahead log from being emptied (`persona scrub` finishes)

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "facts": self.facts,
                "versions": [{"id": v.id, "kind": v.kind} for v in self.versions], "tombstones": self.tombstones,
                "snapshots": self.snapshots, "blocks": self.blocks, "lineage": self.lineage, "runs": self.runs,
                "sources": self.sources, "scrubbed": self.scrubbed}


def forget_fact(store: PersonaStore, persona_id: int | None = None, *, tombstone_id: int | None = None,
                journal: Journal | None = None) -> tuple[str, Erasure]:
    """Forget the version named by ``persona_id`` (a current or superseded fact, or a demoted one: its tombstone)
    or by ``tombstone_id``, every version sharing its text, and the supersession chains through them, in one
    transaction; then scrub the pages.

    Returns the named text (for the caller's check of files it could not render) and what went. ``journal`` is
    given every erased version's text inside the transaction, before anything is deleted (the pending scrub of the
    hosts' histories is recorded there, so it commits with the erasure or not at all).
    """
    with secure_delete(store), store.transaction() as conn:
        text, done = erase_fact(store, conn, persona_id, tombstone_id=tombstone_id, journal=journal)
    done.scrubbed = scrub(store)
    return text, done


def erase_fact(store: PersonaStore, conn: Connection, persona_id: int | None = None, *,
               tombstone_id: int | None = None, journal: Journal | None = None) -> tuple[str, Erasure]:
    """:func:`forget_fact` inside the caller's transaction (opened under :func:`secure_delete`), without the scrub,
    which must run after it commits (``persona edit --forget`` forgets several facts in one transaction)."""
    done = Erasure(store.profile)
    text = _named_text(store, conn, persona_id, tombstone_id)
    ids = _versions(store, conn, text)
    current, same = _current_rows(store, conn, ids), same_fact(text)
    buried = [row for row in every_tombstone(conn, store.profile)
              if same(row[1]) or row[0] == tombstone_id or row[2] in {f"persona:{i}" for i in ids}]
    done.since = earliest_birth(conn, store.profile, ids)
    done.sources = source_files(conn, store.profile, ids)
    superseded = forget_lineage(store, conn, sorted(ids))
    erased = [*((row[1], row[2]) for row in current), *superseded, *((row[1], row[2]) for row in buried)]
    _remember(store, conn, erased)
    if journal is not None:
        journal(conn, [text, *(item for item, _ in erased)])
    done.facts = [int(row[0]) for row in current]
    done.versions = [Version(fact_id, "current" if fact_id in done.facts else "superseded")
                     for fact_id in sorted(ids)] + [Version(row[0], "tombstone") for row in buried]
    done.lineage, done.tombstones = len(superseded), len(buried)
    store.erase_rows(conn, done.facts)
    delete_tombstones(conn, [row[0] for row in buried])
    _drop_rendered_since(store, conn, done)
    delete_births(conn, store.profile, ids)
    forget_locks(store, conn)
    forget_held(store, conn, ids | set(done.facts), text)
    forget_counts(conn, sorted(ids))  # a count is kept by its text's digest: none outlives the text
    count_erasure(store, conn)
    return text, done


def reach(store: Database, conn: Connection, persona_id: int) -> set[int]:
    """Every fact, current or superseded, a forget of the current fact ``persona_id`` would erase: those with its
    text (:func:`.forgotten.same_fact`) and the supersession chains through them."""
    return _versions(store, conn, _named_text(store, conn, persona_id, None))


def _versions(store: Database, conn: Connection, text: str) -> set[int]:
    return lineage_ids(store, conn, _ids_with_text(store, conn, text))


def erase_profile(store: PersonaStore, *, journal: Journal | None = None) -> Erasure:
    """Everything the profile holds: facts, tombstones, snapshots, blocks, lineage and run records.

    The hashes of its facts stay, so nothing it held is proposed to it again. ``journal``: as :func:`forget_fact`'s.
    """
    done = Erasure(store.profile)
    with secure_delete(store), store.transaction() as conn:
        facts = store.list()  # the rows that keep the contract; broken ones go unhashed, but go
        buried = every_tombstone(conn, store.profile)
        _remember(store, conn, [*((fact.content, fact.source_memory_id) for fact in facts),
                                *((row[1], row[2]) for row in buried)])
        done.facts, done.tombstones = [fact.id for fact in facts], len(buried)
        versions = forget_lineage(store, conn, done.facts)
        _remember(store, conn, versions)
        if journal is not None:
            journal(conn, [*(fact.content for fact in facts), *(row[1] for row in buried),
                           *(text for text, _ in versions)])
        done.lineage = len(versions)
        forget_profile(store, conn)
        delete_tombstones(conn, [row[0] for row in buried])
        store.erase_rows(conn, store.all_ids(conn))
        _drop_rendered_since(store, conn, done)  # since 0: every snapshot and block
        delete_births(conn, store.profile, None)
        forget_locks(store, conn)
        forget_held(store, conn, set(), None)
        forget_learned(store)
        forget_counts(conn, done.facts)
        done.runs = delete_profile_runs(store, conn)
        count_erasure(store, conn)
    done.scrubbed = scrub(store)
    return done


def scrub(store: Database) -> bool:
    """Finish a scrub a forget could not (a reader held the write-ahead log); whether it finished now."""
    return store.backend.scrub(store, _touched(store))


def _named_text(store: Database, conn: Connection, persona_id: int | None, tombstone_id: int | None) -> str:
    """The text of the named version; NotFoundError when the profile holds no such version."""
    if tombstone_id is not None:
        found = _tombstone(conn, store.profile, lambda row: row[0] == check_id(tombstone_id))
        if found is None:
            raise NotFoundError(f"no tombstone {tombstone_id} in profile {store.profile!r}")
        return found
    fact_id = check_id(persona_id)
    for table in ("memoria_persona", "persona_superseded"):
        row = conn.execute(f"SELECT content FROM {table} WHERE id = ? AND session_id = ?",
                           (fact_id, store.profile)).fetchone()
        if row is not None:
            return str(row[0])
    linked = tombstone_of(conn, store.profile, fact_id)  # a demoted fact: the tombstone its demote left
    found = _tombstone(conn, store.profile, lambda row: row[0] == linked or row[2] == f"persona:{fact_id}")
    if found is None:
        raise NotFoundError(f"no persona fact with id {fact_id} in profile {store.profile!r}, current, superseded "
                            "or demoted")
    return found


def _tombstone(conn: Connection, profile: str, which: Callable[[tuple[int, str, Any]], bool]) -> str | None:
    """The text of the profile's first tombstone ``which`` picks (Mnemosyne's own demote names ``persona:ID``)."""
    for row in every_tombstone(conn, profile):
        if which(row):
            return row[1]
    return None


def _ids_with_text(store: Database, conn: Connection, text: str) -> set[int]:
    """Every current or superseded fact of the profile that states ``text`` (:func:`.forgotten.same_fact`)."""
    same = same_fact(text)
    found = set()
    for table in ("memoria_persona", "persona_superseded"):
        for fact_id, content in conn.execute(f"SELECT id, content FROM {table} WHERE session_id = ?",
                                             (store.profile,)):
            if same(content):
                found.add(int(fact_id))
    return found


def _current_rows(store: Database, conn: Connection, ids: set[int]) -> list[Any]:
    if not ids:
        return []
    marks = ", ".join("?" for _ in ids)
    return list(conn.execute(f"SELECT id, content, source_memory_id FROM memoria_persona WHERE session_id = ? AND "
                             f"id IN ({marks}) ORDER BY id", (store.profile, *sorted(ids))))


def _drop_rendered_since(store: Database, conn: Connection, done: Erasure) -> None:
    """Every snapshot recorded, and every block rendered, at or after ``done.since``: they may hold a version,
    whatever template, escape or filter spelled it."""
    done.snapshots = delete_snapshots_since(store, conn, done.since)
    done.blocks = delete_blocks_since(store, conn, done.since)


def _remember(store: Database, conn: Connection, items: list[tuple[str, str | None]]) -> None:
    key = secret(store, conn)
    record(store, conn, forgotten_digests(key, texts=[text for text, _ in items],
                                         memory_ids=[memory for _, memory in items]))


def _touched(store: Database) -> list[str]:
    with store.read() as conn:
        tables = store.backend.tables(conn)
    return [name for name in ERASED_TABLES if name in tables]


@contextmanager
def secure_delete(store: Database) -> Iterator[None]:
    """Deleted rows' bytes are overwritten, not just unlinked, for the length of the operation."""
    with store.read() as conn:
        store.backend.secure_delete(conn, True)
    try:
        yield
    finally:
        with store.read() as conn:
            store.backend.secure_delete(conn, False)
