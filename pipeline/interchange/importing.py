"""One import engine for every source: facts files, persona.md, Hermes' memory, instruction files, lists, mem0.

A source's parser (:mod:`.formats`) offers entries, each with its place in the
source (:class:`~.fact_entry.Offered`). Against the profile's facts, read once
(:class:`Known`), each entry is decided before anything is written: add it,
update the fact it matches, leave that fact unchanged, leave it out (a fact
that was superseded is not brought back by the source it came from), refuse
it (a bad entry, a text over ``store.max_fact_chars``, a demoted fact), or
skip it (a forgotten fact, named by its place and never its text: it never
comes back, and the rest is imported). A dry run stops there, on a read-only
store. Otherwise one refusal stops the whole import with nothing written, unless ``skip_bad``; then
the decisions are applied in one transaction, and the facts added may update
others (proposals, :mod:`pipeline.store.proposals`).

Each fact is identified by its topic and text, so importing the same source
twice changes nothing. A declarative source (a facts file) says what each fact
is: a changed tier or confidence updates the row, an entry with an ``id``
(``persona export``) is matched by the id, so an edited text updates that fact,
and a ``key`` names a slot whose newer fact supersedes the older
(:mod:`pipeline.store.supersede`). Any other source only adds what the store lacks: a fact
with the same text under any topic is already there, and a text the user
demoted under any topic stays demoted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import FactsFileError
from ..store import (
    FORGOTTEN,
    ForgottenTest,
    NewRow,
    PersonaStore,
    Proposal,
    admit,
    ask_forgotten,
    ask_secret,
    forgotten_test,
    insert_rows,
    origins,
    propose_after_import,
    rescope,
    supersede,
)
from ..text import normal_form
from .fact_entry import FactEntry, Offered, Parsed, Refusal

__all__ = ["ImportReport", "Known", "import_entries"]
ADD, UPDATE, UNCHANGED, LEFT_OUT, REFUSED = "add", "update", "unchanged", "left out", "refused"
SKIPPED_FORGOTTEN = "forgotten"  # a forgotten fact a source still holds: skipped, never taken in again
DEMOTED = "that fact was demoted; pass --force to take it in again"
DEMOTED_FROM = re.compile(r"^\[demoted from [a-z_]+\] ")  # a tombstone's text: tombstone_text(tier, content)


@dataclass
class ImportReport:
    """What an import did (or, in a dry run, would do), by persona id, and each entry's outcome."""

    file: str
    added: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    pruned: list[int] = field(default_factory=list)
    skipped_demoted: list[str] = field(default_factory=list)
    skipped_forgotten: list[str] = field(default_factory=list)  # where each forgotten entry was (never its text)
    superseded: list[int] = field(default_factory=list)  # facts a newer one with the same key replaced
    keyed: list[dict[str, Any]] = field(default_factory=list)  # each of those: {"old", "new", "key"}
    proposals: list[Proposal] = field(default_factory=list)  # facts an added one may update
    format: str = "facts"
    dry_run: bool = False
    refused: list[Refusal] = field(default_factory=list)  # not taken in, and why (with skip_bad or a dry run)
    entries: list[dict[str, Any]] = field(default_factory=list)  # every offered entry and its outcome
    notes: list[dict[str, Any]] = field(default_factory=list)  # offered for review only, not imported

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.pruned)

    def to_dict(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in ("file", "format", "dry_run", "added", "updated", "unchanged",
                                               "pruned", "skipped_demoted", "skipped_forgotten", "superseded",
                                               "keyed")},
                "refused": [refusal.to_dict() for refusal in self.refused], "entries": self.entries,
                "notes": self.notes, "proposals": [proposal.to_dict() for proposal in self.proposals]}


@dataclass
class Known:
    """The profile's facts and tombstones, read once per import: a look-up per fact cost a round trip each
    (on a server, 10k profiles x 50 facts took minutes)."""

    by_id: dict[int, Any]
    by_key: dict[str, Any]
    by_text: dict[tuple[str, str, str | None], Any]  # by topic, text (both in normal form) and scope
    by_folded: dict[tuple[str, str | None], Any]  # by the text in normal form, and scope: any topic
    tombstoned: set[str]
    demoted: set[str]  # the demoted texts in normal form, whatever their topic
    superseded: set[str]
    forgotten: ForgottenTest

    @classmethod
    def load(cls, store: PersonaStore, conn: Any) -> Known:
        # Every read asked at once: in a batched transaction (a server's), one round trip for all. The key the
        # facts' index and the forgotten test hash with comes along.
        profile = store.profile
        asked = (origins.ask_import_rows(conn, profile), origins.ask_tombstones(conn, profile),
                 supersede.ask_superseded_keys(conn, profile), ask_forgotten(store, conn), ask_secret(store, conn))
        asked[4]()
        rows = origins.import_rows(conn, profile, asked[0])
        # Newest first, so the oldest row wins each key, as the single-fact look-up chooses. The same text in a
        # project or for one host is another fact than the global one (pipeline.scopes): each look-up has the scope.
        by_key = {row["source_memory_id"]: row for row in rows if row["source_memory_id"] is not None}
        texts = [row for row in rows if isinstance(row["content"], str) and isinstance(row["topic"], str)]
        by_text = {(normal_form(row["topic"]), normal_form(row["content"]), row["scope"]): row for row in texts}
        by_folded = {(normal_form(row["content"]), row["scope"]): row for row in texts}
        tombstones = origins.tombstones(conn, profile, asked[1])
        tombstoned = {row[0] for row in tombstones}
        demoted = {normal_form(DEMOTED_FROM.sub("", row[1], count=1)) for row in tombstones if isinstance(row[1], str)}
        return cls({int(row["id"]): row for row in rows}, by_key, by_text, by_folded, tombstoned, demoted,
                   supersede.superseded_keys(conn, profile, asked[2]), forgotten_test(store, conn, asked[3]))

    def was_demoted(self, entry: FactEntry, *, any_topic: bool = False) -> bool:
        """Whether the user demoted the fact ``entry`` states: by its topic and text, or (``any_topic``) its text."""
        return entry.identity in self.tombstoned or (any_topic and normal_form(entry.content) in self.demoted)

    def find(self, entry: FactEntry, *, any_topic: bool = False) -> Any:
        """The fact ``entry`` states: by its topic and text, or (``any_topic``) by its text alone."""
        text = (normal_form(entry.topic), normal_form(entry.content), entry.scope)
        found = [row for row in (self.by_key.get(entry.identity), self.by_text.get(text)) if row is not None]
        if not found and any_topic:
            return self.by_folded.get((text[1], entry.scope))
        return min(found, key=lambda row: row["id"]) if found else None


@dataclass(frozen=True, slots=True)
class Decision:
    """What an import does with one entry, decided before anything is written."""

    offered: Offered
    outcome: str
    row: Any = None  # the fact it matched (update, unchanged)
    by_id: bool = False  # matched by the id an export gave it
    why: str | None = None  # refused: why

    @property
    def entry(self) -> FactEntry:
        return self.offered.fact


def import_entries(store: PersonaStore, parsed: Parsed, *, origin: str, fmt: str = "facts",
                   writer: str | None = None, prune: bool = False, force: bool = False, skip_bad: bool = False,
                   dry_run: bool = False, declarative: bool = True) -> ImportReport:
    """Bring the store in line with what a source offers, in one transaction (see the module).

    ``origin`` names the source (an absolute path, or ``<stdin>``): facts it added are pruned by it. Each added
    fact is stamped ``writer`` (default ``import:FMT:ORIGIN``). A ``dry_run`` only decides, on a store that may be
    read-only, and reports what it would do. A ``declarative`` source (a facts file) says what each fact is, so a
    changed tier or confidence updates it; any other source only adds what the store lacks: a fact already there
    (the same text, case and spacing aside, under any topic) stays as the user has it.
    """
    report = ImportReport(file=origin, format=fmt, dry_run=dry_run)
    too_long = {id(item): Refusal(item.where, f"content is {len(item.fact.content)} characters; the limit is "
                                  f"{store.max_fact_chars} (store.max_fact_chars)")
                for item in parsed.facts if len(item.fact.content) > store.max_fact_chars}
    with store.snapshot() if dry_run else store.transaction(batched=True) as conn:  # decided where it writes
        known = Known.load(store, conn)
        # A note the store already holds, or one forgotten or demoted, is not offered again (nor shown).
        report.notes = [{"where": note.where, "content": note.fact.content} for note in parsed.notes
                        if decide(known, note, force, declarative=False).outcome == ADD]
        decisions = [decide(known, item, force, declarative) for item in parsed.facts if id(item) not in too_long]
        report.refused = [*parsed.bad, *too_long.values(),
                          *(Refusal(d.offered.where, d.why or "") for d in decisions if d.outcome == REFUSED)]
        report.skipped_forgotten = [d.offered.where for d in decisions if d.outcome == SKIPPED_FORGOTTEN]
        if report.refused and not (skip_bad or dry_run):
            raise FactsFileError("; ".join(f"{origin}: {r.where}: {r.why}" for r in report.refused)
                                 + "; nothing was imported (--skip-bad imports the rest)")
        if dry_run:
            report.entries = [_described(d, None) for d in decisions]
            return report
        stamp = writer or f"import:{fmt}:{origin}"
        kept = _apply_all(store, conn, known, decisions, origin, stamp, report, force)
        report.entries = [_described(d, fact_id) for d, fact_id in zip(decisions, kept, strict=True)]
        listed = {fact_id for fact_id in kept if fact_id is not None}
        if prune:
            _prune(store, conn, origin, listed, report)
        # A facts file says each fact it lists is current; any other source tells its facts in the order they
        # came (mem0's dates, a file's lines, Hermes' entries), so a later one may update an earlier one (#50).
        dated = {fact_id: d.offered.dated for d, fact_id in zip(decisions, kept, strict=True)
                 if fact_id is not None and d.offered.dated}
        report.proposals = propose_after_import(store, conn, report.added, listed if declarative else set(),
                                                dated)
    return report


def decide(known: Known, offered: Offered, force: bool, declarative: bool = True) -> Decision:
    """What to do with one entry, from the profile's facts as the import found them."""
    entry = offered.fact
    if entry.id is not None and entry.id in known.by_id:
        row = known.by_id[entry.id]
        if (*_declared_by_id(entry, row), entry.scope) == (*_stored(row), row["scope"]):
            return Decision(offered, UNCHANGED, row, by_id=True)
        if entry.content != row["content"] and not force and known.forgotten(entry.content, None):
            return Decision(offered, SKIPPED_FORGOTTEN, row, by_id=True, why=FORGOTTEN)  # the fact stays as it is
        return Decision(offered, UPDATE, row, by_id=True)
    row = known.find(entry, any_topic=not declarative)  # the same text from another tool is the same fact
    if row is not None:
        return Decision(offered, UNCHANGED if not declarative or _declared(entry) == _last(row) else UPDATE, row)
    if not force and known.was_demoted(entry, any_topic=not declarative):
        return Decision(offered, REFUSED, why=DEMOTED)
    if entry.key is None and entry.id is None and entry.identity in known.superseded:
        return Decision(offered, LEFT_OUT)  # a superseded fact is not brought back by the source it came from
    if not force and known.forgotten(entry.content, entry.identity):
        # Skipped, not refused: re-importing a file after forgetting one of its lines imports the rest.
        return Decision(offered, SKIPPED_FORGOTTEN, why=FORGOTTEN)
    return Decision(offered, ADD)


def _declared(entry: FactEntry) -> tuple[str, float, str | None]:
    return entry.tier, entry.confidence, entry.reason


def _declared_by_id(entry: FactEntry, row: Any) -> tuple[Any, ...]:
    count = row["reinforcement_count"] if entry.reinforcement_count is None else entry.reinforcement_count
    return entry.topic, entry.content, entry.tier, entry.confidence, entry.reason, count


def _stored(row: Any) -> tuple[Any, ...]:
    return (row["topic"], row["content"], row["tier"], row["confidence"], row["promotion_reason"],
            row["reinforcement_count"])


def _last(row: Any) -> tuple[Any, ...]:
    """What the source said last time, not the row: reinforcement and retention move a row on, and importing an
    unchanged source must not take that back."""
    if row["origin_id"] is not None and row["file_tier"] is not None:
        return row["file_tier"], row["file_confidence"], row["file_reason"]
    return row["tier"], row["confidence"], row["promotion_reason"]


def _described(decision: Decision, fact_id: int | None) -> dict[str, Any]:
    """One entry's outcome for the report; a forgotten text is not repeated."""
    entry = decision.entry
    described = {"where": decision.offered.where, "outcome": decision.outcome, "topic": entry.topic,
                 "tier": entry.tier, "content": None if decision.why == FORGOTTEN else entry.content,
                 "id": fact_id if fact_id is not None else (decision.row["id"] if decision.row else None)}
    return described | ({"why": decision.why} if decision.why else {})


def _apply_all(store: PersonaStore, conn: Any, known: Known, decisions: list[Decision], origin: str, writer: str,
               report: ImportReport, force: bool) -> list[int | None]:
    """Carry out the decisions in order; the facts they add are inserted first, in a few statements for all
    (:func:`~pipeline.store.insert_rows`, which checks their texts as one insert does): no decision reads what a
    later one adds, so the ids, the rows and the report are those of one insert after another."""
    rows = [_new_row(d.entry, origin, writer) for d in decisions if d.outcome == ADD]
    added = iter(insert_rows(store, conn, rows, force=force, forgotten=known.forgotten))
    return [_apply(store, conn, known, d, origin, writer, report, force, added) for d in decisions]


def _new_row(entry: FactEntry, origin: str, writer: str) -> NewRow:
    return NewRow(tier=entry.tier, topic=entry.topic, content=entry.content, confidence=entry.confidence,
                  source=entry.identity, reason=entry.reason, writer=entry.writer or writer, scope=entry.scope,
                  origin=(origin, _declared(entry)))


def _apply(store: PersonaStore, conn: Any, known: Known, decision: Decision, origin: str, writer: str,
           report: ImportReport, force: bool, added: Iterator[int]) -> int | None:
    """Carry out one decision (an added fact's row is the next of ``added``); the id of its fact (None: not taken
    in)."""
    entry = decision.entry
    if decision.outcome == REFUSED:
        if decision.why == DEMOTED:
            report.skipped_demoted.append(entry.identity)
        return None
    if decision.outcome == LEFT_OUT:
        return None
    if decision.outcome == SKIPPED_FORGOTTEN:  # an exported fact keeps its row (and is not pruned)
        return int(decision.row["id"]) if decision.row is not None else None
    if decision.outcome == ADD:
        fact_id = next(added)
        if entry.reinforcement_count:
            origins.set_count(conn, fact_id, entry.reinforcement_count)
        report.added.append(fact_id)
    elif decision.outcome == UPDATE:
        fact_id = (_update_by_id if decision.by_id else _update_by_text)(store, conn, known, decision.row, entry,
                                                                         force)
        report.updated.append(fact_id)
    else:
        fact_id = int(decision.row["id"])
        report.unchanged.append(fact_id)
    if entry.key is not None:
        _claim_key(store, conn, entry.key, entry.scope, fact_id, report)
    if entry.id is not None:
        origins.record(conn, fact_id, origin, _declared(entry))
    return fact_id


def _update_by_id(store: PersonaStore, conn: Any, known: Known, row: Any, entry: FactEntry, force: bool) -> int:
    """An exported fact: the source says what the row is, text included (an edit in an editor is an update)."""
    source = row["source_memory_id"]
    if source is None or str(source).startswith("import:"):  # a text identity follows the text; a memory id stays
        source = entry.identity
    if entry.content != row["content"]:
        admit(store, conn, entry.content, None, force=force, test=known.forgotten)
    origins.rewrite(conn, store.profile, int(row["id"]), (*_declared_by_id(entry, row), source))
    if entry.scope != row["scope"]:  # moved to another scope: its slot, if any, was the old scope's
        rescope(conn, store.profile, int(row["id"]), entry.scope)
        supersede.drop_keys_of(conn, store.profile, int(row["id"]))
    return int(row["id"])


def _update_by_text(store: PersonaStore, conn: Any, known: Known, row: Any, entry: FactEntry, force: bool) -> int:
    origins.redeclare(conn, row["id"], _declared(entry), has_origin=row["origin_id"] is not None)
    return int(row["id"])


def _claim_key(store: PersonaStore, conn: Any, key: str, scope: str | None, fact_id: int,
               report: ImportReport) -> None:
    """The fact takes the slot of its scope; the slot's older fact, if another, is superseded by it."""
    owner = supersede.key_owner(conn, store.profile, key, scope)
    if owner is not None and owner != fact_id:
        old = origins.bare_fact(conn, store.profile, owner)
        if old is not None:
            new = store.get(fact_id)
            supersede.supersede(store, conn, old, new, f"key {key}")
            report.superseded.append(owner)
            report.keyed.append({"old": owner, "new": fact_id, "key": key})
    supersede.set_key(conn, store.profile, key, fact_id, scope)


def _prune(store: PersonaStore, conn: Any, origin: str, keep: set[int], report: ImportReport) -> None:
    for fact_id in origins.from_origin(conn, store.profile, origin):
        if fact_id not in keep:
            store.bury(conn, store.get(fact_id), f"pruned: no longer in {origin}")
            report.pruned.append(fact_id)
