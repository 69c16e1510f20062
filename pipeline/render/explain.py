"""`persona explain`: where every fact of a session went in a render, and why.

Each fact has one fate: ``kept``, ``duplicate of #id``, ``over
max_items_per_section``, ``fitted out (budget)``, ``section dropped``,
``already in your own text`` (a region's file holds it outside our region),
``demoted (tombstone)`` or ``candidate below min_importance``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from .model import CappedRender, PersonaFact, fact_label
from .sanitize import inline
from .section_cap import split_sections
from .tokens import TokenCounter

KEPT = "kept"
FITTED_OUT = "fitted out (budget)"
SECTION_DROPPED = "section dropped"
ALREADY_YOURS = "already in your own text"  # a region's fact the user's own lines in its file hold (users_text)
SUPERSEDED, DEMOTED = "superseded by", "demoted (tombstone)"  # its history: every target leaves it out alike
FATE_ORDER = (KEPT, FITTED_OUT, SECTION_DROPPED, "over max_items_per_section", "duplicate of", ALREADY_YOURS,
              "out of scope", "candidate below min_importance", SUPERSEDED, DEMOTED)


@dataclass(frozen=True, slots=True)
class FactFate:
    id: str
    topic: str
    tier: str
    score: float | None
    tokens: int  # the fact's own text, counted with the target's counter
    fate: str
    content: str
    writer: str | None = None  # who wrote it, for a persona row (store/births.py)


@dataclass(frozen=True, slots=True)
class Explanation:
    target: str
    budget: int
    tokens: int
    sections: tuple[tuple[str, int], ...]  # (topic, tokens used) for each section in the render
    facts: tuple[FactFate, ...]  # kept first, then grouped by fate

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "budget": self.budget, "tokens": self.tokens,
                "sections": [{"topic": topic, "tokens": tokens} for topic, tokens in self.sections],
                "facts": [asdict(fact) for fact in self.facts]}


def explain(capped: CappedRender, counter: TokenCounter, writers: Mapping[int, str] | None = None) -> Explanation:
    """Every fact's fate in this render, with the tokens each kept section used, and who wrote each fact."""
    ranked, target = capped.rendered.ranked, capped.rendered.target
    kept_topics = {section.topic for section in capped.kept}
    kept_keys = {r.fact.key for section in capped.kept for r in section.facts}
    entries: list[tuple[PersonaFact, float | None, str]] = []
    for section in ranked.sections:
        for ranked_fact in section.facts:
            key = ranked_fact.fact.key
            fate = KEPT if key in kept_keys else FITTED_OUT if section.topic in kept_topics else SECTION_DROPPED
            entries.append((ranked_fact.fact, ranked_fact.score, fate))
    entries += [(left.fact, left.score, left.fate) for left in ranked.left_out]
    tokens = counter.count_many([inline(fact.content) for fact, _, _ in entries])
    facts = [FactFate(fact_label(fact.key), fact.topic, fact.tier, None if score is None else round(score, 3),
                      count, fate, fact.content, _writer(fact.key, writers or {}))
             for (fact, score, fate), count in zip(entries, tokens, strict=True)]
    facts.sort(key=lambda fact: _fate_rank(fact.fate))  # stable: rank order within each fate
    chunks = split_sections(capped.text, target.boundary).sections
    sections = tuple((section.topic, count) for section, count in
                     zip(capped.kept, counter.count_many(list(chunks)), strict=False))
    total = capped.capped.tokens if capped.capped.exact else counter.count(capped.text)  # explain counts exactly
    return Explanation(target.name, capped.capped.budget, total, sections, tuple(facts))


def _writer(key: str, writers: Mapping[int, str]) -> str | None:
    kind, _, rest = key.partition(":")
    return writers.get(int(rest)) if kind in ("p", "s") else None


def _fate_rank(fate: str) -> int:
    return next((index for index, prefix in enumerate(FATE_ORDER) if fate.startswith(prefix)), len(FATE_ORDER))
