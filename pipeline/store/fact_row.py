"""A ``memoria_persona`` row as the store hands it out, and the identities every writer shares."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import InputError
from ..fs import bounded_json
from ..scopes import spelled
from ..text import normal_form

MAX_ID = 2**63 - 1  # SQLite's INTEGER, PostgreSQL's bigint
FACT_COLUMNS = (
    "id, session_id, tier, topic, content, confidence, source_memory_id, created_at, "
    "last_reinforced_at, reinforcement_count, promotion_reason"
)
ROW_FIELDS = tuple(column.strip() for column in FACT_COLUMNS.split(","))  # a Fact's fields that are the row's
# The same columns of memoria_persona as ``p``, with the fact's birth (``b``) joined for who wrote it.
FACT_WITH_WRITER = ", ".join(f"p.{column.strip()}" for column in FACT_COLUMNS.split(",")) + \
    ", b.generation AS born, b.writer AS written_by, b.scope AS scope"


@dataclass(frozen=True, slots=True)
class Fact:
    """One row of ``memoria_persona``."""

    id: int
    session_id: str
    tier: str
    topic: str
    content: str
    confidence: float
    source_memory_id: str | None
    created_at: str
    last_reinforced_at: str
    reinforcement_count: int
    promotion_reason: str | None
    writer: str | None = None  # who wrote it (births.writer_of); None where it was not looked up
    scope: str | None = None  # None: global; project:ID or host:NAME (pipeline/scopes.py)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "scope": spelled(self.scope)}


@dataclass(frozen=True, slots=True)
class Proposal:
    """A fact a write may update or merge with, kept for review: ``new`` may replace ``old`` (both of one profile
    and topic; for a merge, ``new`` is the fuller of the two, whichever was written first)."""

    id: int
    old: Fact
    new: Fact
    rule: str  # the detector's rule that proposed it (supersede_rules); "flag" for a pair flag mode made
    proposed_at: str
    kind: str = "update"  # update: new replaces old; merge: both say the same, new is the fuller one, kept

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "rule": self.rule, "proposed_at": self.proposed_at,
                "old": _brief(self.old), "new": _brief(self.new)}


def _brief(fact: Fact) -> dict[str, Any]:
    return {"id": fact.id, "tier": fact.tier, "topic": fact.topic, "content": fact.content}


@dataclass(frozen=True, slots=True)
class Promotion:
    """The outcome of promote or add: the row, whether it is new, and the facts it may update."""

    fact: Fact
    created: bool
    proposals: tuple[Proposal, ...] = ()  # supersede.detect: propose; the writer decides
    related: tuple[Fact, ...] = ()  # the topic and scope's other facts, up to supersede.related: the neighbourhood

    @property
    def flagged(self) -> tuple[int, ...]:
        """Deprecated: the ids of the facts it may update (``proposals`` has them, with their text)."""
        return tuple(proposal.old.id for proposal in self.proposals)

    @property
    def superseded(self) -> tuple[int, ...]:
        """Deprecated: always empty, since detection never supersedes by itself."""
        return ()


def content_key(topic: str, content: str, scope: str | None = None) -> str:
    """A fact's identity by its topic, text and scope, kept in ``source_memory_id`` for facts that came from no
    memory.

    ``add`` and ``import`` share it, so the same fact is one row however it
    arrived, and a demoted one stays demoted on either path; the same text in
    two projects is two facts. Topic and text count in their normal form
    (:func:`pipeline.text.normal_form`): "Uses uv." under ``Tools`` and "uses
    uv" under ``tools`` are one fact. (The ``import:`` prefix is historical.)
    """
    return legacy_content_key(normal_form(topic), normal_form(content), scope)


def legacy_content_key(topic: str, content: str, scope: str | None = None) -> str:
    """The key of the exact text, as every key was before normal forms: what a migration re-keys (store/rekey)."""
    scoped = f"\x00{scope}" if scope else ""
    return "import:" + hashlib.sha256(f"{topic}\x00{content}{scoped}".encode()).hexdigest()[:16]


def check_id(persona_id: object) -> int:
    """A persona id SQLite can hold, or InputError (for anything else: None, a bool, a string...)."""
    if not isinstance(persona_id, int) or isinstance(persona_id, bool) or not 1 <= persona_id <= MAX_ID:
        raise InputError(f"invalid persona id {persona_id!r}: expected a whole number from 1 to {MAX_ID}")
    return persona_id


def metadata_topic(metadata_json: str | None) -> str | None:
    """The topic a memory's metadata names (another tool's column: any shape), or None."""
    if not metadata_json:
        return None
    try:
        metadata = bounded_json.loads(metadata_json)  # another tool's column: any depth it likes
    except (ValueError, TypeError):
        return None
    topic = metadata.get("topic") if isinstance(metadata, dict) else None
    return topic.strip() if isinstance(topic, str) and topic.strip() else None
