"""Supersession detection without a model: does a new fact say an older one of the same topic changed?

Precision comes first: a true fact must never vanish because it shares words with another. A pair is
judged a supersession only when all of these hold:

1. the new text carries a change signal ("now", "no longer", "switched to", "correction:", and the
   German, French and Spanish equivalents) and no additive one ("also", "auch", "aussi", "también");
2. with the signals and filler words taken out, the two texts describe the same frame and differ in one
   slot: at most two words on each side differ, at least two are shared, and the shared words are most
   of the old fact's; or both name the same kind of subject (where the user lives, who they work for),
   which is worded too differently for the frame test ("Lives in Hamburg" / "Moved to Berlin").

"Uses uv for Python packaging" and "Now uses ruff for Python linting" share "uses" and "python" only:
two differing words on each side, half the old fact's words: not a supersession. The figures on the
corpus in ``tests/data/supersede_pairs.yaml`` are printed by ``make bench``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

# Phrases that say "this replaces what was true before". Matched as whole words, case-folded.
CHANGE_SIGNALS = (
    # English
    "now", "no longer", "not anymore", "anymore", "any more", "instead", "instead of", "switched to", "switched",
    "moved to", "moved", "changed to", "correction", "update", "actually", "from now on", "these days", "nowadays",
    # German
    "jetzt", "nun", "nicht mehr", "kein mehr", "stattdessen", "statt", "gewechselt", "umgestiegen", "umgezogen",
    "korrektur", "inzwischen", "mittlerweile", "ab sofort", "eigentlich", "neuerdings",
    # French
    "maintenant", "désormais", "dorénavant", "ne plus", "au lieu de", "passé à", "est passé", "déménagé",
    "a déménagé", "mise à jour", "en fait", "finalement",
    # Spanish
    "ahora", "ya no", "en lugar de", "en vez de", "cambió a", "se cambió", "se mudó", "corrección",
    "actualización", "en realidad", "de hecho", "a partir de ahora",
)
# "Also" makes the new fact an addition to the old one, never its replacement.
ADDITIVE_SIGNALS = ("also", "too", "as well", "in addition", "auch", "zusätzlich", "ebenfalls", "aussi",
                    "également", "en plus", "también", "además")
STOPWORDS = frozenset(" ".join((
    "a an the for of in on at to and or with by is are be it its as from that this their his her my our your",
    "der die das den dem des ein eine einen einem einer und oder mit für von zu zum zur im am auf bei ist sind",
    "nach aus als es sein seine ihr ihre",
    "le la les un une du de et ou pour avec en au aux dans sur par est sont son sa ses à chez",
    "el los las una unos unas y o para con del al por es son su sus que lo",
)).split())
# Subjects worded too differently for the frame test, one pattern per kind: both texts must name the same one.
SUBJECTS = {
    "residence": r"\b(lives? in|living in|moved to|based in|wohnt|umgezogen|lebt in|habite|vit à|vit a|"
                 r"déménagé|vive en|se mudó|reside)\b",
    "employer": r"\b(works? (at|for)|employed (at|by)|joined|arbeitet (bei|für)|gewechselt zu|travaille (chez|pour)|"
                r"trabaja (en|para))\b",
}
MAX_DIFFERENT = 2  # words on each side outside the shared frame
MIN_SHARED = 2
MIN_SHARED_SHARE = 0.6  # of the old fact's content words


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether ``new`` supersedes ``old``, and how strongly (the shared words; more is a closer match)."""

    supersedes: bool
    strength: int = 0


def judge(old: str, new: str) -> Verdict:
    """Whether the new fact's text says the old one is no longer true (see the module's rules)."""
    new_folded, old_folded = _folded(new), _folded(old)
    if not _has(new_folded, CHANGE_SIGNALS) or _has(new_folded, ADDITIVE_SIGNALS):
        return Verdict(False)
    old_words, new_words = _content_words(old_folded), _content_words(new_folded)
    shared = old_words & new_words
    if _same_subject(old_folded, new_folded):
        return Verdict(True, len(shared) + 1)
    only_old, only_new = old_words - shared, new_words - shared
    if not only_old and not only_new and not _negates(new_folded):
        return Verdict(False)  # the same fact said again, not a change of it
    fits = (len(only_old) <= MAX_DIFFERENT and len(only_new) <= MAX_DIFFERENT and len(shared) >= MIN_SHARED
            and len(shared) >= MIN_SHARED_SHARE * len(old_words))
    return Verdict(fits, len(shared) if fits else 0)


def _folded(text: str) -> str:
    # French elides "ne" before a vowel: "n'utilise plus" is "ne utilise plus" to the signal patterns.
    return re.sub(r"(?<!\w)n['’]", "ne ", text.casefold())


def _has(text: str, phrases: tuple[str, ...]) -> bool:
    return _phrases(phrases).search(text) is not None


@cache
def _phrases(phrases: tuple[str, ...]) -> re.Pattern[str]:
    # Longest first, so "no longer" is taken before "now" could be; \w boundaries work for every script.
    spelled = sorted((re.escape(p).replace(r"\ ", r"\s+(?:\w+\s+)?") for p in phrases), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)")


def _content_words(text: str) -> set[str]:
    """The words that carry meaning: signals and filler taken out, a plural -s folded."""
    stripped = _phrases(CHANGE_SIGNALS).sub(" ", text)
    words = {_stem(word) for word in re.findall(r"[\w+#.-]+", stripped)}
    return {word for word in words if word and word not in STOPWORDS and not word.strip(".-").isspace()}


def _stem(word: str) -> str:
    word = word.strip(".-")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _negates(text: str) -> bool:
    return _has(text, ("no longer", "not anymore", "anymore", "nicht mehr", "ne plus", "ya no"))


def _same_subject(old: str, new: str) -> bool:
    return any(re.search(pattern, old) and re.search(pattern, new) for pattern in SUBJECTS.values())
