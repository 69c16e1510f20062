"""``persona topics``: the profile's topics with their counts, and a rename (or a merge) as replaces with lineage.

A topic is one in any case and Unicode form (:mod:`pipeline.text`). Renaming
one gives each of its facts a replacement under the new name, and moves the old
row out with its lineage (:mod:`.supersede`), so ``persona history`` shows it
and ``persona undo-replace`` brings it back. A fact whose text the new topic
already holds is superseded by that fact (a merge) instead of copied.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, NotFoundError
from ..text import normal_form, spellings
from . import supersede
from .backend import Connection
from .births import scope_of
from .fact_row import FACT_COLUMNS, Fact, content_key
from .validation import MAX_TOPIC_CHARS, check_text

if TYPE_CHECKING:
    from .database import Database
    from .facts import PersonaStore


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic as renders show it, how many facts it holds, and every spelling they use."""

    topic: str
    count: int
    spellings: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "spellings": list(self.spellings)}


@dataclass(frozen=True, slots=True)
class Renamed:
    """A rename's outcome: each (old fact, the fact that replaced it), and how many were merged into one there."""

    old: str
    new: str
    moved: tuple[tuple[Fact, Fact], ...]
    merged: int

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "merged": self.merged,
                "moved": [{"old": old.id, "new": new.id, "content": new.content} for old, new in self.moved]}


def topics(store: PersonaStore, aliases: dict[str, str] | None = None) -> list[Topic]:
    """The profile's topics, most facts first, then by name."""
    facts = store.list()
    shown = spellings(((fact.topic, fact.id) for fact in facts), aliases)
    counts: dict[str, list[str]] = {}
    for fact in facts:
        counts.setdefault(shown[fact.topic], []).append(fact.topic)
    found = [Topic(name, len(used), tuple(sorted(set(used)))) for name, used in counts.items()]
    return sorted(found, key=lambda topic: (-topic.count, normal_form(topic.topic), topic.topic))


def rename(store: PersonaStore, old: str, new: str) -> Renamed:
    """Every fact of topic ``old`` (any spelling) under ``new``, in one transaction; onto an existing topic, a
    merge into that topic's spelling as its oldest fact has it."""
    new = check_text("topic", new, MAX_TOPIC_CHARS)
    with store.transaction() as conn:
        facts = _of_topic(store, conn, old)
        if not facts:
            raise NotFoundError(f"no topic {old!r} in profile {store.profile!r} (`persona topics` lists them)")
        target = new if normal_form(new) == normal_form(old) else _spelled(store, conn, new)
        if all(fact.topic == target for fact in facts):
            raise InputError(f"topic {old!r} is already spelled {target!r}; nothing to rename")
        moved = [(fact, *_move(store, conn, fact, target)) for fact in facts if fact.topic != target]
    return Renamed(old, target, tuple((was, now) for was, now, _ in moved), sum(merged for *_, merged in moved))


def _of_topic(store: Database, conn: Connection, topic: str) -> list[Fact]:
    wanted = normal_form(topic)
    rows = conn.execute(f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE session_id = ? ORDER BY id",
                        (store.profile,)).fetchall()
    return [Fact(**dict(row)) for row in rows if isinstance(row["topic"], str) and normal_form(row["topic"]) == wanted]


def _spelled(store: Database, conn: Connection, topic: str) -> str:
    """The spelling an existing topic's oldest fact has, or ``topic`` itself for a new one."""
    there = _of_topic(store, conn, topic)
    return there[0].topic if there else topic


def _move(store: PersonaStore, conn: Connection, fact: Fact, topic: str) -> tuple[Fact, bool]:
    """Replace ``fact`` by the same fact under ``topic``: the one already there (a merge: True), or a copy."""
    scope = scope_of(conn, store.profile, fact.id)
    there = store.existing(conn, topic, fact.content, scope)
    if there is not None and there.id != fact.id:
        supersede.supersede(store, conn, fact, there, supersede.REPLACED_BY_EXISTING)
        return there, True
    copy = store.insert_row(conn, tier=fact.tier, topic=topic, content=fact.content, confidence=fact.confidence,
                            source=content_key(topic, fact.content, scope), reason=fact.promotion_reason,
                            scope=scope)
    conn.execute("UPDATE memoria_persona SET reinforcement_count = ?, last_reinforced_at = ? WHERE id = ?",
                 (fact.reinforcement_count, fact.last_reinforced_at, copy.id))
    supersede.supersede(store, conn, fact, copy, supersede.REPLACED)
    return copy, False
