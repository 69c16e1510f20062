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
from difflib import SequenceMatcher
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
    "nach aus als es sein seine ihr ihre nicht kein mehr",
    "le la les un une du de et ou pour avec en au aux dans sur par est sont son sa ses à chez ne plus",
    "el los las una unos unas y o para con del al por es son su sus que lo no",
)).split())
# Subjects worded too differently for the frame test, one pattern per kind: both texts must name the same one.
SUBJECTS = {
    "residence": r"\b(lives? in|living in|moved to|based in|wohnt|umgezogen|lebt in|habite|vit à|vit a|"
                 r"déménagé|vive en|se mudó|reside)\b",
    "employer": r"\b(works? (at|for)|employed (at|by)|joined|arbeitet (bei|für)|gewechselt zu|travaille (chez|pour)|"
                r"trabaja (en|para))\b",
}
# Signals that replace the old fact's verb ("Uses pip" -> "Switched to uv").
VERB_SIGNALS = ("switched to", "moved to", "changed to", "umgestiegen", "gewechselt", "passé à", "est passé",
                "cambió a", "se cambió")
INSTEAD_OF = ("instead of", "rather than", "statt", "anstatt", "au lieu de", "en lugar de", "en vez de")
# One slot's value: one old word, replaced by at most two ("Travis" -> "GitHub Actions"). Two old words
# replaced means two slots changed ("uv ... packaging" -> "ruff ... linting"): another subject.
MAX_DIFFERENT = 2
MIN_SHARED = 1
MIN_SHARED_SHARE = 0.5  # of the old fact's content words


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
    shared = len(set(old_words) & set(new_words))
    if _same_subject(old_folded, new_folded):
        return Verdict(True, shared + 1)
    return _one_slot_changed(old_words, new_words, new_folded, shared)


def _one_slot_changed(old_words: list[str], new_words: list[str], new_folded: str, shared: int) -> Verdict:
    """The frame test: the texts differ in one run of at most two words, the value of one slot."""
    matcher = SequenceMatcher(None, old_words, new_words, autojunk=False)
    blocks = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not blocks:
        return Verdict(_negates(new_folded), shared)  # "no longer X" ends X; X said again changes nothing
    if len(blocks) > 1 or shared < MIN_SHARED or shared < MIN_SHARED_SHARE * len(set(old_words)):
        return Verdict(False)  # two places changed: two subjects ("uv ... packaging" / "ruff ... linting")
    kind, old_start, old_end, new_start, new_end = blocks[0]
    gone, came = old_words[old_start:old_end], new_words[new_start:new_end]
    if kind == "insert":  # only "instead of <old value>" may name the old value beside the new one
        return Verdict(_has(new_folded, INSTEAD_OF) and len(came) <= MAX_DIFFERENT, shared)
    # "switched to" stands in for the old fact's verb; without one, a changed verb is another subject
    # ("Wohnt in Köln" / "Lernt jetzt Italienisch in Köln").
    verb = _has(new_folded, VERB_SIGNALS)
    fits = (kind == "replace" and 1 <= len(came) <= MAX_DIFFERENT and len(gone) <= 1 + verb
            and (old_start > 0 or verb) and not _refines(gone, came))
    return Verdict(fits, shared if fits else 0)


def _refines(gone: list[str], came: list[str]) -> bool:
    """"pytest" -> "pytest-xdist": the new fact adds detail to the old value, it replaces nothing."""
    return any(new.startswith((old + "-", old + ".", old + "_")) for old in gone for new in came)


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


def _content_words(text: str) -> list[str]:
    """The words that carry meaning, in order: signals and filler taken out, a plural -s folded."""
    stripped = _exact(CHANGE_SIGNALS).sub(" ", text)
    words = [word.strip(".-") for word in re.findall(r"[\w+#.-]+", stripped)]
    return [_stem(word) for word in words if word and word not in STOPWORDS]


@cache
def _exact(phrases: tuple[str, ...]) -> re.Pattern[str]:
    # Signals only, never the words a gapped match ("ne utilise plus") spans; the rest is in STOPWORDS.
    spelled = sorted((re.escape(p).replace(r"\ ", r"\s+") for p in phrases), key=len, reverse=True)
    return re.compile(r"(?<!\w)(?:" + "|".join(spelled) + r")(?!\w)")


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _negates(text: str) -> bool:
    return _has(text, ("no longer", "not anymore", "anymore", "nicht mehr", "ne plus", "ya no"))


def _same_subject(old: str, new: str) -> bool:
    return any(re.search(pattern, old) and re.search(pattern, new) for pattern in SUBJECTS.values())
