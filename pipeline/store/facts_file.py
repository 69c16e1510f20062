"""Declarative facts files: ``persona import FILE.yaml [--prune]``.

A facts file is a YAML list of facts (or a mapping with a ``facts:`` list)::

    facts:
      - topic: style
        content: Answers tersely.
        tier: permanent      # optional, default long_term
        confidence: 0.9      # optional, default 0.7

Each fact is identified by its topic and text, so importing the same file
twice changes nothing, and a changed tier or confidence updates the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedSeq
from ruamel.yaml.error import YAMLError

from ..config.files import parse_yaml_file, read_yaml_text
from ..errors import ConfigError, FactsFileError, InputError
from ..tiers import Tier
from .facts import TOMBSTONE_MARK, PersonaStore, content_key
from .validation import MAX_TOPIC_CHARS, check_text

__all__ = ["FactEntry", "ImportReport", "import_facts", "read_facts_file"]


class FactEntry(BaseModel):
    """One fact in a facts file."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=MAX_TOPIC_CHARS)
    content: str = Field(min_length=1)
    tier: Tier = "long_term"
    confidence: float = Field(0.7, ge=0.0, le=1.0)
    reason: str | None = None

    @field_validator("topic", "content")
    @classmethod
    def _clean(cls, value: str) -> str:
        try:
            return check_text("text", value)
        except InputError as error:  # as a ValueError, so it is reported with the entry's index and line
            raise ValueError(str(error).removeprefix("text ")) from None

    @property
    def key(self) -> str:
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

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.pruned)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("file", "added", "updated", "unchanged", "pruned", "skipped_demoted")}


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
    seen: dict[str, int] = {}
    problems = []
    for index, entry in enumerate(entries):
        if entry.key in seen:
            problems.append(f"{path}: fact #{index + 1} repeats fact #{seen[entry.key] + 1}")
        seen.setdefault(entry.key, index)
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
    with store.transaction() as conn:
        known = Known.load(store, conn)
        for entry in entries:
            _apply(store, conn, known, entry, origin, report, force)
        if prune:
            _prune(store, conn, origin, {entry.key for entry in entries}, report)
        if report.added or report.updated:
            store.touch(conn)  # one store change for the whole import
    return report


@dataclass
class Known:
    """The profile's facts and tombstones, read once per import: a look-up per fact cost a round trip each
    (on a server, 10k profiles x 50 facts took minutes)."""

    by_key: dict[str, Any]
    by_text: dict[tuple[str, str], Any]
    tombstoned: set[str]

    @classmethod
    def load(cls, store: PersonaStore, conn: Any) -> Known:
        rows = conn.execute(
            "SELECT p.id, p.tier, p.confidence, p.promotion_reason, p.source_memory_id, p.topic, p.content, "
            "o.persona_id AS origin_id, o.file_tier, o.file_confidence, o.file_reason FROM memoria_persona p "
            "LEFT JOIN persona_origins o ON o.persona_id = p.id WHERE p.session_id = ? ORDER BY p.id DESC",
            (store.profile,)).fetchall()
        # Newest first, so the oldest row wins each key, as the single-fact look-up chooses.
        by_key = {row["source_memory_id"]: row for row in rows if row["source_memory_id"] is not None}
        by_text = {(row["topic"], row["content"]): row for row in rows}
        tombstoned = {row[0] for row in conn.execute(
            "SELECT source_memory_id FROM memoria_preferences WHERE session_id = ? AND evolution = ?",
            (store.profile, TOMBSTONE_MARK))}
        return cls(by_key, by_text, tombstoned)

    def find(self, entry: FactEntry) -> Any:
        found = [row for row in (self.by_key.get(entry.key), self.by_text.get((entry.topic, entry.content)))
                 if row is not None]
        return min(found, key=lambda row: row["id"]) if found else None


def _apply(store: PersonaStore, conn: Any, known: Known, entry: FactEntry, origin: str, report: ImportReport,
           force: bool) -> None:
    row = known.find(entry)
    declared = (entry.tier, entry.confidence, entry.reason)
    if row is None:
        if not force and entry.key in known.tombstoned:
            report.skipped_demoted.append(entry.key)
            return
        fact_id = store.insert_row(conn, tier=entry.tier, topic=entry.topic, content=entry.content,
                                   confidence=entry.confidence, source=entry.key, reason=entry.reason,
                                   touch=False).id
        _record_origin(conn, fact_id, origin, declared)
        report.added.append(fact_id)
        return
    # Compare with what the file said last time, not with the row: reinforcement and retention move a
    # row on, and importing an unchanged file must not take that back.
    if row["origin_id"] is not None and row["file_tier"] is not None:
        last = (row["file_tier"], row["file_confidence"], row["file_reason"])
    else:
        last = (row["tier"], row["confidence"], row["promotion_reason"])
    if declared == last:
        report.unchanged.append(row["id"])
        return
    conn.execute("UPDATE memoria_persona SET tier = ?, confidence = ?, promotion_reason = ? WHERE id = ?",
                 (*declared, row["id"]))
    if row["origin_id"] is not None:
        conn.execute("UPDATE persona_origins SET file_tier = ?, file_confidence = ?, file_reason = ? "
                     "WHERE persona_id = ?", (*declared, row["id"]))
    report.updated.append(row["id"])


def _record_origin(conn: Any, fact_id: int, origin: str, declared: tuple[str, float, str | None]) -> None:
    conn.execute("INSERT INTO persona_origins (persona_id, origin, file_tier, file_confidence, file_reason) "
                 "VALUES (?, ?, ?, ?, ?) ON CONFLICT (persona_id) DO UPDATE SET origin = excluded.origin, "
                 "file_tier = excluded.file_tier, file_confidence = excluded.file_confidence, "
                 "file_reason = excluded.file_reason", (fact_id, origin, *declared))


def _prune(store: PersonaStore, conn: Any, origin: str, keep: set[str], report: ImportReport) -> None:
    rows = conn.execute(
        "SELECT p.id, p.source_memory_id FROM memoria_persona p JOIN persona_origins o ON o.persona_id = p.id "
        "WHERE o.origin = ? AND p.session_id = ? ORDER BY p.id",
        (origin, store.profile),
    ).fetchall()
    for row in rows:
        if row["source_memory_id"] not in keep:
            store.bury(conn, store.get(row["id"]), f"pruned: no longer in {origin}")
            report.pruned.append(row["id"])
