"""What an import takes in: one fact as a source states it (:class:`FactEntry`), where in the source it stands,
and what a source's parser read (:class:`Parsed`).

Every importer (:mod:`.formats`) turns its source into the same entries a facts
file holds, each with its place in the source, so one engine (:mod:`.importing`)
applies them all alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..defaults import DEFAULT_CONFIDENCE
from ..errors import FactsFileError, InputError
from ..store import MAX_TOPIC_CHARS, check_text, content_key, scope_in_file
from ..tiers import Tier

MAX_WRITER_CHARS = 4096  # a writer names a file: the longest path a system allows
MAX_IMPORT_BYTES = 32 * 1024 * 1024  # a few hundred thousand facts; past it a file is no memory export


class FactEntry(BaseModel):
    """One fact in a facts file."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1, max_length=MAX_TOPIC_CHARS)
    content: str = Field(min_length=1)
    tier: Tier = "long_term"
    confidence: float = Field(DEFAULT_CONFIDENCE, ge=0.0, le=1.0)
    reason: str | None = None
    id: int | None = Field(None, ge=1, lt=2**63, description="The fact's id in this profile (from an export).")
    key: str | None = Field(None, min_length=1, max_length=MAX_TOPIC_CHARS,
                            description="A slot such as package_manager: a newer fact in it supersedes the older.")
    reinforcement_count: int | None = Field(None, ge=0, lt=2**63)
    writer: str | None = Field(None, min_length=1, max_length=MAX_WRITER_CHARS,
                               description="Who wrote the fact (from an export); default: this import.")
    scope: str | None = Field(None, description="global (the default), {project: PATH-or-URL} or {host: NAME}.")

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, value: object) -> str | None:
        try:
            return scope_in_file(value)
        except InputError as error:  # as a ValueError, so it is reported with the entry's index and line
            raise ValueError(str(error)) from None

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
        """Stable identity of the fact: its topic, text and scope (shared with ``persona add``)."""
        return content_key(self.topic, self.content, self.scope)


@dataclass(frozen=True, slots=True)
class Offered:
    """One fact a source offers, and where it stands there (``line 12``, ``fact #3``), for every message."""

    where: str
    fact: FactEntry
    dated: str | None = None  # when the source says the entry was made (UTC, the store's format): mem0's created_at


@dataclass(frozen=True, slots=True)
class Refusal:
    """An entry that is not taken in, where it stands, and why (a bad entry, too long, demoted, forgotten)."""

    where: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "why": self.why}


@dataclass
class Parsed:
    """What a parser read from one source: the facts it offers, the entries it could not read, and notes (entries
    offered for review only: Hermes' ``MEMORY.md``, the agent's notes about its environment)."""

    facts: list[Offered] = field(default_factory=list)
    bad: list[Refusal] = field(default_factory=list)
    notes: list[Offered] = field(default_factory=list)

    def take(self, found: Offered | Refusal, *, note: bool = False) -> None:
        """Add what :func:`offer` gave: a fact (or, with ``note``, a note), or a bad entry."""
        if isinstance(found, Refusal):
            self.bad.append(found)
        else:
            (self.notes if note else self.facts).append(found)

    def check_count(self, name: str, cap: int | None, *, count: int | None = None) -> None:
        """Refuse source ``name`` when it holds more facts than an import takes (``cap``: store.max_import_facts;
        None, no cap), before anything is written: its entries read so far, or the ``count`` a parser found before
        it built any."""
        found = len(self.facts) + len(self.bad) if count is None else count
        if cap is not None and found > cap:
            raise FactsFileError(f"{name} holds {found:,} facts; an import takes at most {cap:,} "
                                 "(store.max_import_facts): nothing was imported; split the source, or raise the "
                                 "setting")


def offer(where: str, fields: dict[str, Any], dated: str | None = None) -> Offered | Refusal:
    """An entry's fields (and the source's date of it) as :class:`Offered`, or the :class:`Refusal` saying what is
    wrong with them (an empty text, a NUL byte, a topic too long, a confidence past 1)."""
    try:
        return Offered(where, FactEntry.model_validate(fields), dated)
    except ValidationError as error:
        return Refusal(where, entry_problems(error))


def entry_problems(error: ValidationError) -> str:
    """A :class:`FactEntry`'s validation error in one line: each field and what is wrong with it."""
    parts = []
    for item in error.errors():
        if not item["loc"]:
            parts.append("expected a mapping with topic and content")
            continue
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{'.'.join(str(p) for p in item['loc'])}: {message[:1].lower()}{message[1:]}")
    return ", ".join(parts)
