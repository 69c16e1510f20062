"""The fair fit: choose which facts to render so the target fits its budget, weakest facts out first.

The section cap drops whole sections, so with a few large topics whole topics
vanish while others keep every fact. The fit instead drops the weakest facts
across all sections first, and keeps every topic whose best fact fits:

1. every section's best fact, in section order (a topic is never lost while
   its best fact fits);
2. then every other fact, strongest first.

Facts are taken greedily in that order; one that does not fit is skipped and
smaller ones after it still get their chance. Sizes are exact: each check
renders the target's own template and counts its tokens, note included. The
longest prefix that fits is found by binary search, so a fit costs a few
dozen renders, never one per fact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from .cap import with_note
from .model import RankedFact, RankedSection
from .tokens import TokenCounter

MAX_TAIL_CHECKS = 48  # exact checks for facts that might still squeeze in once the budget is nearly full

Item = tuple[int, int]  # (section index, position in the section)
Render = Callable[[tuple[RankedSection, ...]], str]


@dataclass(frozen=True, slots=True)
class Fit:
    """What the fit kept, the text it renders to (note included when anything was left out), and its size."""

    sections: tuple[RankedSection, ...]
    text: str
    tokens: int
    left_out: frozenset[str]  # keys of facts fitted out
    dropped_topics: tuple[str, ...]  # sections none of whose facts fit


def fair_fit(sections: Sequence[RankedSection], full_text: str, *, budget: int, counter: TokenCounter,
             render: Render, note: Callable[[], str]) -> Fit | None:
    """The fit, or None when not even one fact fits (the caller's cap then keeps what lines it can)."""
    tokens = counter.count(full_text)
    if tokens <= budget:
        return Fit(tuple(sections), full_text, tokens, frozenset(), ())
    search = _Search(tuple(sections), budget, counter, render, note())
    chosen = search.run(_priority(sections))
    if not chosen:
        return None
    kept = search.sections_for(chosen)
    text, size = search.measure(chosen)
    all_keys = {r.fact.key for s in sections for r in s.facts}
    kept_keys = {r.fact.key for s in kept for r in s.facts}
    kept_topics = {s.topic for s in kept}
    return Fit(kept, text, size, frozenset(all_keys - kept_keys),
               tuple(s.topic for s in sections if s.topic not in kept_topics))


def _priority(sections: Sequence[RankedSection]) -> list[Item]:
    """Each section's best fact in section order, then the rest, strongest first.

    Equal scores go round the sections (every topic's second fact before any
    third), so ties are shared fairly; within a section rank order holds.
    """
    firsts = [(index, 0) for index, section in enumerate(sections) if section.facts]
    rest = [(index, position) for index, section in enumerate(sections) for position in range(1, len(section.facts))]
    rest.sort(key=lambda item: (-sections[item[0]].facts[item[1]].score, item[1], item[0]))
    return firsts + rest


class _Search:
    """Exact size checks of candidate selections, and the greedy choice that uses them."""

    def __init__(self, sections: tuple[RankedSection, ...], budget: int, counter: TokenCounter, render: Render,
                 note: str) -> None:
        self.sections, self.budget, self.counter, self.render, self.note = sections, budget, counter, render, note
        texts = [r.fact.content for s in sections for r in s.facts]
        counts = iter(counter.count_many(texts))
        self.text_tokens = [[next(counts) for _ in s.facts] for s in sections]

    def run(self, priority: list[Item]) -> list[Item]:
        chosen: list[Item] = []
        used = 0
        start = self._longest_prefix(chosen, priority)
        chosen += priority[:start]
        if chosen:
            used = self.measure(chosen)[1]
        checks = 0
        for item in priority[start + 1:]:
            if checks >= MAX_TAIL_CHECKS or self.budget - used <= 0:
                break
            if self._lower_bound(item, chosen) > self.budget - used:
                continue  # cannot fit, whatever the template adds
            checks += 1
            size = self.measure([*chosen, item])[1]
            if size <= self.budget:
                chosen.append(item)
                used = size
        return chosen

    def _longest_prefix(self, chosen: list[Item], priority: list[Item]) -> int:
        """The largest n such that the first n items fit (sizes grow with every fact added)."""
        low, high = 0, len(priority)
        while low < high:
            middle = (low + high + 1) // 2
            if self.measure([*chosen, *priority[:middle]])[1] <= self.budget:
                low = middle
            else:
                high = middle - 1
        return low

    def _lower_bound(self, item: Item, chosen: list[Item]) -> int:
        # A fact's own tokens, less a little for merges across its line's edges.
        return max(0, self.text_tokens[item[0]][item[1]] - 2)

    def sections_for(self, chosen: list[Item]) -> tuple[RankedSection, ...]:
        """The chosen facts, in the original section order and rank order within each section."""
        picked = set(chosen)
        kept = []
        for index, section in enumerate(self.sections):
            facts: tuple[RankedFact, ...] = tuple(r for position, r in enumerate(section.facts)
                                                  if (index, position) in picked)
            if facts:
                kept.append(replace(section, facts=facts))
        return tuple(kept)

    def measure(self, chosen: list[Item]) -> tuple[str, int]:
        """The rendered text of a selection, note included, and its exact token count."""
        text = with_note(self.render(self.sections_for(chosen)), self.note)
        return text, self.counter.count(text)
