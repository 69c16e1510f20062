"""``persona edit``: what a saved edit file changes (the plan), and applying it in one transaction.

Entries are matched to the facts shown by id (:mod:`.edit_file`). A changed
text or topic is a replace (:mod:`pipeline.store.supersede`: lineage, ``persona history``,
``persona undo-replace``); a changed tier, confidence, reinforcement count,
reason or key updates the fact in place; a fact whose entry is gone is
demoted, or forgotten for real (:mod:`pipeline.store.erasure`) when the user asked for that;
an entry without an id adds a fact. What edit writes is stamped ``edit``.

The plan is refused as a whole, every problem named with its line, before
anything is written: an id the profile does not hold, the same id, key or text
twice, forgotten or demoted text (unless forced), a swap of two texts, a forget
that would take a fact the file keeps. The apply runs in one transaction that
first checks the profile's change counter: if anything wrote to the profile
since the editor opened, nothing is applied.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..errors import EditConflict, InputError
from ..scopes import spelled
from ..store import (
    FORGOTTEN,
    Connection,
    Erasure,
    Fact,
    Journal,
    PersonaStore,
    content_key,
    erase_fact,
    forgotten_test,
    origins,
    profile_generation,
    reach,
    same_fact,
    scrub,
    secure_delete,
    supersede,
)
from .edit_file import EditBase, Edited, Problem, refused

EDIT_WRITER = "edit"  # who wrote what persona edit adds or replaces (store/births.py)
Kind = Literal["add", "replace", "update", "demote", "forget"]
ATTRIBUTES = ("tier", "confidence", "reinforcement_count", "reason", "key")
IDENTITY = ("topic", "content", "scope")  # a change to any of these is a replace, with lineage


@dataclass(frozen=True)
class Wanted:
    """A fact as the file says it should be (or as it was shown)."""

    topic: str
    content: str
    tier: str
    confidence: float
    reinforcement_count: int
    reason: str | None
    key: str | None
    scope: str | None = None  # None: global (pipeline.scopes)

    @classmethod
    def shown(cls, fact: Fact, key: str | None) -> Wanted:
        return cls(fact.topic, fact.content, fact.tier, fact.confidence, fact.reinforcement_count,
                   fact.promotion_reason or None, key, fact.scope)

    @classmethod
    def edited(cls, edited: Edited, was: Wanted | None, *, by_text: bool = False) -> Wanted:
        """What the entry says; a tier, confidence or count it leaves out keeps the fact's own, and so do a reason
        and a key when the entry was matched by its text (an entry with an id says them as the export does)."""
        entry = edited.entry

        def keep(name: str, value: Any, default: Any) -> Any:
            if name in edited.given and value is not None:
                return value
            return getattr(was, name) if was is not None else default

        reason, key = (keep("reason", entry.reason, None), keep("key", entry.key, None)) if by_text else \
            (entry.reason, entry.key)
        return cls(entry.topic, entry.content, keep("tier", entry.tier, entry.tier),
                   keep("confidence", entry.confidence, entry.confidence),
                   keep("reinforcement_count", entry.reinforcement_count, 0), reason, key, entry.scope)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scope": spelled(self.scope)}

    @property
    def text(self) -> tuple[str, str, str | None]:
        """What makes it this fact rather than another: its topic, text and scope."""
        return self.topic, self.content, self.scope


@dataclass(frozen=True)
class Step:
    """One change of the plan: to the fact ``old`` (None for an add), from ``was`` to ``now`` (None: it goes)."""

    kind: Kind
    line: int | None
    old: Fact | None
    was: Wanted | None
    now: Wanted | None

    @property
    def changed(self) -> tuple[str, ...]:
        """The fields a replace or update changes."""
        if self.was is None or self.now is None:
            return ()
        return tuple(name for name in (*IDENTITY, *ATTRIBUTES)
                     if getattr(self.was, name) != getattr(self.now, name))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "line": self.line, "id": None if self.old is None else self.old.id,
                "changed": list(self.changed), "was": None if self.was is None else self.was.to_dict(),
                "now": None if self.now is None else self.now.to_dict()}


@dataclass(frozen=True)
class Plan:
    """What a saved edit changes, in the order it is applied: removals, replaces, updates, then adds."""

    base: EditBase
    steps: tuple[Step, ...]
    forget: bool = False

    def of(self, *kinds: Kind) -> list[Step]:
        return [step for step in self.steps if step.kind in kinds]

    @property
    def empty(self) -> bool:
        return not self.steps

    def counts(self) -> dict[str, int]:
        return {"added": len(self.of("add")), "changed": len(self.of("replace", "update")),
                "removed": len(self.of("demote", "forget"))}

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.base.profile, **self.counts(), "forget": self.forget,
                "steps": [step.to_dict() for step in self.steps]}


@dataclass
class Applied:
    """What an applied edit did, by id."""

    added: list[int] = field(default_factory=list)
    replaced: list[tuple[int, int]] = field(default_factory=list)  # (old, new)
    updated: list[int] = field(default_factory=list)
    demoted: list[int] = field(default_factory=list)
    erased: list[tuple[str, Erasure]] = field(default_factory=list)  # each forget's text and what went

    def to_dict(self) -> dict[str, Any]:
        return {"added": self.added, "replaced": [{"old": old, "new": new} for old, new in self.replaced],
                "updated": self.updated, "demoted": self.demoted,
                "forgotten": [erasure.to_dict() for _, erasure in self.erased]}


# -- the plan -----------------------------------------------------------------------------------------


def plan_edit(store: PersonaStore, base: EditBase, edited: list[Edited], *, forget: bool = False,
              force: bool = False) -> Plan:
    """What the saved entries change against the facts shown; an EditError naming every problem, by line."""
    problems = _unknown_ids(base, edited) + _repeats(edited) + _writers(base, edited) + _too_long(store, edited)
    if problems:
        raise refused(problems)
    plan = Plan(base, _steps(base, edited, forget), forget)
    problems = _swaps(plan) + _refused_texts(store, plan, force) + _forget_reach(store, plan, edited)
    if problems:
        raise refused(problems)
    return plan


def _steps(base: EditBase, edited: list[Edited], forget: bool) -> tuple[Step, ...]:
    matched = _matches(base, edited)
    kept = {fact.id for fact in matched.values()}
    removals = [Step("forget" if forget else "demote", None, fact, Wanted.shown(fact, base.keys.get(fact.id)), None)
                for fact_id, fact in base.facts.items() if fact_id not in kept]
    changes, adds = [], []
    for index, item in enumerate(edited):
        old = matched.get(index)
        was = None if old is None else Wanted.shown(old, base.keys.get(old.id))
        now = Wanted.edited(item, was, by_text=old is not None and item.entry.id is None)
        if old is None or was is None:
            adds.append(Step("add", item.line, None, None, now))
        elif now.text != was.text:
            changes.append(Step("replace", item.line, old, was, now))
        elif now != was:
            changes.append(Step("update", item.line, old, was, now))
    return (*removals, *sorted(changes, key=lambda step: step.kind), *adds)


def _matches(base: EditBase, edited: list[Edited]) -> dict[int, Fact]:
    """The fact shown that each entry is (by its index): the one its id names; for an entry without an id, the one
    with its topic and text that no id names (an id line deleted, a fact pasted in again: the same fact, not a
    second one)."""
    named = {item.entry.id for item in edited if item.entry.id is not None}
    by_text = {(fact.topic, fact.content, fact.scope): fact for fact in base.facts.values() if fact.id not in named}
    matched = {}
    for index, item in enumerate(edited):
        fact = base.facts.get(item.entry.id) if item.entry.id is not None else \
            by_text.pop((item.entry.topic, item.entry.content, item.entry.scope), None)
        if fact is not None:
            matched[index] = fact
    return matched


def _unknown_ids(base: EditBase, edited: list[Edited]) -> list[Problem]:
    return [(item.line, f"id {item.entry.id}: profile {base.profile!r} has no such fact (it may have left since, "
                        "or belong to another profile or database); leave the id out to add the entry as a new fact")
            for item in edited if item.entry.id is not None and item.entry.id not in base.facts]


def _repeats(edited: list[Edited]) -> list[Problem]:
    problems: list[Problem] = []
    for what, identity in (("id", lambda e: e.id), ("key", lambda e: None if e.key is None else (e.key, e.scope)),
                           ("topic, text and scope", lambda e: (e.topic, e.content, e.scope))):
        seen: dict[Any, int] = {}
        for item in edited:
            value = identity(item.entry)
            if value is not None and value in seen:
                problems.append((item.line, f"repeats the {what} of the entry on line {seen[value]}"))
            seen.setdefault(value, item.line)
    return problems


def _writers(base: EditBase, edited: list[Edited]) -> list[Problem]:
    """Who wrote a fact is stamped by persona-tier, never typed: a writer line may only say what it said."""
    problems: list[Problem] = []
    for item in edited:
        old = base.facts.get(item.entry.id) if item.entry.id is not None else None
        if item.entry.writer is not None and (old is None or item.entry.writer != old.writer):
            problems.append((item.line, f"writer: who wrote a fact is recorded by persona-tier (what edit writes "
                                        f"is written by {EDIT_WRITER!r}); remove the line"))
    return problems


def _too_long(store: PersonaStore, edited: list[Edited]) -> list[Problem]:
    return [(item.line, f"content is {len(item.entry.content)} characters; the limit is {store.max_fact_chars} "
                        "(store.max_fact_chars)")
            for item in edited if len(item.entry.content) > store.max_fact_chars]


def _swaps(plan: Plan) -> list[Problem]:
    """A replace may not take the text another replaced fact holds until it is replaced itself: one at a time."""
    holders = {step.was.text: step.old.id for step in plan.of("replace") if step.was and step.old}
    return [(step.line, f"#{holders[step.now.text]} holds this topic and text until its own change is applied; "
                        "change one of the two now and the other in a second edit")
            for step in plan.of("replace") if step.now and step.now.text in holders]


def _refused_texts(store: PersonaStore, plan: Plan, force: bool) -> list[Problem]:
    """Forgotten text is refused, as every way in refuses it, and a new fact that was demoted, as ``persona add``
    refuses it; both unless ``force``."""
    if force:
        return []
    problems: list[Problem] = []
    with store.snapshot() as conn:
        forgotten = forgotten_test(store, conn)
        for step in plan.of("add", "replace"):
            assert step.now is not None
            if forgotten(step.now.content, None):
                problems.append((step.line, FORGOTTEN))
            elif step.kind == "add" and store.is_tombstoned(content_key(*step.now.text)):
                problems.append((step.line, "that fact was demoted; pass --force to add it again"))
    return problems


def _forget_reach(store: PersonaStore, plan: Plan, edited: list[Edited]) -> list[Problem]:
    """A forget takes every fact with the same text and their chains of replacements: never one the file keeps,
    and never a text the file brings in."""
    gone = plan.of("forget")
    if not gone:
        return []
    lines = {fact.id: edited[index].line for index, fact in _matches(plan.base, edited).items()}
    with store.snapshot() as conn:
        reached = {step.old.id: reach(store, conn, step.old.id) for step in gone if step.old}
    problems: list[Problem] = [(lines[kept], f"--forget forgets #{fact_id}, and with it #{kept} (the same text, or "
                                             f"one chain of replacements): remove #{kept} too, or demote instead")
                               for fact_id, ids in reached.items() for kept in sorted(ids & set(lines))]
    texts = [(same_fact(step.old.content), step.old.id) for step in gone if step.old]
    for step in plan.of("add", "replace"):
        forgotten_with = next((fact_id for same, fact_id in texts if step.now and same(step.now.content)), None)
        if forgotten_with is not None:
            problems.append((step.line, f"--forget forgets this text with #{forgotten_with}; keep that fact "
                                        "instead, or drop this entry"))
    return problems


# -- applying it ----------------------------------------------------------------------------------------


def apply_edit(store: PersonaStore, plan: Plan, *, force: bool = False, journal: Journal | None = None) -> Applied:
    """Apply the plan in one transaction: nothing if the profile changed since the editor opened
    (:class:`EditConflict`), or if any step is refused (EditError naming its line). Forgotten facts' pages are
    scrubbed after the commit; rendering their files again is the caller's (``schedule.forget.settle``).
    ``journal``: told each forget's texts in the transaction (the pending scrub of the hosts' histories)."""
    done = Applied()
    guard: AbstractContextManager[None] = secure_delete(store) if plan.of("forget") else nullcontext()
    with guard, store.transaction() as conn:
        _unchanged_since(store, conn, plan.base)
        final: dict[Step, int] = {}  # the id each fact has after its step (a replace and an add give a new one)
        for step in plan.steps:
            try:
                final[step] = _apply_step(store, conn, step, done, force, journal)
            except InputError as error:  # forgotten text and the like, met inside the transaction
                raise refused([(step.line, str(error))]) from None
        _apply_keys(store, conn, final)
    if done.erased:
        scrubbed = scrub(store)
        for _, erasure in done.erased:
            erasure.scrubbed = scrubbed
    return done


def _unchanged_since(store: PersonaStore, conn: Connection, base: EditBase) -> None:
    """EditConflict, saying what changed, when anything wrote to the profile since the editor opened."""
    if profile_generation(conn, store.profile) == base.generation:
        return
    now = {fact.id: fact for fact in store.list()}
    added = sorted(set(now) - set(base.facts))
    removed = sorted(set(base.facts) - set(now))
    changed = sorted(fact_id for fact_id in set(now) & set(base.facts) if now[fact_id] != base.facts[fact_id])
    what = "; ".join(f"{', '.join(f'#{fact_id}' for fact_id in ids)} {verb}"
                     for ids, verb in ((added, "added"), (changed, "changed"), (removed, "removed")) if ids)
    raise EditConflict(f"profile {base.profile!r} changed while the editor was open "
                       f"({what or 'a fact was written and changed back'}); nothing was applied")


def _apply_step(store: PersonaStore, conn: Connection, step: Step, done: Applied, force: bool,
                journal: Journal | None = None) -> int:
    """Apply one step; the id of its fact afterwards (a replace's and an add's is new)."""
    old, now = step.old, step.now
    if old is not None and now is None:
        if step.kind == "forget":
            done.erased.append(erase_fact(store, conn, old.id, journal=journal))
        else:
            store.bury(conn, old, "removed in persona edit")
            done.demoted.append(old.id)
        return old.id
    assert now is not None
    if old is None:
        if (there := store.existing(conn, now.topic, now.content, now.scope)) is not None:
            return there.id  # typed again in another case or spacing: already there, not a second fact
        fact = store.insert_row(conn, tier=now.tier, topic=now.topic, content=now.content, confidence=now.confidence,
                                source=content_key(*now.text), reason=now.reason, force=force,
                                writer=EDIT_WRITER, scope=now.scope)
        done.added.append(fact.id)
    elif step.kind == "replace":
        fact = supersede.replace(store, old.id, now.content, topic=now.topic, tier=now.tier, reason=now.reason,
                                 force=force, writer=EDIT_WRITER, scope=now.scope).new
        done.replaced.append((old.id, fact.id))
    else:
        fact = old
        done.updated.append(old.id)
    # A replacement starts its count again, as `persona replace` does, unless the file changed the count.
    count = fact.reinforcement_count if step.kind == "replace" and "reinforcement_count" not in step.changed \
        else now.reinforcement_count
    _set_attributes(store, conn, fact, now, count)
    return fact.id


def _set_attributes(store: PersonaStore, conn: Connection, fact: Fact, now: Wanted, count: int) -> None:
    """Give the fact the tier, confidence, reason and count the file says (no statement when it has them)."""
    wanted = (now.tier, now.confidence, now.reason, count)
    if wanted == (fact.tier, fact.confidence, fact.promotion_reason or None, fact.reinforcement_count):
        return
    origins.set_attributes(conn, store.profile, fact.id, (now.tier, now.confidence, now.reason), count)


def _apply_keys(store: PersonaStore, conn: Connection, final: dict[Step, int]) -> None:
    """The slots as the file names them: a key left or moved (to another fact or scope) is emptied first, then
    each key goes to its fact, in the fact's scope."""
    def slot(wanted: Wanted | None) -> tuple[str | None, str | None]:
        return (None, None) if wanted is None else (wanted.key, wanted.scope)

    moved = [step for step in final if step.now is not None and slot(step.was) != slot(step.now)]
    for step in moved:
        if step.was is not None and step.was.key is not None:
            supersede.drop_key(conn, store.profile, step.was.key, step.was.scope)
    for step in moved:
        if step.now is not None and step.now.key is not None:
            supersede.set_key(conn, store.profile, step.now.key, final[step], step.now.scope)
