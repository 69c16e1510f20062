"""What a render derives from one fact's text alone, kept between renders of the same profile in this process.

A fact's dedupe key, its inert line, its exact token count under each
counter and what a template sees of it depend on its text (and, for the
last, its tier, confidence and reinforcements) and nothing else, so a render looks each one up
by the text itself (and the full render and the fair fit look their last result up by everything
that decides it: :mod:`pipeline.stages.render`, :mod:`pipeline.render.fair_fit`): a fact that
changed (in this process, in another, or through another tool writing Mnemosyne's table) has new
text and is simply
not found, and a stale entry cannot exist. What is kept is what the
profile's newest render used, and nothing more: a fact gone from the store
(forgotten, replaced, demoted) leaves this memo at the profile's next
render, or at once when it is forgotten here (:func:`drop`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import caches
from ..text import fact_form
from .sanitize import inline
from .template_context import TemplateItem
from .tokens import ExactCounter, HeuristicCounter, TokenCounter

MAX_PROFILES = 64  # profiles whose newest render is kept (a gateway's busiest users)
MAX_FACTS = 5_000  # a render that used more (a huge store, `persona explain`) keeps nothing

Scope = tuple[str, str]  # (database label, profile)


@dataclass(slots=True)
class Prepared:
    dedupe: str  # rank's near-duplicate key: the text's fact form (pipeline.text.fact_form)
    line: str  # the fact as one inert line, as every template sees it
    tokens: dict[str, int] = field(default_factory=dict)  # counter name -> exact count of the text
    items: dict[tuple[str, float, int], TemplateItem] = field(default_factory=dict)  # (tier, confidence, count)

    def item(self, tier: str, confidence: float, reinforcement_count: int) -> TemplateItem:
        """What a template sees of the fact with these fields (made once per combination)."""
        key = (tier, confidence, reinforcement_count)
        found = self.items.get(key)
        if found is None:
            found = self.items[key] = TemplateItem(self.line, tier, round(confidence, 3), reinforcement_count)
        return found


class PreparedFacts:
    """One render's view: entries from the profile's previous render are reused, and only those this render
    asks for are carried on to the next."""

    def __init__(self, previous: dict[str, Prepared] | None = None,
                 previous_fits: dict[Hashable, Any] | None = None,
                 previous_counts: dict[tuple[str, str], int] | None = None) -> None:
        self._previous = previous or {}
        self.used: dict[str, Prepared] = {}
        self._previous_fits = previous_fits or {}
        self.fits: dict[Hashable, Any] = {}
        self._previous_counts = previous_counts or {}
        self.counted: dict[tuple[str, str], int] = {}

    def reused(self, key: Hashable) -> Any:
        """What the profile's previous render (or this one) recorded for ``key`` (a fit, a full render); None."""
        found = self.fits.get(key)
        if found is None:
            found = self._previous_fits.get(key)
            if found is not None:
                self.fits[key] = found
        return found

    def record(self, key: Hashable, value: Any) -> None:
        self.fits[key] = value

    def get(self, text: str) -> Prepared:
        found = self.used.get(text)
        if found is None:
            found = self._previous.get(text)
            if found is None:
                found = Prepared(fact_form(text), inline(text))
            self.used[text] = found
        return found

    def tokens(self, texts: Sequence[str], counter: TokenCounter,
               missing: Callable[[Sequence[str]], list[int]] | None = None) -> list[int]:
        """Exact counts of ``texts`` under ``counter``; only texts this memo never saw reach ``missing`` (default:
        the counter; the stage context's looks in the store first)."""
        prepared = [self.get(text) for text in texts]
        todo = [index for index, entry in enumerate(prepared) if counter.name not in entry.tokens]
        if todo:
            counted = (missing or counter.count_many)([texts[i] for i in todo])
            for index, count in zip(todo, counted, strict=True):
                prepared[index].tokens[counter.name] = count
        return [entry.tokens[counter.name] for entry in prepared]


    def counts(self, texts: Sequence[str], counter: TokenCounter) -> list[int]:
        """Exact counts of whole texts (a render, its sections) under ``counter``: a text this profile's previous
        render counted is not counted again. Only a plain counter's counts are kept (its name is all that
        decides them); a wrapping counter (line ends, host limits) counts each time."""
        if not isinstance(counter, ExactCounter | HeuristicCounter):
            return counter.count_many(texts)
        keys = [(counter.name, text) for text in texts]
        known = {key: count for key in keys
                 if (count := self.counted.get(key, self._previous_counts.get(key))) is not None}
        missing = [key for key in dict.fromkeys(keys) if key not in known]
        known.update(zip(missing, counter.count_many([text for _, text in missing]), strict=True))
        self.counted.update(known)
        return [known[key] for key in keys]

    def known(self, name: str, texts: Sequence[str]) -> dict[str, int]:
        """The counts under the counter ``name`` of those of ``texts`` this render or the profile's previous one
        counted (or noted), counting none."""
        found = {text: count for text in texts
                 if (count := self.counted.get((name, text), self._previous_counts.get((name, text)))) is not None}
        self.counted.update(((name, text), count) for text, count in found.items())
        return found

    def note(self, name: str, counts: dict[str, int]) -> None:
        """Exact counts under the counter ``name`` made elsewhere (the store's kept counts of a render's parts)."""
        self.counted.update(((name, text), count) for text, count in counts.items())


# Per profile: (its newest render's prepared facts by text, its fits, its token counts).
_KEPT = caches.cache("prepared.renders", owner="profile", key="a profile (the database's label, the profile)",
                     bound=MAX_PROFILES, holds_text=True)


def for_render(scope: Scope) -> PreparedFacts:
    """A render's prepared facts, starting from what the profile's previous render in this process used."""
    used, fits, counts = _KEPT.get(scope) or (None, None, None)
    return PreparedFacts(used, fits, counts)


def keep(scope: Scope, prepared: PreparedFacts) -> None:
    """Keep what this render used (and only that) for the profile's next render."""
    if len(prepared.used) <= MAX_FACTS:
        _KEPT.put(scope, (prepared.used, prepared.fits, prepared.counted))
    else:
        _KEPT.pop(scope)


def drop(scope: Scope | None = None) -> None:
    """Drop what is kept for one profile (a fact forgotten, a profile erased), or for every profile."""
    if scope is None:
        _KEPT.clear()
    else:
        _KEPT.pop(scope)
