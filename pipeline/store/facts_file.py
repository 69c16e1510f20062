"""Declarative facts files: ``persona import FILE.yaml [--prune]``.

A facts file is a YAML list of facts (or a mapping with a ``facts:`` list)::

    facts:
      - topic: style
        content: Answers tersely.
        tier: permanent      # optional, default long_term
        confidence: 0.9      # optional, default 0.7

Each fact is identified by its topic and text, so importing the same file
twice changes nothing, and a changed tier or confidence updates the row.

``persona export`` writes the same format with each fact's ``id`` (and its ``key``,
``reinforcement_count``, ``confidence``, ``tier``, ``topic``): a fact with an id is matched by the
id, not by its text, so an edited text under the same id updates that fact, and nothing earned by
reinforcement is lost. An id the profile does not hold (another profile's, another database's)
is a new fact. A ``key`` names a slot (``package_manager``): a newer fact with the same key
supersedes the profile's older one (:mod:`.supersede`). A fact the import adds may update one of
the profile's other facts (one the file does not list): the report names it as a proposal
(:mod:`.proposals`), and nothing is superseded but by a key.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.error import YAMLError

from ..config.files import parse_yaml_file, read_yaml_text
from ..errors import ConfigError, FactsFileError, ForgottenError, InputError
from ..tiers import Tier
from . import supersede
from .fact_row import FACT_COLUMNS, Fact, Proposal, content_key
from .facts import TOMBSTONE_MARK, PersonaStore
from .forgotten import ForgottenTest, admit, forgotten_test
from .proposals import propose_after_import
from .validation import MAX_TOPIC_CHARS, check_text

__all__ = ["FactEntry", "ImportReport", "import_facts", "read_facts_file"]
MAX_WRITER_CHARS = 4096  # a writer names a file: the longest path a system allows


class FactEntry(BaseModel):
    """One fact in a facts file."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=MAX_TOPIC_CHARS)
    content: str = Field(min_length=1)
    tier: Tier = "long_term"
    confidence: float = Field(0.7, ge=0.0, le=1.0)
    reason: str | None = None
    id: int | None = Field(None, ge=1, lt=2**63, description="The fact's id in this profile (from an export).")
    key: str | None = Field(None, min_length=1, max_length=MAX_TOPIC_CHARS,
                            description="A slot such as package_manager: a newer fact in it supersedes the older.")
    reinforcement_count: int | None = Field(None, ge=0, lt=2**63)
    writer: str | None = Field(None, min_length=1, max_length=MAX_WRITER_CHARS,
                               description="Who wrote the fact (from an export); default: this import.")

    @field_validator("topic", "content", "key", "writer")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return check_text("text", value)
        except InputError as error:  # as a ValueError, so it is reported with the entry's index and line
            raise ValueError(str(error).removeprefix("text ")) from None

    @property
    def identity(self) -> str:
        """Stable identity of the fact: its topic and text (shared with ``persona add``)."""
        return content_key(self.topic, self.content)


@dataclass
class ImportReport:
    """What an import did, by persona id."""

    file: str
    added: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)
    pruned: list[int] = field(default_factory=list)
    skipped_demoted: list[str] = field(default_factory=list)
    superseded: list[int] = field(default_factory=list)  # facts a newer one with the same key replaced
    keyed: list[dict[str, Any]] = field(default_factory=list)  # each of those: {"old", "new", "key"}
    proposals: list[Proposal] = field(default_factory=list)  # facts an added one may update

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.pruned)

    def to_dict(self) -> dict[str, Any]:
        return {**{k: getattr(self, k) for k in ("file", "added", "updated", "unchanged", "pruned", "skipped_demoted",
                                               "superseded", "keyed")},
                "proposals": [proposal.to_dict() for proposal in self.proposals]}


def read_facts_file(path: Path) -> list[FactEntry]:
    """Parse and validate a facts file; every bad entry is reported, by index and line.

    The fast C loader reads the file; only when something is wrong is it
    parsed again with the round-trip loader, which knows each entry's line.
    """
    try:
        document = YAML(typ="safe").load(read_yaml_text(path))
    except ConfigError as error:  # unreadable, not UTF-8, or past the nesting and alias limits
        raise FactsFileError("; ".join(error.problems)) from None
    except YAMLError:
        document = _parse_with_lines(path)  # raises the precise error, with file:line
    entries, problems = _validate(path, _items(path, document), lines=None)
    if problems:
        _, problems = _validate(path, _items(path, _parse_with_lines(path)), lines=True)
        raise FactsFileError("; ".join(problems))
    return entries


def _parse_with_lines(path: Path) -> Any:
    try:
        return parse_yaml_file(path)
    except ConfigError as error:
        raise FactsFileError("; ".join(error.problems)) from None


def _items(path: Path, document: Any) -> list[Any]:
    if document is None:
        return []
    items = document.get("facts") if isinstance(document, dict) else document
    if not isinstance(items, list):
        raise FactsFileError(f"{path}: expected a list of facts, or a mapping with a 'facts' list")
    return items


def _validate(path: Path, items: list[Any], *, lines: bool | None) -> tuple[list[FactEntry], list[str]]:
    entries, problems = [], []
    for index, item in enumerate(items):
        try:
            entries.append(FactEntry.model_validate(dict(item) if isinstance(item, dict) else item))
        except ValidationError as error:
            where = _line(items, index) if lines else ""
            problems.append(f"{path}: fact #{index + 1}{where}: {_first_problems(error)}")
    return entries, problems + _duplicates(path, entries)


def _line(items: Any, index: int) -> str:
    if isinstance(items, CommentedSeq) and items.lc.data and index < len(items.lc.data):
        return f" (line {items.lc.item(index)[0] + 1})"
    return ""


def _first_problems(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        if not item["loc"]:
            parts.append("expected a mapping with topic and content")
            continue
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{'.'.join(str(p) for p in item['loc'])}: {message[:1].lower()}{message[1:]}")
    return ", ".join(parts)


def _duplicates(path: Path, entries: list[FactEntry]) -> list[str]:
    problems = []
    identities: tuple[tuple[str, Callable[[FactEntry], Hashable]], ...] = (
        ("", lambda e: None if e.id is not None else e.identity),
        ("the id of ", lambda e: e.id), ("the key of ", lambda e: e.key))
    for what, identity in identities:
        seen: dict[Any, int] = {}
        for index, entry in enumerate(entries):
            value = identity(entry)
            if value is not None and value in seen:
                problems.append(f"{path}: fact #{index + 1} repeats {what}fact #{seen[value] + 1}")
            seen.setdefault(value, index)
    return problems


def import_facts(store: PersonaStore, path: Path, *, prune: bool = False, force: bool = False) -> ImportReport:
    """Bring the store in line with a facts file, in one transaction."""
    entries = read_facts_file(path)
    too_long = [f"{path}: fact #{i + 1}: content is {len(e.content)} characters; the limit is {store.max_fact_chars}"
                for i, e in enumerate(entries) if len(e.content) > store.max_fact_chars]
    if too_long:
        raise FactsFileError("; ".join(too_long))
    origin = str(Path(path).expanduser().absolute())
    report = ImportReport(file=origin)
    with store.transaction() as conn:  # every decision below reads inside the transaction that writes it
        known = Known.load(store, conn)
        kept = [_apply_entry(path, index, store, conn, known, entry, origin, report, force)
                for index, entry in enumerate(entries)]
        listed = {fact_id for fact_id in kept if fact_id is not None}
        if prune:
            _prune(store, conn, origin, listed, report)
        report.proposals = propose_after_import(store, conn, report.added, listed)
    return report


def _apply_entry(path: Path, index: int, store: PersonaStore, conn: Any, known: Known, entry: FactEntry, origin: str,
                 report: ImportReport, force: bool) -> int | None:
    """:func:`_apply`; a forgotten fact it would take in again fails the whole import, naming the entry."""
    try:
        return _apply(store, conn, known, entry, origin, report, force)
    except ForgottenError as error:
        raise FactsFileError(f"{path}: fact #{index + 1}: {error}; nothing was imported") from None


@dataclass
class Known:
    """The profile's facts and tombstones, read once per import: a look-up per fact cost a round trip each
    (on a server, 10k profiles x 50 facts took minutes)."""

    by_id: dict[int, Any]
    by_key: dict[str, Any]
    by_text: dict[tuple[str, str], Any]
    tombstoned: set[str]
    superseded: set[str]
    forgotten: ForgottenTest

    @classmethod
    def load(cls, store: PersonaStore, conn: Any) -> Known:
        rows = conn.execute(
            "SELECT p.id, p.tier, p.confidence, p.promotion_reason, p.source_memory_id, p.topic, p.content, "
            "p.reinforcement_count, o.persona_id AS origin_id, o.file_tier, o.file_confidence, o.file_reason "
            "FROM memoria_persona p LEFT JOIN persona_origins o ON o.persona_id = p.id WHERE p.session_id = ? "
            "ORDER BY p.id DESC", (store.profile,)).fetchall()
        # Newest first, so the oldest row wins each key, as the single-fact look-up chooses.
        by_key = {row["source_memory_id"]: row for row in rows if row["source_memory_id"] is not None}
        by_text = {(row["topic"], row["content"]): row for row in rows}
        tombstoned = {row[0] for row in conn.execute(
            "SELECT source_memory_id FROM memoria_preferences WHERE session_id = ? AND evolution = ?",
            (store.profile, TOMBSTONE_MARK))}
        return cls({int(row["id"]): row for row in rows}, by_key, by_text, tombstoned,
                   supersede.superseded_keys(conn, store.profile), forgotten_test(store, conn))

    def find(self, entry: FactEntry) -> Any:
        found = [row for row in (self.by_key.get(entry.identity), self.by_text.get((entry.topic, entry.content)))
                 if row is not None]
        return min(found, key=lambda row: row["id"]) if found else None


def _apply(store: PersonaStore, conn: Any, known: Known, entry: FactEntry, origin: str, report: ImportReport,
           force: bool) -> int | None:
    """Bring one entry in; the id of its fact (None: skipped)."""
    fact_id: int | None
    if entry.id is not None and entry.id in known.by_id:
        fact_id = _apply_by_id(store, conn, known, known.by_id[entry.id], entry, report, force)
    else:
        fact_id = _apply_by_text(store, conn, known, entry, origin, report, force)
    if fact_id is not None and entry.key is not None:
        _claim_key(store, conn, entry.key, fact_id, report)
    if fact_id is not None and entry.id is not None:
        _record_origin(conn, fact_id, origin, (entry.tier, entry.confidence, entry.reason))
    return fact_id


def _apply_by_id(store: PersonaStore, conn: Any, known: Known, row: Any, entry: FactEntry, report: ImportReport,
                 force: bool) -> int:
    """An exported fact: the file says what the row is, text included (an edit in an editor is an update)."""
    count: int = row["reinforcement_count"] if entry.reinforcement_count is None else entry.reinforcement_count
    declared = (entry.topic, entry.content, entry.tier, entry.confidence, entry.reason, count)
    if declared == (row["topic"], row["content"], row["tier"], row["confidence"], row["promotion_reason"],
                    row["reinforcement_count"]):
        report.unchanged.append(row["id"])
        return int(row["id"])
    source = row["source_memory_id"]
    if source is None or str(source).startswith("import:"):  # a text identity follows the text; a memory id stays
        source = entry.identity
    if entry.content != row["content"]:
        admit(store, conn, entry.content, None, force=force, test=known.forgotten)
    conn.execute("UPDATE memoria_persona SET topic = ?, content = ?, tier = ?, confidence = ?, promotion_reason = ?, "
                 "reinforcement_count = ?, source_memory_id = ? WHERE id = ? AND session_id = ?",
                 (*declared, source, row["id"], store.profile))
    report.updated.append(row["id"])
    return int(row["id"])


def _apply_by_text(store: PersonaStore, conn: Any, known: Known, entry: FactEntry, origin: str,
                   report: ImportReport, force: bool) -> int | None:
    row = known.find(entry)
    declared = (entry.tier, entry.confidence, entry.reason)
    if row is None:
        if not force and entry.identity in known.tombstoned:
            report.skipped_demoted.append(entry.identity)
            return None
        if entry.key is None and entry.id is None and entry.identity in known.superseded:
            return None  # a superseded fact is not brought back by the file it came from
        fact_id = store.insert_row(conn, tier=entry.tier, topic=entry.topic, content=entry.content,
                                   confidence=entry.confidence, source=entry.identity, reason=entry.reason,
                                   force=force, forgotten=known.forgotten,
                                   writer=entry.writer or f"import:facts:{origin}").id
        if entry.reinforcement_count:
            conn.execute("UPDATE memoria_persona SET reinforcement_count = ? WHERE id = ?",
                         (entry.reinforcement_count, fact_id))
        _record_origin(conn, fact_id, origin, declared)
        report.added.append(fact_id)
        return fact_id
    # Compare with what the file said last time, not with the row: reinforcement and retention move a
    # row on, and importing an unchanged file must not take that back.
    if row["origin_id"] is not None and row["file_tier"] is not None:
        last = (row["file_tier"], row["file_confidence"], row["file_reason"])
    else:
        last = (row["tier"], row["confidence"], row["promotion_reason"])
    if declared == last:
        report.unchanged.append(row["id"])
        return int(row["id"])
    conn.execute("UPDATE memoria_persona SET tier = ?, confidence = ?, promotion_reason = ? WHERE id = ?",
                 (*declared, row["id"]))
    if row["origin_id"] is not None:
        conn.execute("UPDATE persona_origins SET file_tier = ?, file_confidence = ?, file_reason = ? "
                     "WHERE persona_id = ?", (*declared, row["id"]))
    report.updated.append(row["id"])
    return int(row["id"])


def _claim_key(store: PersonaStore, conn: Any, key: str, fact_id: int, report: ImportReport) -> None:
    """The fact takes the slot; the slot's older fact, if another, is superseded by it."""
    owner = supersede.key_owner(conn, store.profile, key)
    if owner is not None and owner != fact_id:
        old = conn.execute(f"SELECT {FACT_COLUMNS} FROM memoria_persona WHERE id = ? AND session_id = ?",
                           (owner, store.profile)).fetchone()
        if old is not None:
            new = store.get(fact_id)
            supersede.supersede(store, conn, Fact(**dict(old)), new, f"key {key}")
            report.superseded.append(owner)
            report.keyed.append({"old": owner, "new": fact_id, "key": key})
    supersede.set_key(conn, store.profile, key, fact_id)


def _record_origin(conn: Any, fact_id: int, origin: str, declared: tuple[str, float, str | None]) -> None:
    conn.execute("INSERT INTO persona_origins (persona_id, origin, file_tier, file_confidence, file_reason) "
                 "VALUES (?, ?, ?, ?, ?) ON CONFLICT (persona_id) DO UPDATE SET origin = excluded.origin, "
                 "file_tier = excluded.file_tier, file_confidence = excluded.file_confidence, "
                 "file_reason = excluded.file_reason", (fact_id, origin, *declared))


def _prune(store: PersonaStore, conn: Any, origin: str, keep: set[int], report: ImportReport) -> None:
    rows = conn.execute(
        "SELECT p.id FROM memoria_persona p JOIN persona_origins o ON o.persona_id = p.id "
        "WHERE o.origin = ? AND p.session_id = ? ORDER BY p.id",
        (origin, store.profile),
    ).fetchall()
    for row in rows:
        if row["id"] not in keep:
            store.bury(conn, store.get(row["id"]), f"pruned: no longer in {origin}")
            report.pruned.append(row["id"])


def export_facts(store: PersonaStore) -> str:
    """The profile's current facts as a facts file with ids, keys and reinforcement counts (see the module)."""
    with store.snapshot() as conn:
        keys = supersede.keys_of(conn, store.profile)
        facts = store.list()
    entries = [export_entry(fact, keys.get(fact.id)) for fact in facts]
    out = io.StringIO()
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.allow_unicode = True
    yaml.sort_base_mapping_type_on_output = False  # type: ignore[assignment]
    yaml.dump({"facts": entries}, out)
    return (f"# persona export of profile {store.profile!r}: edit, then `persona import` this file.\n"
            "# Facts are matched by id: an edited text under the same id updates that fact.\n" + out.getvalue())


def export_entry(fact: Fact, key: str | None) -> dict[str, Any]:
    """One fact as an export writes it (``persona edit`` writes the same, its writer as a comment)."""
    return {"id": fact.id, **({"key": key} if key is not None else {}), "topic": fact.topic,
            "content": fact.content, "tier": fact.tier, "confidence": fact.confidence,
            "reinforcement_count": fact.reinforcement_count,
            **({"reason": fact.promotion_reason} if fact.promotion_reason else {}),
            **({"writer": fact.writer} if fact.writer else {})}
