"""Held writes (``persona_held``): what an agent's tool asked to write while ``writes.agents`` is ``ask``, kept
until the user accepts it (``persona review accept wID``: the write is made then, stamped with the agent as its
writer) or dismisses it.

A held write is not a fact: no render, reader or tool sees it, only ``persona review`` and the page's Proposals.
Its text is a fact's text all the same, so a forget of that text erases it too (:mod:`.erasure`), and forgotten
text is refused when it is held, as at any other way in. Ids are shown with a ``w`` (``w3``), so they never read
as a proposal's.
"""

from __future__ import annotations

import builtins
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ..defaults import DEFAULT_CONFIDENCE, DEFAULT_TIER
from ..errors import InputError, NotFoundError
from .backend import Connection
from .database import Database
from .fact_locks import LockedFacts
from .fact_row import check_id
from .forgotten import admit, same_fact
from .validation import MAX_TOPIC_CHARS, check_confidence, check_scope, check_text, check_tier

if TYPE_CHECKING:
    from .facts import PersonaStore

Action = Literal["add", "promote", "replace", "demote"]
PREFIX = "w"  # a held write's id as shown: w3
COLUMNS = ("id, action, persona_id, memory_id, topic, content, tier, confidence, scope, reason, force, writer, "
           "held_at")


@dataclass(frozen=True, slots=True)
class HeldWrite:
    """One write an agent asked for, awaiting the user's approval."""

    id: int
    action: str
    persona_id: int | None
    memory_id: str | None
    topic: str | None
    content: str | None
    tier: str | None
    confidence: float | None
    scope: str | None
    reason: str | None
    force: bool
    writer: str
    held_at: str

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.id}"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "id": self.name, "kind": "write", "scope": self.scope or "global"}

    def summary(self) -> str:
        """What the write would do, in a few words (its text included)."""
        if self.action == "add":
            return f"add to {self.topic}: {self.content}"
        if self.action == "replace":
            return f"replace #{self.persona_id} with: {self.content}"
        if self.action == "promote":
            return f"promote memory {self.memory_id}"
        return f"demote #{self.persona_id}"


def held_id(text: str | int) -> int:
    """The number of a held write's shown id (``w3`` or ``3``), or InputError."""
    raw = str(text).strip().lower().removeprefix(PREFIX)
    if not raw.isdecimal():
        raise InputError(f"invalid held write {text!r}: expected {PREFIX} and a number, as `persona review` lists it")
    return check_id(int(raw))


class HeldWrites(LockedFacts):
    """The store's held writes (a base of :class:`.facts.PersonaStore`)."""

    def hold(self, action: Action, *, persona_id: int | None = None, memory_id: str | None = None,
             topic: str | None = None, content: str | None = None, tier: str | None = None,
             confidence: float | None = None, scope: str | None = None, reason: str | None = None,
             force: bool = False) -> HeldWrite:
        """Keep an agent's write for the user's approval; the same checks as the write itself where they can run
        now (text, tier, scope, forgotten text, the fact it names), so a write that could never be made is refused
        at once."""
        values = _checked(self, topic, content, tier, confidence, scope)
        with self.transaction() as conn:
            if persona_id is not None:
                self._current(conn, persona_id)
            if values["content"] is not None:
                admit(self, conn, values["content"], None, force=force)
            row = conn.execute(
                "INSERT INTO persona_held (profile, action, persona_id, memory_id, topic, content, tier, confidence, "
                "scope, reason, force, writer, held_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                f"RETURNING {COLUMNS}",
                (self.profile, action, persona_id, memory_id, values["topic"], values["content"], values["tier"],
                 values["confidence"], values["scope"], reason, int(force), self.writer, self.now())).fetchone()
        return _held(row)

    def held_writes(self) -> builtins.list[HeldWrite]:
        """The profile's held writes, oldest first."""
        with self.read() as conn:
            rows = conn.execute(f"SELECT {COLUMNS} FROM persona_held WHERE profile = ? ORDER BY id",
                                (self.profile,)).fetchall()
        return [_held(row) for row in rows]

    def held_counts(self) -> dict[str, int]:
        """How many writes await the user's approval: the agents' (``writes.agents: ask``) and the learned facts'
        (``learn.approve: ask``, written by ``learn:HOST``)."""
        with self.read() as conn:
            self.note_read(conn, "held")  # a status kept with what it read: a write held or decided moves it
            rows = conn.execute("SELECT writer LIKE 'learn:%', COUNT(*) FROM persona_held WHERE profile = ? "
                                "GROUP BY writer LIKE 'learn:%'", (self.profile,)).fetchall()
        counts = {bool(learned): int(count) for learned, count in rows}
        return {"agents": counts.get(False, 0), "learned": counts.get(True, 0)}

    def approve(self, held: int | str) -> tuple[HeldWrite, Any]:
        """Make a held write now, stamped with the agent that asked for it, and drop it (one transaction); the
        write's own outcome (a Promotion, a Replacement or the demoted Fact) comes back with it."""
        with self.transaction() as conn:
            write = self._take(conn, held)
            mine, self.writer = self.writer, write.writer
            try:
                return write, _make(cast("PersonaStore", self), write)  # the one subclass: the store
            finally:
                self.writer = mine

    def dismiss_held(self, held: int | str) -> HeldWrite:
        """Drop a held write unmade."""
        with self.transaction() as conn:
            return self._take(conn, held)

    def _take(self, conn: Connection, held: int | str) -> HeldWrite:
        number = held_id(held)
        row = conn.execute(f"DELETE FROM persona_held WHERE profile = ? AND id = ? RETURNING {COLUMNS}",
                           (self.profile, number)).fetchone()
        if row is None:
            raise NotFoundError(f"no held write {PREFIX}{number} in profile {self.profile!r} (see `persona review`)")
        return _held(row)


def _checked(store: Database, topic: str | None, content: str | None, tier: str | None, confidence: float | None,
             scope: str | None) -> dict[str, Any]:
    return {"topic": None if topic is None else check_text("topic", topic, MAX_TOPIC_CHARS),
            "content": None if content is None else check_text("content", content, store.max_fact_chars,
                                                                setting="store.max_fact_chars"),
            "tier": None if tier is None else check_tier(tier),
            "confidence": None if confidence is None else check_confidence(confidence),
            "scope": check_scope(scope)}


def _make(store: PersonaStore, write: HeldWrite) -> Any:
    """The write itself, as the tool would have made it."""
    from .supersede import SAME_SCOPE

    if write.action == "add":
        confidence = DEFAULT_CONFIDENCE if write.confidence is None else write.confidence
        return store.add(str(write.content), topic=str(write.topic), tier=write.tier or DEFAULT_TIER,
                         confidence=confidence, reason=write.reason, force=write.force, scope=write.scope)
    if write.action == "promote":
        return store.promote(str(write.memory_id), tier=write.tier or DEFAULT_TIER, reason=write.reason,
                             force=write.force)
    if write.action == "replace":
        return store.replace(int(write.persona_id or 0), str(write.content), reason=write.reason, force=write.force,
                             scope=write.scope if write.scope is not None else SAME_SCOPE)
    return store.demote(int(write.persona_id or 0), reason=write.reason)


def _held(row: Any) -> HeldWrite:
    return HeldWrite(int(row[0]), str(row[1]), None if row[2] is None else int(row[2]), row[3], row[4], row[5],
                     row[6], None if row[7] is None else float(row[7]), row[8], row[9], bool(row[10]), str(row[11]),
                     str(row[12]))


def forget_held(store: Database, conn: Connection, ids: set[int], text: str | None) -> int:
    """Erase the held writes that state ``text`` (:func:`.forgotten.same_fact`) or name a fact of ``ids``, or, with
    ``text`` None, every held write of the profile (an erasure; caller's transaction). How many went."""
    if text is None:
        return conn.execute("DELETE FROM persona_held WHERE profile = ?", (store.profile,)).rowcount
    same = same_fact(text)
    gone = [int(row[0]) for row in conn.execute("SELECT id, content, persona_id FROM persona_held WHERE profile = ?",
                                                (store.profile,)) if same(row[1]) or row[2] in ids]
    for held in gone:
        conn.execute("DELETE FROM persona_held WHERE profile = ? AND id = ?", (store.profile, held))
    return len(gone)
