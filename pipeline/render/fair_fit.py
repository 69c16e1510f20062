"""The fair fit: choose which facts to render so the target fits its budget, weakest facts out first.

The section cap drops whole sections, so with a few large topics whole topics
vanish while others keep every fact. The fit instead drops the weakest facts
across all sections first, and keeps every topic whose best fact fits:

1. every section's best fact, in section order (a topic is never lost while
   its best fact fits);
2. then every other fact, strongest first (equal scores shared round the
   sections).

Facts are taken greedily in that order; one that does not fit is skipped and
smaller ones after it still get their chance. Sizes are exact: the result is
rendered through the target's own template and counted, note included.

A render per fact would be far too slow, so the choice is made on a model
first: from the full render and one of each section's best fact alone, every
section's fixed cost and every fact's cost are known to within a token or
two. The model's choice is then rendered and counted exactly, corrected if
the model was off, and the facts next in line are tried exactly, so the
guarantees above hold in exact tokens. A template whose sections the model
cannot see falls back to a binary search over exact renders.

The choice depends only on the full render, the facts the template sees
(key, text, tier, confidence, reinforcements, per topic), their priority order,
the budget, the counter and the caller's ``memo_key`` (the template, the
target and its note), so with a ``memo`` it is made once: a render whose selection
and budget are unchanged reuses the last fit's choice, its text and its count
(an unchanged 1,000-fact render spent a third of its time fitting again).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .model import RankedSection
from .section_cap import split_sections, with_note
from .tokens import TokenCounter

MAX_CORRECTIONS = 4  # exact renders spent correcting the model's choice
MAX_TAIL_CHECKS = 48  # exact checks of facts next in line once the budget is nearly full

Item = tuple[int, int]  # (section index, position in the section)
Render = Callable[[tuple[RankedSection, ...]], str]


class FitMemo(Protocol):
    """Where fits are kept between renders (:class:`pipeline.render.prepared.PreparedFacts`)."""

    def reused(self, key: Hashable) -> Any: ...

    def record(self, key: Hashable, value: Any) -> None: ...


@dataclass(frozen=True, slots=True)
class Fit:
    """What the fit kept, the text it renders to (note included when anything was left out), and its size."""

    sections: tuple[RankedSection, ...]
    text: str
    tokens: int
    left_out: frozenset[str]  # keys of facts fitted out
    dropped_topics: tuple[str, ...]  # sections none of whose facts fit
    exact: bool = True  # tokens is the exact count; False: the full render's upper bound (nothing counted)


def fair_fit(sections: Sequence[RankedSection], full_text: str, *, budget: int, counter: TokenCounter,
             render: Render, note: Callable[[], str], boundary: str,
             text_tokens: Callable[[Sequence[str]], list[int]] | None = None,
             memo: FitMemo | None = None, memo_key: Hashable = (),
             count_texts: Callable[[Sequence[str]], list[int]] | None = None,
             bound_of: Callable[[str], tuple[int, bool]] | None = None) -> Fit | None:
    """The fit, or None when not even one fact fits (the caller's cap then keeps what lines it can).

    ``text_tokens`` counts facts' texts exactly (default: ``counter.count_many``; a memo of it may stand in), and
    ``count_texts`` the full render and the sections the model learns from (a memo by text may stand in).
    With ``memo``, the same inputs give the kept choice without a render; ``memo_key`` must name everything
    else ``render``, ``note`` and ``counter`` depend on (the template's source, the target, its note).
    ``bound_of`` bounds the full render more tightly than ``counter.bound`` (counts kept of its parts), and says
    whether its bound is the exact count.
    """
    sections = tuple(sections)
    bound, exact = bound_of(full_text) if bound_of is not None else (counter.bound(full_text), False)
    if bound <= budget:  # far inside the budget: nothing to fit, and nothing to count
        return Fit(sections, full_text, bound, frozenset(), (), exact=exact)
    count_texts = count_texts or counter.count_many
    tokens = bound if exact else count_texts([full_text])[0]
    if tokens <= budget:
        return Fit(sections, full_text, tokens, frozenset(), ())
    priority = _priority(sections)
    key = _memo_key(sections, full_text, priority, budget, counter, boundary, memo_key) if memo else None
    kept = memo.reused(key) if memo is not None else None
    if kept is None:
        kept = _choose(sections, full_text, priority, budget, counter, render, note, boundary, text_tokens,
                       count_texts)
        if memo is not None:
            memo.record(key, kept)
    return _fit(sections, *kept)


def _memo_key(sections: tuple[RankedSection, ...], full_text: str, priority: list[Item], budget: int,
              counter: TokenCounter, boundary: str, memo_key: Hashable) -> Hashable:
    """Everything the choice depends on (the full render's count, which decides whether to fit, follows from the
    full render); a fact's score only through the priority order it gives."""
    shown = tuple((s.topic, s.omitted, tuple((r.fact.key, r.fact.content, r.fact.tier, r.fact.confidence,
                                              r.fact.reinforcement_count) for r in s.facts)) for s in sections)
    return (memo_key, counter.name, budget, boundary, full_text, shown, tuple(priority))


Chosen = tuple[tuple[Item, ...], str, int]  # (the facts kept, none when not one fits; the text; its tokens)


def _choose(sections: tuple[RankedSection, ...], full_text: str, priority: list[Item], budget: int,
            counter: TokenCounter, render: Render, note: Callable[[], str], boundary: str,
            text_tokens: Callable[[Sequence[str]], list[int]] | None,
            count_texts: Callable[[Sequence[str]], list[int]]) -> Chosen:
    search = _Search(sections, budget, counter, render, note(), text_tokens or counter.count_many, count_texts)
    model = _Model.calibrate(search, full_text, boundary)
    chosen = model.choose(priority) if model is not None else search.longest_prefix(priority)
    chosen = search.fill(priority, chosen)
    if not chosen:
        return (), "", 0
    return tuple(chosen), *search.measure(chosen)


def _fit(sections: tuple[RankedSection, ...], chosen: tuple[Item, ...], text: str, size: int) -> Fit | None:
    """The fit of ``chosen`` of ``sections``, rendered to ``text`` of ``size`` tokens."""
    if not chosen:
        return None
    kept = sections_for(sections, chosen)
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
    """Exact size checks of candidate selections, and the exact greedy steps that use them."""

    def __init__(self, sections: tuple[RankedSection, ...], budget: int, counter: TokenCounter, render: Render,
                 note: str, text_tokens: Callable[[Sequence[str]], list[int]],
                 count_texts: Callable[[Sequence[str]], list[int]]) -> None:
        self.sections, self.budget, self.counter, self.render, self.note = sections, budget, counter, render, note
        counts = iter(text_tokens([r.fact.content for s in sections for r in s.facts]))
        self.text_tokens = [[next(counts) for _ in s.facts] for s in sections]
        self._sizes: dict[frozenset[Item], tuple[str, int]] = {}
        self.count_texts = count_texts  # whole texts: the sections the model learns from

    def measure(self, chosen: Sequence[Item]) -> tuple[str, int]:
        """The rendered text of a selection, note included, and its exact token count (memoised)."""
        key = frozenset(chosen)
        if key not in self._sizes:
            text = with_note(self.render(self.sections_for(chosen)), self.note)
            self._sizes[key] = (text, self.counter.count(text))
        return self._sizes[key]

    def fits(self, chosen: Sequence[Item]) -> bool:
        return self.measure(chosen)[1] <= self.budget

    def longest_prefix(self, priority: list[Item]) -> list[Item]:
        """The longest prefix of ``priority`` that fits, by binary search (sizes grow with every fact)."""
        low, high = 0, len(priority)
        while low < high:
            middle = (low + high + 1) // 2
            if self.fits(priority[:middle]):
                low = middle
            else:
                high = middle - 1
        return priority[:low]

    def fill(self, priority: list[Item], chosen: list[Item]) -> list[Item]:
        """Make ``chosen`` fit exactly, then try the facts next in line, skipping those that do not fit."""
        while chosen and not self.fits(chosen):
            chosen = chosen[:-1]  # the model overshot: drop the weakest choice
        picked = set(chosen)
        used = self.measure(chosen)[1] if chosen else 0
        checks = 0
        for item in priority:
            if item in picked:
                continue
            if checks >= MAX_TAIL_CHECKS or used >= self.budget:
                break
            if self.text_tokens[item[0]][item[1]] - 2 > self.budget - used:
                continue  # its own text alone is more than what is left
            checks += 1
            trial = [*chosen, item]
            size = self.measure(trial)[1]
            if size <= self.budget:
                chosen, used = trial, size
                picked.add(item)
        return chosen

    def sections_for(self, chosen: Sequence[Item]) -> tuple[RankedSection, ...]:
        return sections_for(self.sections, chosen)


def sections_for(sections: tuple[RankedSection, ...], chosen: Sequence[Item]) -> tuple[RankedSection, ...]:
    """The chosen facts, in the original section order and rank order within each section."""
    by_section: dict[int, list[int]] = {}
    for index, position in chosen:
        by_section.setdefault(index, []).append(position)
    return tuple(replace(section, facts=tuple(section.facts[p] for p in sorted(by_section[index])))
                 for index, section in enumerate(sections) if index in by_section)


@dataclass
class _Model:
    """Token costs learnt from two renders: each section's fixed cost and each fact's cost within it."""

    search: _Search
    base: list[float]  # a section's cost without any fact
    per_fact: list[float]  # what each fact adds on top of its own text
    fixed: float  # preamble and note

    @classmethod
    def calibrate(cls, search: _Search, full_text: str, boundary: str) -> _Model | None:
        sections, counter = search.sections, search.counter
        full = split_sections(full_text, boundary)
        firsts_text = search.render(tuple(replace(s, facts=s.facts[:1]) for s in sections))
        firsts = split_sections(firsts_text, boundary)
        if not (len(full.sections) == len(firsts.sections) == len(sections)):
            return None  # the template's sections do not line up with ours: use exact renders only
        counts = search.count_texts([*full.sections, *firsts.sections])
        whole, first = counts[: len(sections)], counts[len(sections):]
        base, per_fact = [], []
        for index, tokens in enumerate(search.text_tokens):
            extra = len(tokens) - 1
            per = (whole[index] - first[index] - sum(tokens[1:])) / extra if extra else 1.0
            per_fact.append(per)
            base.append(first[index] - tokens[0] - per)
        fixed = counter.count(full.preamble) + counter.count(search.note) + 1
        return cls(search, base, per_fact, fixed)

    def choose(self, priority: list[Item]) -> list[Item]:
        """Greedy on the model; then, if the exact size says the model was off, again with a corrected budget."""
        limit = float(self.search.budget)
        best: list[Item] = []
        for _ in range(MAX_CORRECTIONS):
            chosen = self._greedy(priority, limit)
            size = self.search.measure(chosen)[1] if chosen else 0
            if size <= self.search.budget:
                best = max(best, chosen, key=len)
                if self.search.budget - size < 2:
                    break
            if size == limit:
                break
            limit += self.search.budget - size
        return best

    def _greedy(self, priority: list[Item], limit: float) -> list[Item]:
        used, opened, chosen = self.fixed, set(), []
        for index, position in priority:
            cost = self.search.text_tokens[index][position] + self.per_fact[index]
            if index not in opened:
                cost += self.base[index]
            if used + cost <= limit:
                chosen.append((index, position))
                used += cost
                opened.add(index)
        return chosen
