"""A fact's content stems: the words that say what it is about, each reduced by the Snowball stemmer of its
language (PyStemmer), so "lives" / "live", "wohnt" / "wohnen", "réponses" / "réponse" meet.

Read on the write path only (the proposal check and the stem index, :mod:`.stem_index`): PyStemmer loads with the
first write, never with a reader such as ``persona inject``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

from .. import caches
from . import phrase_patterns
from .supersede_words import ADDITIVE_SIGNALS, CHANGE_SIGNALS, STOPWORDS, STRONG_SIGNALS, word_set

if TYPE_CHECKING:
    from Stemmer import Stemmer

# Words (and letters) that tell the six languages apart; a text is read in the language with most of them.
MARKERS = {
    "english": word_set("the a an is are of and with my i it's i've i'm been now just uses prefers"),
    "german": word_set("der die das ist und mit für bei nach im ein eine nicht auch ich bin hat jetzt"),
    "french": word_set("le les est et avec pour chez au du des une je ne pas plus j ai suis"),
    "spanish": word_set("el los las es y con para del al una yo ya me mi ahora las"),
    "italian": word_set("il lo gli è con per della una io non mi sono alle ora"),
    "portuguese": word_set("o os é com do da no na um uma eu não agora em"),
}
LETTERS = {"german": "äöüß", "french": "êëîôûœç", "spanish": "ñ¿¡", "italian": "ìò", "portuguese": "ãõ"}
LETTER_SETS = {lang: frozenset(letters) for lang, letters in LETTERS.items()}
WORD = re.compile(r"[\w@+#.'’-]+")
# The light verbs nearly every fact starts with: they say nothing about which fact it is.
LIGHT = word_set("use prefer like want need have get go do make usa usar utilis nutz bevorzug préfèr prefier")


def language(text: str) -> str:
    """The Snowball language ``text`` reads as (English when nothing tells)."""
    return _evidence(text)[0]


def pair_language(old: str, new: str) -> str:
    """The language two facts of a pair are read in: the one with more evidence of its own (each read once)."""
    mine, theirs = _evidence(old), _evidence(new)
    return max(theirs, mine, key=lambda found: found[1])[0]


@caches.memo("stems.evidence", owner="process", key="a fact's text", bound=4096, holds_text=True)
def _evidence(text: str) -> tuple[str, int]:
    """(the language with most marker words and letters in ``text``, how many): English and 0 when none."""
    folded = text.casefold()
    words, letters = set(_tokens(folded)), set(folded)
    scores = {lang: len(words & markers) + 2 * len(letters & LETTER_SETS.get(lang, frozenset()))
              for lang, markers in MARKERS.items()}
    best = max(scores.values())
    return next(lang for lang, score in scores.items() if score == best), best


def content_stems(text: str, lang: str | None = None) -> frozenset[str]:
    """The stems of the words that carry the fact's meaning: no filler, no change or addition signal."""
    return frozenset(ordered_stems(text, lang))


@caches.memo("stems.ordered_stems", owner="process", key="a fact's text and its language", bound=4096, holds_text=True)
def ordered_stems(text: str, lang: str | None = None) -> tuple[str, ...]:
    """:func:`content_stems` in the order the text says them."""
    folded = _folded(text)
    plain = phrase_patterns.for_text(_signal_list(), folded).sub(" ", folded)
    words = [word for word in _tokens(plain) if word not in STOPWORDS and (len(word) > 1 or word.isdigit())]
    return tuple(_stemmer(lang or language(text)).stemWords(words))


def stem_words(words: tuple[str, ...], lang: str) -> tuple[str, ...]:
    """``words`` (folded) by the Snowball stemmer of ``lang``."""
    return tuple(_stemmer(lang).stemWords(list(words)))


def meaningful(stems: frozenset[str]) -> frozenset[str]:
    """The stems that name something: light verbs ("uses", "prefers") aside."""
    return frozenset(stem for stem in stems if not light(stem))


def light(stem: str) -> bool:
    return stem in LIGHT or any(stem.startswith(verb) for verb in LIGHT if len(verb) > 3)


def head(text: str, lang: str | None = None) -> str:
    """The first stem that names something: the predicate ("live" in "Lives in Berlin"), or "" for none."""
    return next((stem for stem in ordered_stems(text, lang) if not light(stem)), "")


def _folded(text: str) -> str:
    """Case-folded, compatibility-normalised, French elision undone ("j'ai" is "j ai")."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"(?<!\w)([nljdmsct]|qu)['’]", r"\1 ", folded)


def _tokens(text: str) -> list[str]:
    return [word for word in (token.strip(".:-,;!?'’") for token in WORD.findall(text)) if word]


@caches.memo("stems.signal_pattern", owner="process", key="none: the signal phrases, indexed once", bound=1)
def _signal_list() -> phrase_patterns.Alternation:
    phrases = sorted({*CHANGE_SIGNALS, *STRONG_SIGNALS, *ADDITIVE_SIGNALS}, key=len, reverse=True)
    return phrase_patterns.phrases_of(tuple((re.escape(p).replace(r"\ ", r"\s+"), p) for p in phrases))


@caches.memo("stems.stemmer", owner="process", key="a language", bound=32)
def _stemmer(lang: str) -> Stemmer:
    import Stemmer  # the write path's own dependency: loaded with the first stem, not with the store

    return Stemmer.Stemmer(lang)
