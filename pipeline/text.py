"""Facts about text that every layer shares."""

import re
import unicodedata
from collections.abc import Iterable, Mapping

# What str.splitlines ends a line at: a setting that must stay on one line may contain none of these.
LINE_ENDS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# Every dash and hyphen a paste may carry, after NFKC (which already maps U+2011 to U+2010 and U+FF0D to "-").
DASHES = str.maketrans(dict.fromkeys(
    "\u058a\u05be\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d", "-"))
# A sentence's final marks (and the spaces between them): "Uses uv." and "Uses uv" state one fact.
FINAL_MARKS = ".!?;:,\u2026\u3002\uff01\uff1f\uff1b\uff1a\uff0c\u3001 "


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 fact``, ``2 facts``: a count with its noun in the right number."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def normal_form(text: str) -> str:
    """The one form two texts are compared in: the same fact in other case, spacing, Unicode form (NFD from a
    macOS paste, full-width digits), invisible format characters, dashes or final punctuation is the same text.

    Compared, never shown: what is stored and rendered stays as the user wrote it.
    """
    if isinstance(text, str) and text.isascii():  # as below: NFKC, format characters and dashes touch no ASCII
        return " ".join(text.lower().split()).rstrip(FINAL_MARKS)
    visible = unicodedata.normalize("NFKC", str(text))
    if not visible.isprintable():  # what may hold a format character (a printable text holds none)
        visible = "".join(char for char in visible if unicodedata.category(char) != "Cf")
    # Casefolding can leave a text that is no longer NFKC ("ǰ" -> "ǰ"), hence the second pass.
    folded = unicodedata.normalize("NFKC", visible.casefold()).translate(DASHES)
    return " ".join(folded.split()).rstrip(FINAL_MARKS)


# A word of the fact form: letters and digits, joined by underscores (snake_case) or, between digits, by ".", ","
# or ":" (3.11, 1,000, 10:30), and ending in "+" or "#" when it does (C++, C#; a+b and #tag are words apart).
_WORD_PATTERN = r"[^\W_]+(?:(?:_+|(?<=\d)[.,:](?=\d))[^\W_]+)*(?:[+#]+(?![^\W_]|[+#]))?"
_WORD, _ASCII_WORD = re.compile(_WORD_PATTERN), re.compile(_WORD_PATTERN, re.ASCII)  # one rule: ASCII's is faster
# What else a non-ASCII text may hold; a mark on a letter (Mn, Mc: Devanagari's vowel signs) belongs to its word.
_NOT_WORD = re.compile(r"[^\w\s\x00-\x7f]")
_VARIATION_SELECTORS = frozenset(range(0xFE00, 0xFE10)) | frozenset(range(0xE0100, 0xE01F0))  # an emoji's marks
_NUMBERED = re.compile(r"(?:[\W_]*?\d{1,3}[.)] )+")  # a numbered list's markers ("1. ", "- 2) ") before the text


def fact_form(text: str) -> str:
    """The one sense in which two texts state the same fact: a render shows one of them (its dedupe), and a
    forgotten one refuses the other. The :func:`normal_form`, dressed in nothing: quotes, emphasis (``**``, ``_``),
    brackets, a list's bullet or number, emoji and the punctuation between words all read as a space, so
    ``"**Uses uv**"``, ``- (uses uv) 🚀`` and ``Uses uv.`` are one fact. The marks that make a word stay
    (``C++`` is not ``C``, ``3.11`` not ``311``), and so do the words: other words are another fact.

    Compared, never shown.
    """
    return undressed(normal_form(text))


def undressed(normal: str) -> str:
    """:func:`fact_form` of a text already in its :func:`normal_form`."""
    numbered = _NUMBERED.match(normal)
    if numbered is not None:
        normal = normal[numbered.end():]
    if normal.isascii():
        return " ".join(_ASCII_WORD.findall(normal))
    # The words are found in a shape of the text, as long as it, where a mark on a letter reads as a letter.
    shape = _NOT_WORD.sub(_mark_as_letter, normal)
    if shape == normal:
        return " ".join(_WORD.findall(normal))
    return " ".join([normal[found.start():found.end()] for found in _WORD.finditer(shape)])


def _mark_as_letter(found: re.Match[str]) -> str:
    char = found.group()
    marked = unicodedata.category(char) in ("Mn", "Mc") and ord(char) not in _VARIATION_SELECTORS
    return "a" if marked else char


# One spelling per topic: topics compare in their normal form (`Git` and `git` are one topic) and show in the
# spelling first used, or the one `topics.aliases` gives. Renders group by it; `persona topics` lists it.

def topic_of(topic: str, aliases: Mapping[str, str]) -> str:
    """The normal form a topic is grouped by: its alias's, when ``topics.aliases`` names it."""
    folded = normal_form(topic)
    return normal_form(aliases.get(folded, topic))


def folded_aliases(aliases: Mapping[str, str]) -> dict[str, str]:
    """``topics.aliases`` keyed by the normal form of each name, so an alias matches in any spelling."""
    return {normal_form(name): shown for name, shown in aliases.items()}


def spellings(first_used: Iterable[tuple[str, object]], aliases: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each raw topic's shown spelling, from (topic, when first used) pairs: anything that orders (an id, a key).

    The earliest spelling of each normal form wins, unless ``topics.aliases`` names the group's spelling.
    """
    folded = folded_aliases(aliases or {})
    named = {normal_form(shown): shown for shown in folded.values()}
    earliest: dict[str, tuple[object, str]] = {}
    raw = list(first_used)
    for topic, when in raw:
        group = topic_of(topic, folded)
        if group not in earliest or when < earliest[group][0]:  # type: ignore[operator]
            earliest[group] = (when, topic)
    shown = {group: named.get(group, topic) for group, (_, topic) in earliest.items()}
    return {topic: shown[topic_of(topic, folded)] for topic, _ in raw}


def same_topic(one: str, other: str) -> bool:
    """Whether two spellings name one topic (aliases aside)."""
    return normal_form(one) == normal_form(other)
