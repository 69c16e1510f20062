"""Near-duplicates: two facts that say the same thing, one perhaps with more ("Is a vegetarian." / "Is a vegetarian
and allergic to nuts"). A write proposes to merge them, keeping the fuller one (accepting is a supersession of the
shorter by the fuller, with lineage and undo); the writer decides, as for an update.

Two facts are near-duplicates when every content stem (:mod:`.stems`) of one is in the other's, or is alike one of
them past :data:`SIMILAR` (rapidfuzz: "tradeoff" / "trade-off", a typo), and the newer names no change; that neither
negates what the other says is the caller's test (:mod:`.supersede_rules`).
"""

from __future__ import annotations

from typing import Any

from .. import caches
from . import phrase_patterns
from .stems import content_stems, pair_language
from .supersede_words import STRONG_SIGNALS

SIMILAR = 88  # rapidfuzz's ratio of two stems, 0-100: past this, one word in two spellings ("npm" / "pnpm": 86)


def near_duplicate(one: str, other: str) -> bool:
    """Whether the two (case-folded) texts say the same thing, one perhaps with more detail."""
    lang = pair_language(one, other)
    mine, theirs = content_stems(one, lang), content_stems(other, lang)
    if not mine or not theirs or _strong(other):
        return False  # "moved to 10am": a change, however many words it keeps
    shorter, fuller = sorted((mine, theirs), key=len)
    return all(stem in fuller or _similar(stem, fuller) for stem in shorter)


def fuller(one: str, other: str) -> bool:
    """Whether ``one`` says more than ``other``: more content stems, then more characters."""
    lang = pair_language(one, other)
    return (len(content_stems(one, lang)), len(one)) > (len(content_stems(other, lang)), len(other))


def _similar(stem: str, others: frozenset[str]) -> bool:
    extract_one, ratio = _rapidfuzz()
    return extract_one(stem, others, scorer=ratio, score_cutoff=SIMILAR) is not None


@caches.memo("near_duplicates.rapidfuzz", owner="process", key="none: rapidfuzz's functions, imported once", bound=1)
def _rapidfuzz() -> tuple[Any, Any]:
    from rapidfuzz import fuzz, process  # the write path's own dependency: loaded with the first judged pair

    return process.extractOne, fuzz.ratio


@caches.memo("near_duplicates.strong", owner="process", key="a fact's text", bound=1024, holds_text=True)
def _strong(text: str) -> bool:  # once per text: a write's is asked for each fact it is judged against
    return phrase_patterns.for_text(phrase_patterns.listed(STRONG_SIGNALS), text).search(text) is not None

