"""The one cap: fit text to a token budget at section boundaries.

The renderer applies it to a fresh render and the injector to whatever is on
disk (possibly hand-edited), so it works on text alone: a section starts at
a line beginning with the boundary string, and everything before the first
such line is the preamble.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from .. import caches
from ..text import LINE_ENDS
from .tokens import TokenCounter

# Per-section estimates only decide which sections are worth an exact count;
# joins can merge a few tokens across a boundary, so allow for that.
JOIN_SLACK = 16
LIKELY_CHARS_PER_TOKEN = 6


@dataclass(frozen=True, slots=True)
class Capped:
    """The capped text and what the cap did."""

    text: str
    tokens: int
    budget: int
    sections_total: int
    sections_kept: int
    partial: bool = False
    kept_indexes: tuple[int, ...] | None = None  # which sections survived; None means all of them
    exact: bool = True  # tokens is the exact count; False: an upper bound (it fit by its bound, uncounted)

    @property
    def sections_dropped(self) -> int:
        return self.sections_total - self.sections_kept


@dataclass(frozen=True, slots=True)
class Split:
    preamble: str
    sections: tuple[str, ...]


def split_sections(text: str, boundary: str) -> Split:
    """Cut text into a preamble and sections, each starting at a boundary line. Lossless.

    Lines end where ``str.splitlines`` ends them (the boundary itself holds no
    line end; settings refuse one). Sections are slices found with ``str.find``
    rather than by splitting and re-joining every line.
    """
    starts = []
    at = text.find(boundary) if boundary else -1
    while at != -1:
        if at == 0 or text[at - 1] in LINE_ENDS:
            starts.append(at)
        at = text.find(boundary, at + 1)
    if not starts:
        return Split(text, ())
    bounds = [*starts, len(text)]
    return Split(text[: starts[0]], tuple(text[a:b] for a, b in itertools.pairwise(bounds)))


Note = str | Callable[[], str]  # a callable is asked only when something is actually cut


def cap_text(text: str, *, budget: int, counter: TokenCounter, boundary: str, note: Note,
             tokens: int | None = None, exact: bool = True) -> Capped:
    """Fit ``text`` into ``budget`` tokens without cutting a section or a line.

    Whole sections are kept in order; one that does not fit is skipped and
    smaller ones after it still get their chance. When anything is dropped the
    note is appended, inside the budget. If no section fits, the first
    section's leading whole lines that fit are kept, so the persona is never
    empty merely because one section is large. ``tokens`` is the exact count of ``text`` under
    ``counter`` if the caller already made it (with ``exact`` False, an upper bound of it).

    A text whose upper bound (:meth:`TokenCounter.bound`) is within the budget is kept whole uncounted: only a
    count that decides a cut is made exactly, so a render far inside its budget loads no tokenizer.
    """
    if budget <= 0 or not text:
        return Capped("", 0, budget, _count_sections(text, boundary), 0, kept_indexes=())
    if tokens is None:
        bound = counter.bound(text)
        if bound <= budget:
            total = _count_sections(text, boundary)
            return Capped(text, bound, budget, total, total, exact=False)
    elif tokens <= budget:
        total = _count_sections(text, boundary)
        return Capped(text, tokens, budget, total, total, exact=exact)
    elif not exact:
        tokens = None  # a bound past the budget decides nothing
    short = len(text) <= budget * LIKELY_CHARS_PER_TOKEN
    if tokens is None and short:  # the common case, a file that fits: one count, no split
        tokens = counter.count(text)
    if tokens is not None and tokens <= budget:
        total = _count_sections(text, boundary)
        return Capped(text, tokens, budget, total, total)
    split = split_sections(text, boundary)
    resolved = note() if callable(note) else note
    if short:
        return _fit(split, budget, counter, resolved, counter.count_many(split.sections))
    # Long text: per-section counts first, and the whole is counted only if their sum says it might fit.
    estimates = counter.count_many([split.preamble, *split.sections])
    if sum(estimates) <= budget + JOIN_SLACK:
        tokens = counter.count(text)
        if tokens <= budget:
            return Capped(text, tokens, budget, len(split.sections), len(split.sections))
    return _fit(split, budget, counter, resolved, estimates[1:])


@caches.memo("section_cap.count_sections", owner="profile", key="a capped text and its section boundary",
             bound=16, holds_text=True)
def _count_sections(text: str, boundary: str) -> int:
    """The sections of ``text`` (a pure function of it: a kept render's text, the same string each time, is
    looked up by its cached hash and its identity)."""
    return sum(1 for line in text.splitlines() if line.startswith(boundary)) if boundary else 0


def with_note(body: str, note: str) -> str:
    """``body`` with the truncation note on a line of its own, after a blank line if the format uses them.

    Markdown and plain text separate sections by blank lines; JSON Lines and
    XML do not, and a blank line would break a strict JSON Lines reader.
    """
    if not note:
        return body
    if not body:
        return note + "\n"
    end = body if body.endswith("\n") else body + "\n"
    if "\n\n" in body.strip("\n") and not end.endswith("\n\n"):
        end += "\n"
    return f"{end}{note}\n"


def _fit(split: Split, budget: int, counter: TokenCounter, note: str, estimates: list[int]) -> Capped:
    total = len(split.sections)
    preamble = split.preamble
    if counter.count(with_note(preamble, note)) > budget:
        preamble = ""
    base = counter.count(with_note(preamble, note))
    kept = _choose(split, preamble, estimates, base, budget, counter, note, optimistic=True)
    text = with_note(_assemble(preamble, split.sections, kept), note) if kept else ""
    tokens = counter.count(text) if kept else 0
    if tokens > budget:  # the optimistic sums were off at some join: redo with exact counts throughout
        kept = _choose(split, preamble, estimates, base, budget, counter, note, optimistic=False)
        text = with_note(_assemble(preamble, split.sections, kept), note) if kept else ""
        tokens = counter.count(text) if kept else 0
    if kept:
        return Capped(text, tokens, budget, total, len(kept), kept_indexes=tuple(kept))
    return _partial_first(preamble, split, budget, counter, note)


def _choose(split: Split, preamble: str, estimates: list[int], base: int, budget: int, counter: TokenCounter,
            note: str, *, optimistic: bool) -> list[int]:
    """Sections to keep, greedily in order.

    Counts of whole sections nearly add up (sections meet at line breaks), so
    a section far inside the budget is taken on its estimate; only one near
    the edge is counted exactly together with what is already kept.
    """
    kept: list[int] = []
    used = base
    for index, estimate in enumerate(estimates):
        if used + estimate > budget + JOIN_SLACK:
            continue
        if optimistic and used + estimate <= budget - JOIN_SLACK:
            kept.append(index)
            used += estimate
            continue
        exact = counter.count(with_note(_assemble(preamble, split.sections, [*kept, index]), note))
        if exact <= budget:
            kept.append(index)
            used = exact
    return kept


def _assemble(preamble: str, sections: tuple[str, ...], indexes: list[int]) -> str:
    return preamble + "".join(sections[i] for i in indexes)


def _partial_first(preamble: str, split: Split, budget: int, counter: TokenCounter, note: str) -> Capped:
    """The first section's heading and leading whole lines, as many as fit.

    With no sections at all (a hand-written file without headings), the
    preamble's own leading lines are used instead.
    """
    total = len(split.sections)
    if split.sections:
        prefix, lines = preamble, split.sections[0].splitlines(keepends=True)
    else:
        prefix, lines = "", split.preamble.splitlines(keepends=True)
    best = ""
    # Binary search on the number of leading lines: token counts grow with it.
    low, high = 1, len(lines)
    while low <= high:
        middle = (low + high) // 2
        candidate = with_note(prefix + "".join(lines[:middle]), note)
        if counter.count(candidate) <= budget:
            best, low = candidate, middle + 1
        else:
            high = middle - 1
    if best:
        return Capped(best, counter.count(best), budget, total, 0, partial=True, kept_indexes=(0,))
    return Capped("", 0, budget, total, 0, kept_indexes=())
