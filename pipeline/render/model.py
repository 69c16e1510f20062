"""The values that flow between pipeline stages.

Each stage takes one of these and returns the next; all are immutable, so a
stage can never change what an earlier stage produced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from ..config.targets import ResolvedTarget
from .section_cap import Capped

if TYPE_CHECKING:
    from .region_layout import RegionLayout


@dataclass(frozen=True, slots=True)
class Start:
    """What the first stage receives: nothing yet."""


class PersonaFact(NamedTuple):
    """A fact as the pipeline sees it: a persona row, or a proposed candidate memory.

    A named tuple rather than a dataclass: extract builds one per row, and at
    100k rows tuple construction is several times cheaper.
    """

    key: str  # "p:<zero-padded id>" for persona rows, "m:<memory id>" for candidates; sorts persona first
    tier: str
    topic: str
    content: str
    confidence: float
    reinforcement_count: int
    age_days: float  # since the last reinforcement, at extract time
    origin: Literal["persona", "candidate", "tombstone", "superseded"]
    scope: str | None = None  # None: global; project:ID or host:NAME (pipeline/scopes.py)
    slot: str | None = None  # the key it holds in its scope (package_manager), read only for a scoped profile


def fact_label(key: str) -> str:
    """How a fact's key is shown: ``#12`` for a persona row, ``memory ID`` for a candidate, ``tombstone N``."""
    kind, _, rest = key.partition(":")
    if kind in ("p", "s"):  # a persona row, current or superseded
        return f"#{int(rest)}"
    return {"m": f"memory {rest}", "t": f"tombstone {rest}"}.get(kind, key)


@dataclass(frozen=True, slots=True)
class LeftOut:
    """A fact that is not in the persona, why, and its score where it had one (for `persona explain`)."""

    fact: PersonaFact
    fate: str  # "duplicate of #12", "over max_items_per_section", "demoted (tombstone)" ...
    score: float | None = None


@dataclass(frozen=True, slots=True)
class FactSet:
    """extract's output: the profile's facts and the database state they were read at."""

    facts: tuple[PersonaFact, ...]
    generation: int  # store changes so far; a render never overwrites one from a later generation
    memory_watermark: int  # highest working_memory rowid seen
    left_out: tuple[LeftOut, ...] = ()  # only when explaining: tombstones, candidates below the threshold
    scoped: bool = False  # some fact is a project's or a host's: targets must each filter what they show
    out_of_scope: int = 0  # facts the target's scopes filtered out (counted in a render's "left out")
    # host -> the keys of the facts learned from its own memory: left out of that host's targets (it loads them)
    learned: Mapping[str, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RankedFact:
    fact: PersonaFact
    score: float


@dataclass(frozen=True, slots=True)
class RankedSection:
    topic: str
    facts: tuple[RankedFact, ...]
    omitted: int  # facts beyond max_items_per_section


@dataclass(frozen=True, slots=True)
class RankedPersona:
    """rank's output: sections in rank order, each with its facts in rank order."""

    sections: tuple[RankedSection, ...]
    facts_extracted: int
    duplicates_collapsed: int
    generation: int
    memory_watermark: int
    left_out: tuple[LeftOut, ...] = ()  # only when explaining: extract's, then duplicates and over the maximum
    out_of_scope: int = 0  # the profile's facts this target's scopes do not show


@dataclass(frozen=True, slots=True)
class Rendered:
    """render's output: the full text for one target, before the cap."""

    text: str
    ranked: RankedPersona
    target: ResolvedTarget  # a region's: its section boundary at the user's heading level
    layout: RegionLayout | None = None  # a region's: its file's headings, which the render reads well beside


@dataclass(frozen=True, slots=True)
class CappedRender:
    """cap's output: the text that will be written and injected, and what was left out to fit."""

    capped: Capped
    rendered: Rendered
    kept_sections: tuple[RankedSection, ...] | None = None  # what the text holds; None: every ranked section
    fitted_out: frozenset[str] = frozenset()  # keys of facts the budget left out

    @property
    def text(self) -> str:
        return self.capped.text

    @property
    def kept(self) -> tuple[RankedSection, ...]:
        """The sections and facts the text holds, in rank order."""
        return self.rendered.ranked.sections if self.kept_sections is None else self.kept_sections


@dataclass(frozen=True, slots=True)
class TargetReport:
    """write's output, and what `persona render` reports per target."""

    target: str
    path: Path
    facts_extracted: int
    sections_kept: int
    sections_dropped: int
    tokens: int
    budget: int
    dropped_topics: tuple[str, ...]  # sections left out entirely
    fitted_out: int  # facts the budget left out of sections that stayed
    changed: bool  # the file's content differs (or would differ) from the render
    written: bool
    stale: bool  # a newer generation was already on disk, so this render was not written
    sha256: str
    text: str
    previous: str | None  # the file's content before the run, for --diff
    explanation: Any = None  # an Explanation, when the run was asked to explain
    facts_written: int = 0  # the facts the text holds (`persona explain`'s "kept")
    facts_left_out: int = 0  # the profile's other facts: out of scope, duplicates, over the maximum, fitted out
    tokens_exact: bool = True  # False: tokens is an upper bound (the text fit by its UTF-8 length, uncounted)

    @property
    def tokens_shown(self) -> str:
        """The tokens as a person reads them: ``≤N`` when only their upper bound was needed."""
        return str(self.tokens) if self.tokens_exact else f"≤{self.tokens}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "path": str(self.path),
            "facts_extracted": self.facts_extracted,
            "facts_written": self.facts_written,
            "facts_left_out": self.facts_left_out,
            "sections_kept": self.sections_kept,
            "sections_dropped": self.sections_dropped,
            "dropped_topics": list(self.dropped_topics),
            "fitted_out": self.fitted_out,
            "tokens": self.tokens,
            "tokens_exact": self.tokens_exact,
            "budget": self.budget,
            "changed": self.changed,
            "written": self.written,
            "stale": self.stale,
            "sha256": self.sha256,
        }
