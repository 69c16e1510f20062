"""Supersession: a fact replacing another (``persona replace``, a facts file's ``key``, an accepted proposal), and undo.

Tables: ``persona_superseded`` (the old fact's whole row, with its lineage: which fact replaced it,
when, and how) and ``persona_keys`` (a profile's slots, such as ``package_manager``, and the fact in each).
Detection only proposes (:mod:`.proposals`); an accepted proposal supersedes here.

A superseded fact leaves ``memoria_persona``: the table is Mnemosyne's, and every reader of it (Mnemosyne's
own, the existing tier's, ours) must see only current facts without knowing about supersession. Undo moves
the row back under its own id. Every operation decides inside the transaction that writes it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from dataclasses import replace as replace_field
from typing import TYPE_CHECKING, Any

from ..errors import InputError, NotFoundError
from .already import existing_fact
from .backend import Connection
from .births import UNKNOWN, deleted_by_us, scope_of, writers
from .database import Database
from .fact_row import FACT_COLUMNS, ROW_FIELDS, Fact, Proposal, check_id, content_key
from .forgotten import admit, forgotten_test
from .proposals import ACCEPTED, decide, open_proposal, reopen
from .proposals import forget as forget_proposals
from .validation import MAX_TOPIC_CHARS, check_scope, check_text, check_tier

if TYPE_CHECKING:
    from .facts import PersonaStore

SAME_SCOPE = "same"  # replace: the new fact keeps the old one's scope (no scope is spelled so)
MATCHES_SHOWN = 5
SUPERSEDED_COLUMNS = f"{FACT_COLUMNS}, superseded_by, superseded_at, how"
# How a fact was superseded (persona_superseded.how). Undo removes a replacement only where the supersession wrote
# it: a replace's new text, a key's imported fact; an existing fact (an accepted proposal: "proposal #N") stays.
REPLACED, REPLACED_BY_EXISTING = "replaced", "replaced by an existing fact"


@dataclass(frozen=True, slots=True)
class Replacement:
    """The outcome of a replace: the fact that left, and the one that took its place."""

    old: Fact
    new: Fact

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old.to_dict(), "new": self.new.to_dict()}


@dataclass(frozen=True, slots=True)
class Restoration:
    """The outcome of an undo: the facts back in the persona, and the replacement: removed when the supersession
    wrote it (a replace, a key), kept when it was a fact of its own before (an accepted proposal)."""

    restored: tuple[Fact, ...]
    removed: Fact | None
    kept: Fact | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"restored": [fact.to_dict() for fact in self.restored],
                "removed": None if self.removed is None else self.removed.to_dict(),
                "kept": None if self.kept is None else self.kept.to_dict()}


@dataclass(frozen=True, slots=True)
class Link:
    """One fact in a supersession chain, oldest first."""

    id: int
    topic: str
    content: str
    current: bool
    superseded_by: int | None
    superseded_at: str | None
    how: str | None
    writer: str = UNKNOWN  # who wrote this version (store/births.py)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def replace(store: PersonaStore, target: int | str, content: str, *, topic: str | None = None,
            tier: str | None = None, reason: str | None = None, force: bool = False,
            scope: str | None = SAME_SCOPE, writer: str | None = None) -> Replacement:
    """Supersede the fact ``target`` (an id, or a unique piece of its text) with ``content``, in one transaction.
    The new fact keeps the old one's scope unless ``scope`` gives another, and is stamped ``writer`` (default:
    the store's). Forgotten text is refused unless ``force``."""
    content = check_text("content", content, store.max_fact_chars, setting="store.max_fact_chars")
    topic = None if topic is None else check_text("topic", topic, MAX_TOPIC_CHARS)
    tier = None if tier is None else check_tier(tier)
    given = None if scope == SAME_SCOPE else check_scope(scope)
    with store.transaction() as conn:
        old = resolve(store, conn, target)
        topic, tier = topic or old.topic, tier or old.tier
        scope = scope_of(conn, store.profile, old.id) if scope == SAME_SCOPE else given
        if (topic, content, scope) == (old.topic, old.content, scope_of(conn, store.profile, old.id)):
            raise InputError(f"fact #{old.id} already says that; nothing to replace")
        existing = _existing(store, conn, topic, content, scope)
        existing = None if existing is not None and existing.id == old.id else existing  # a respelling of itself
        if existing is None and (content, scope) == (old.content, scope_of(conn, store.profile, old.id)):
            return Replacement(old, _moved(store, conn, old, topic, tier))  # a move keeps the fact (#50)
        new = existing or store.insert_row(
            conn, tier=tier, topic=topic, content=content, confidence=old.confidence,
            source=content_key(topic, content, scope), reason=reason or old.promotion_reason, force=force,
            scope=scope, writer=writer)
        supersede(store, conn, old, new, REPLACED if existing is None else REPLACED_BY_EXISTING)
    return Replacement(old, new)


def _moved(store: Database, conn: Connection, fact: Fact, topic: str, tier: str) -> Fact:
    """``fact`` under ``topic`` (and ``tier``), in place: its id, writer, origins and history stay its own; a key
    made of its old topic and text is made again of the new one, so add and import still find it."""
    scope = scope_of(conn, store.profile, fact.id)
    keyed = fact.source_memory_id == content_key(fact.topic, fact.content, scope)
    source = content_key(topic, fact.content, scope) if keyed else fact.source_memory_id
    conn.execute("UPDATE memoria_persona SET topic = ?, tier = ?, source_memory_id = ? WHERE id = ? AND "
                 "session_id = ?", (topic, tier, source, fact.id, store.profile))
    from . import stem_index  # its keys are the topic's: the moved fact is a candidate there now

    stem_index.index(store, conn, [(fact.id, topic, fact.content)])
    return replace_field(fact, topic=topic, tier=tier, source_memory_id=source)


def accept(store: Database, proposal_id: int) -> Proposal:
    """Accept a proposal (:mod:`.proposals`): its new fact supersedes the old one, in one transaction."""
    with store.transaction() as conn:
        proposal = open_proposal(store, conn, proposal_id)
        supersede(store, conn, proposal.old, proposal.new, f"proposal #{proposal.id}")
        decide(store, conn, proposal, ACCEPTED)
    return proposal


def resolve(store: Database, conn: Connection, target: int | str) -> Fact:
    """The current fact named by id, or by a piece of text only one of the profile's facts contains."""
    if isinstance(target, int):
        return _current(store, conn, check_id(target))
    needle = check_text("old_text", target)
    rows = [Fact(**dict(row)) for row in conn.execute(
        f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE session_id = ? ORDER BY id", (store.profile,))]
    found = [fact for fact in rows if isinstance(fact.content, str) and needle in fact.content]
    if not found:
        raise NotFoundError(f"no persona fact in profile {store.profile!r} contains that text")
    if len(found) > 1:
        shown = ", ".join(f"#{fact.id}" for fact in found[:MATCHES_SHOWN])
        more = f" and {len(found) - MATCHES_SHOWN} more" if len(found) > MATCHES_SHOWN else ""
        raise InputError(f"{len(found)} persona facts contain that text ({shown}{more}); give more of it, or an id")
    return found[0]


def supersede(store: Database, conn: Connection, old: Fact, new: Fact, how: str) -> None:
    """Move ``old`` out of the persona into ``persona_superseded``, replaced by ``new`` (caller's transaction)."""
    conn.execute(f"INSERT INTO persona_superseded ({SUPERSEDED_COLUMNS}) SELECT {FACT_COLUMNS}, ?, ?, ? "
                 "FROM memoria_persona WHERE id = ? AND session_id = ?",
                 (new.id, store.now(), how, old.id, store.profile))
    conn.execute("DELETE FROM memoria_persona WHERE id = ? AND session_id = ?", (old.id, store.profile))
    deleted_by_us(conn, store.profile, old.id)
    conn.execute("UPDATE persona_keys SET persona_id = ? WHERE session_id = ? AND persona_id = ?",
                 (new.id, store.profile, old.id))


def undo(store: Database, persona_id: int) -> Restoration:
    """Undo a supersession: ``persona_id`` is the replacement or a fact it replaced. Every fact it replaced comes
    back under its own id, and the replacement goes if the supersession wrote it, in one transaction; an accepted
    proposal is open again."""
    check_id(persona_id)
    with store.transaction() as conn:
        replacement = _replacement_of(store, conn, persona_id)
        wrote_it = all(_wrote_replacement(row["how"]) for row in _superseded(store, conn, "superseded_by = ?",
                                                                               replacement.id))
        restored = _restore(store, conn, replacement.id)
        if wrote_it:
            conn.execute("DELETE FROM memoria_persona WHERE id = ? AND session_id = ?", (replacement.id, store.profile))
            deleted_by_us(conn, store.profile, replacement.id)
        reopen(store, conn, [fact.id for fact in restored], replacement.id)
    return Restoration(restored, replacement if wrote_it else None, None if wrote_it else replacement)


def _wrote_replacement(how: str) -> bool:
    return how == REPLACED or how.startswith("key ")


def _replacement_of(store: Database, conn: Connection, persona_id: int) -> Fact:
    row = _superseded(store, conn, "id = ?", persona_id)
    if row:  # the old fact: its replacement must still be current
        by = int(row[0]["superseded_by"])
        if _fact(store, conn, by) is None:
            raise InputError(f"fact #{persona_id} was superseded by #{by}, which is no longer in the persona; "
                             "nothing to undo")
        return _current(store, conn, by)
    fact = _current(store, conn, persona_id)
    if not _superseded(store, conn, "superseded_by = ?", persona_id):
        raise InputError(f"fact #{persona_id} replaced no other fact; nothing to undo")
    return fact


def _restore(store: Database, conn: Connection, replacement_id: int) -> tuple[Fact, ...]:
    rows = _superseded(store, conn, "superseded_by = ?", replacement_id)
    forgotten = forgotten_test(store, conn)
    for row in rows:
        admit(store, conn, row["content"], row["source_memory_id"], force=False, test=forgotten)
        conn.execute(f"INSERT INTO memoria_persona ({FACT_COLUMNS}) SELECT {FACT_COLUMNS} FROM persona_superseded "
                     "WHERE id = ? AND session_id = ?", (row["id"], store.profile))
        conn.execute("DELETE FROM persona_superseded WHERE id = ? AND session_id = ?", (row["id"], store.profile))
        conn.execute("UPDATE persona_keys SET persona_id = ? WHERE session_id = ? AND persona_id = ?",
                     (row["id"], store.profile, replacement_id))
    return tuple(Fact(**{key: row[key] for key in ROW_FIELDS}) for row in rows)


def history(store: Database, persona_id: int) -> list[Link]:
    """The supersession chain through ``persona_id``, both directions, oldest first."""
    check_id(persona_id)
    with store.snapshot() as conn:
        if _fact(store, conn, persona_id) is None and not _superseded(store, conn, "id = ?", persona_id):
            raise NotFoundError(f"no persona fact with id {persona_id} in profile {store.profile!r}, current or "
                                "superseded")
        ids = _chain(store, conn, persona_id)
        links = [_link(store, conn, fact_id) for fact_id in sorted(ids)]
        written = writers(conn, store.profile, ids)
    return [replace_field(link, writer=written.get(link.id, UNKNOWN)) for link in links if link is not None]


def _chain(store: Database, conn: Connection, start: int) -> set[int]:
    seen, todo = set(), [start]
    while todo:
        fact_id = todo.pop()
        if fact_id in seen:
            continue
        seen.add(fact_id)
        todo += [int(row["id"]) for row in _superseded(store, conn, "superseded_by = ?", fact_id)]
        todo += [int(row["superseded_by"]) for row in _superseded(store, conn, "id = ?", fact_id)]
    return seen


def _link(store: Database, conn: Connection, fact_id: int) -> Link | None:
    old = _superseded(store, conn, "id = ?", fact_id)
    if old:
        row = old[0]
        return Link(fact_id, row["topic"], row["content"], False, int(row["superseded_by"]), row["superseded_at"],
                    row["how"])
    fact = _fact(store, conn, fact_id)
    return None if fact is None else Link(fact_id, fact.topic, fact.content, True, None, None, None)


def lineage_ids(store: Database, conn: Connection, ids: set[int]) -> set[int]:
    """Every fact, current or superseded, in the supersession chains through ``ids``."""
    return set().union(*(_chain(store, conn, fact_id) for fact_id in ids)) if ids else set()


def forget_lineage(store: Database, conn: Connection, ids: list[int]) -> list[tuple[str, str | None]]:
    """Remove every version in the chains through ``ids`` (caller's transaction), with their slots and proposals;
    return the (text, source) of each removed superseded version, so its hash is kept as the fact's is."""
    chain = lineage_ids(store, conn, set(ids))
    gone: list[tuple[str, str | None]] = []
    texts = [fact.content for fact_id in sorted(chain) if (fact := _fact(store, conn, fact_id)) is not None]
    for fact_id in sorted(chain):
        for row in _superseded(store, conn, "id = ?", fact_id):
            gone.append((str(row["content"]), row["source_memory_id"]))
        conn.execute("DELETE FROM persona_superseded WHERE session_id = ? AND id = ?", (store.profile, fact_id))
        conn.execute("DELETE FROM persona_keys WHERE session_id = ? AND persona_id = ?", (store.profile, fact_id))
    forget_proposals(store, conn, sorted(chain), texts + [text for text, _ in gone])
    return gone


def superseded_rows(conn: Connection, profile: str) -> list[Any]:
    """(id, tier, topic, content, superseded_by) of the profile's superseded facts, for `persona explain`."""
    return list(conn.execute("SELECT id, tier, topic, content, superseded_by FROM persona_superseded "
                             "WHERE session_id = ? ORDER BY id", (profile,)))


def superseded_keys(conn: Connection, profile: str, asked: Any = None) -> set[str]:
    """The source keys of the profile's superseded facts: an import does not bring a replaced fact back
    (``asked``: :func:`ask_superseded_keys`' cursor, sent before with other statements)."""
    return {row[0] for row in (ask_superseded_keys(conn, profile) if asked is None else asked).fetchall()}


def ask_superseded_keys(conn: Connection, profile: str) -> Any:
    """:func:`superseded_keys`' statement, its answer unread (in a batched transaction, sent with the next read)."""
    return conn.execute("SELECT source_memory_id FROM persona_superseded WHERE session_id = ? AND source_memory_id "
                        "IS NOT NULL", (profile,))


# -- keys (a facts file's slots) ------------------------------------------

def key_owner(conn: Connection, profile: str, key: str, scope: str | None = None) -> int | None:
    """The current fact in the profile's slot ``key`` of ``scope`` (a slot is one scope's: None is global)."""
    row = conn.execute("SELECT persona_id FROM persona_keys WHERE session_id = ? AND scope = ? AND key = ?",
                       (profile, scope or "", key)).fetchone()
    return None if row is None else int(row[0])


def set_key(conn: Connection, profile: str, key: str, persona_id: int, scope: str | None = None) -> None:
    conn.execute("INSERT INTO persona_keys (session_id, scope, key, persona_id) VALUES (?, ?, ?, ?) ON CONFLICT "
                 "(session_id, scope, key) DO UPDATE SET persona_id = excluded.persona_id",
                 (profile, scope or "", key, persona_id))


def drop_key(conn: Connection, profile: str, key: str, scope: str | None = None) -> None:
    """Empty the profile's slot ``key`` in ``scope``: no fact is in it any more."""
    conn.execute("DELETE FROM persona_keys WHERE session_id = ? AND scope = ? AND key = ?",
                 (profile, scope or "", key))


def drop_keys_of(conn: Connection, profile: str, persona_id: int) -> None:
    """Empty every slot the fact holds (it moved to another scope, whose slots are others)."""
    conn.execute("DELETE FROM persona_keys WHERE session_id = ? AND persona_id = ?", (profile, persona_id))


def keys_of(conn: Connection, profile: str) -> dict[int, str]:
    """Fact id -> slot, for the profile's keyed facts."""
    return {int(row[1]): str(row[0]) for row in conn.execute(
        "SELECT key, persona_id FROM persona_keys WHERE session_id = ?", (profile,))}


# -- helpers ----------------------------------------------------------------

def _fact(store: Database, conn: Connection, fact_id: int) -> Fact | None:
    row = conn.execute(f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ? AND session_id = ?",
                       (fact_id, store.profile)).fetchone()
    return None if row is None else Fact(**dict(row))


def _current(store: Database, conn: Connection, fact_id: int) -> Fact:
    fact = _fact(store, conn, fact_id)
    if fact is None:
        by = _superseded(store, conn, "id = ?", fact_id)
        if by:
            raise InputError(f"fact #{fact_id} was superseded by #{by[0]['superseded_by']}; see `persona history "
                             f"{fact_id}`")
        raise NotFoundError(f"no persona fact with id {fact_id} in profile {store.profile!r}")
    return fact


def _existing(store: Database, conn: Connection, topic: str, content: str, scope: str | None) -> Fact | None:
    row = existing_fact(store, conn, topic, content, scope)
    return None if row is None else Fact(**dict(row))


def _superseded(store: Database, conn: Connection, where: str, value: int) -> list[Any]:
    return list(conn.execute(f"SELECT {SUPERSEDED_COLUMNS} FROM persona_superseded WHERE session_id = ? AND {where} "
                             "ORDER BY id", (store.profile, value)))
